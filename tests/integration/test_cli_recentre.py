"""``careerwise ingest --recentre`` where there are no centred vectors (the failure-handling audit of
2026-11-30): refused with the reason before anything is written, instead of ingesting and silently doing
nothing about the option. PostgreSQL's own recentring is tested in tests/integration/test_pg_centring.py."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from careerwise.cli import app
from careerwise.config import Settings
from tests.integration.test_cli import cli_env

__all__ = ["cli_env"]  # the fixture, as the other ingest tests use it


def test_recentre_on_sqlite_is_refused_and_ingests_nothing(cli_env: Settings, tmp_path: Path) -> None:
    note = tmp_path / "note.md"
    note.write_text("# 筆記\n\n## 重點\n\n談薪水前先查行情。", encoding="utf-8")
    runner = CliRunner()
    refused = runner.invoke(app, ["ingest", "--recentre", str(note)])
    assert refused.exit_code == 2
    assert "only on PostgreSQL" in refused.output and "sqlite" in refused.output
    assert "Nothing was ingested" in refused.output
    after = runner.invoke(app, ["ingest", str(note)])  # the same file without the option: it is new
    assert after.exit_code == 0, after.output
    assert "added 1," in after.stdout
