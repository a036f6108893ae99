"""The turn's engine and the HTTP API reach the database only through store/: neither imports
SQLAlchemy (issue 27: ``store/`` is where a reader finds how a turn and what the API reads are stored).
The modules whose SQL moved to store/ repositories (API keys, resumes, the token budget, the
assistants' settings, ingestion) run none of their own: they may name SQLAlchemy's types for
annotations (under ``TYPE_CHECKING``), never import it at run time."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import careerwise

PACKAGE = Path(careerwise.__file__).resolve().parent
LAYERED = sorted([PACKAGE / "engine.py", *(PACKAGE / "api").glob("*.py")])
THROUGH_STORE = [
    PACKAGE / "channels" / "apikeys.py",
    PACKAGE / "resume" / "store.py",
    PACKAGE / "budget.py",
    PACKAGE / "assistant_settings.py",
    PACKAGE / "knowledge" / "ingest.py",
]


def sqlalchemy_imports(source: str, *, at_run_time: bool = False) -> list[str]:
    """The modules of every ``import`` / ``from ... import`` of SQLAlchemy in ``source``, anywhere in it
    (inside functions and ``TYPE_CHECKING`` blocks too; ``at_run_time``: outside those blocks only)."""
    found = []
    tree = ast.parse(source)
    if at_run_time:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and ast.unparse(node.test) in (
                "TYPE_CHECKING",
                "typing.TYPE_CHECKING",
            ):
                node.body = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] == "sqlalchemy"]
        elif (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and (node.module or "").split(".")[0] == "sqlalchemy"
        ):
            found.append(str(node.module))
    return found


def test_the_check_sees_every_form_of_import() -> None:
    source = "import sqlalchemy\nfrom sqlalchemy.exc import IntegrityError\ndef f():\n    import sqlalchemy.orm as o\n"
    assert sqlalchemy_imports(source) == ["sqlalchemy", "sqlalchemy.exc", "sqlalchemy.orm"]
    assert sqlalchemy_imports("from careerwise.store import Trace\nimport sqlalchemy_utils\n") == []


@pytest.mark.parametrize("path", LAYERED, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_engine_and_api_import_no_sqlalchemy(path: Path) -> None:
    assert sqlalchemy_imports(path.read_text(encoding="utf-8")) == [], f"{path.name}: move the SQL to store/"


def test_the_api_modules_are_found() -> None:
    assert len(LAYERED) > 10 and PACKAGE / "api" / "admin_turns.py" in LAYERED


def test_the_run_time_check_skips_annotations_only() -> None:
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from sqlalchemy import Connection\n"
    assert sqlalchemy_imports(source, at_run_time=True) == []
    assert sqlalchemy_imports(source + "from sqlalchemy import select\n", at_run_time=True) == ["sqlalchemy"]


@pytest.mark.parametrize("path", THROUGH_STORE, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_moved_modules_run_no_sql_of_their_own(path: Path) -> None:
    found = sqlalchemy_imports(path.read_text(encoding="utf-8"), at_run_time=True)
    assert found == [], f"{path.name}: use its repository in store/"
