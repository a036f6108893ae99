"""The ``careerwise`` command, in-process, with the same engine the server uses."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import typer
from typer.core import TyperGroup
from typer.testing import CliRunner

from careerwise.cli import app
from careerwise.config import Settings, get_settings
from tests.fakes.fake_llm import Call, FakeLLM, text, tool_calls


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch, make_settings: Callable[..., Settings]) -> Settings:
    # the CLI reads its settings from the environment, exactly as a user's shell would give them
    settings = make_settings()
    monkeypatch.setenv("CAREERWISE_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("CAREERWISE_LLM_BASE_URL", str(settings.llm_base_url))
    monkeypatch.setenv("CAREERWISE_LLM_MODEL", "fake-model")
    get_settings.cache_clear()
    yield settings
    get_settings.cache_clear()


def test_chat_json_prints_one_event_per_line(fake_llm: FakeLLM, cli_env: Settings) -> None:
    fake_llm.script(tool_calls(Call("searchKnowledge", {"query": "薪水談判技巧"})), text("先探再錨。"))
    result = CliRunner().invoke(app, ["chat", "怎麼談薪水？", "--json"])
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "route" and types[-1] == "done"
    assert types.index("tool_call") < types.index("tool_result") < types.index("delta")
    assert "".join(e["text"] for e in events if e["type"] == "delta") == "先探再錨。"


def test_chat_plain_prints_the_answer(fake_llm: FakeLLM, cli_env: Settings) -> None:
    fake_llm.script(text("面試前準備三個故事。"))
    result = CliRunner().invoke(app, ["chat", "面試要怎麼準備"])
    assert result.exit_code == 0
    assert "面試前準備三個故事。" in result.stdout


def test_search_finds_summers_article(cli_env: Settings) -> None:
    result = CliRunner().invoke(app, ["search", "怎麼談薪水", "--top-k", "2", "--json"])
    assert result.exit_code == 0, result.output
    hits = json.loads(result.stdout)["hits"]
    assert len(hits) == 2 and hits[0]["document_id"].startswith("a-")


def test_ingest_is_idempotent_and_reports_bad_files(cli_env: Settings, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "note.md").write_text(
        "# 我的筆記\n\n## 重點\n\n談薪水前先查行情。面試前準備故事。", encoding="utf-8"
    )
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 not really a pdf")
    (folder / "blob.txt").write_bytes(b"\x00\xff" * 50)
    runner = CliRunner()
    first = runner.invoke(app, ["ingest", str(folder)])
    assert first.exit_code == 1  # some files failed, the rest still went in
    assert "added 1," in first.stdout
    assert "broken.pdf" in first.output and "blob.txt" in first.output
    second = runner.invoke(app, ["ingest", str(folder / "note.md")])
    assert "added 0, updated 0, unchanged 1" in second.stdout
    (folder / "note.md").write_text("# 我的筆記\n\n## 重點\n\n改過的內容。", encoding="utf-8")
    third = runner.invoke(app, ["ingest", str(folder / "note.md")])
    assert "updated 1" in third.stdout
    version_before = third.stdout.rsplit("version ", 1)[1].strip()
    fourth = runner.invoke(app, ["ingest", str(folder / "note.md")])
    assert fourth.stdout.rsplit("version ", 1)[1].strip() == version_before


def _command_paths(command: object, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [path]
    if isinstance(command, TyperGroup):
        for name, sub in command.commands.items():
            paths += _command_paths(sub, (*path, name))
    return paths


def test_every_command_of_the_package_answers_help() -> None:
    root = typer.main.get_command(app)
    assert isinstance(root, TyperGroup)
    assert set(root.commands) == {
        "apikeys",
        "assistants",
        "chat",
        "eval",
        "ingest",
        "route",
        "search",
        "serve",
        "settings",
        "slots",
        "traces",
        "users",
    }
    paths = _command_paths(root)
    assert ("eval", "resumes") in paths and ("settings", "set") in paths
    runner = CliRunner()
    for path in paths:
        result = runner.invoke(app, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output)
        assert "Usage:" in result.output, path


def test_python_m_careerwise_cli_runs_the_same_command() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "careerwise.cli", "--help"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "serve" in result.stdout and "eval" in result.stdout


def test_chat_loads_the_model_while_the_knowledge_base_loads(
    fake_llm: FakeLLM, cli_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from careerwise.llm.resilience import ResilientProvider
    from careerwise.services import Services

    seen: list[str] = []

    async def warm(self: ResilientProvider) -> None:
        seen.append("model loading")

    prepare = Services.prepare_knowledge

    async def prepare_and_note(self: Services) -> object:
        report = await prepare(self)
        seen.append("knowledge ready")
        return report

    monkeypatch.setattr(ResilientProvider, "warm", warm)
    monkeypatch.setattr(Services, "prepare_knowledge", prepare_and_note)
    fake_llm.script(text("面試前準備三個故事。"))
    result = CliRunner().invoke(app, ["chat", "面試要怎麼準備"])
    assert result.exit_code == 0, result.output
    assert seen == ["model loading", "knowledge ready"]
