"""Settings is the only reader of the ``CAREERWISE_*`` variables, and the other modules that touch
``os.environ`` are the ones config/settings.py lists: its docstring stays true."""

from __future__ import annotations

import ast
from pathlib import Path

from careerwise.config import settings

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "careerwise"
LISTED = {"cli/__init__.py", "cli/root.py", "llm/local/weights.py", "tracing/metrics.py"}


def _is_environ(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "environ"


def _uses(tree: ast.AST) -> list[ast.AST]:
    """``os.environ`` (read or written), ``os.getenv`` and ``from os import environ, getenv``."""
    found: list[ast.AST] = []
    for node in ast.walk(tree):
        if _is_environ(node) or (isinstance(node, ast.Attribute) and node.attr == "getenv"):
            found.append(node)
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            found += [a for a in node.names if a.name in ("environ", "getenv")]
    return found


def _setting_reads(tree: ast.AST) -> list[str]:
    """Reads of a ``CAREERWISE_`` variable: ``os.environ[...]`` loaded, ``.get(...)`` or ``getenv(...)``."""
    reads: list[str] = []
    for node in ast.walk(tree):
        key: ast.expr | None = None
        if isinstance(node, ast.Subscript) and _is_environ(node.value) and isinstance(node.ctx, ast.Load):
            key = node.slice
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name == "getenv" or (name == "get" and _is_environ(getattr(func, "value", None))):
                key = node.args[0]
        if isinstance(key, ast.Constant) and str(key.value).startswith("CAREERWISE_"):
            reads.append(ast.unparse(node))
    return reads


def _trees() -> dict[str, ast.AST]:
    return {
        path.relative_to(PACKAGE).as_posix(): ast.parse(path.read_text(encoding="utf-8"))
        for path in PACKAGE.rglob("*.py")
    }


def test_the_modules_that_touch_the_environment_are_the_ones_settings_lists() -> None:
    touching = {name for name, tree in _trees().items() if _uses(tree)}
    assert touching == LISTED
    assert all(name in (settings.__doc__ or "") for name in LISTED)


def test_no_module_reads_a_setting_from_the_environment_itself() -> None:
    reads = {name: found for name, tree in _trees().items() if (found := _setting_reads(tree))}
    assert reads == {}


def test_the_checks_see_each_form() -> None:
    tree = ast.parse(
        "import os\nfrom os import getenv\n"
        "a = os.environ['CAREERWISE_X']\nb = os.environ.get('CAREERWISE_Y')\nc = getenv('CAREERWISE_Z')\n"
        "os.environ['CAREERWISE_W'] = '1'\n"
    )
    assert len(_setting_reads(tree)) == 3  # the write is not a read
    assert _uses(ast.parse("import os\nos.environ.setdefault('X', '1')\n"))
