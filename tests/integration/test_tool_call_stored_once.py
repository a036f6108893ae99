"""A tool call is stored once (its tool_call and tool_result event rows, as the stream carried them) and
every reader reads that copy: the dashboard's turn list and timeline, ``careerwise traces show`` and the
conversations API agree with the stream. Migration 0019 drops the old ``tool_calls`` copy, its downgrade
rebuilds it from the events, and turns stored before it (a tool span with its own copy of the call)
read the same."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from alembic import command
from sqlalchemy import inspect, select
from typer.testing import CliRunner

from careerwise.auth import AccountService
from careerwise.cli import app
from careerwise.config import get_settings
from careerwise.store import Database, TraceEvent, TraceSpan
from tests.auth_helpers import PASSWORD, login_sync
from tests.conftest import LiveServer, client, parse_sse
from tests.fakes.fake_llm import Call, FakeLLM, text, tool_calls
from tests.integration.test_postgres import _alembic_config

ADMIN = "boss@example.com"
CALL_KEYS = ("call_id", "name", "requested_arguments", "effective_arguments", "reason")


def _run(coro_factory: Callable[[Database], Any], url: str) -> Any:
    async def run() -> Any:
        db = Database(url)
        try:
            return await coro_factory(db)
        finally:
            await db.dispose()

    return asyncio.run(run())


def _admin(server: LiveServer) -> None:
    async def make(db: Database) -> None:
        await AccountService(db, "x" * 40).create_user(
            email=ADMIN, password=PASSWORD, display_name="boss", role="admin"
        )

    _run(make, server.services.db.url)


def _cli_trace(monkeypatch: pytest.MonkeyPatch, server: LiveServer, trace_id: str) -> dict[str, Any]:
    """``careerwise traces show --json``, reading the server's database as a shell would name it."""
    monkeypatch.setenv("CAREERWISE_DATA_DIR", str(server.services.settings.data_dir))
    monkeypatch.setenv("CAREERWISE_DATABASE_URL", server.services.db.url)
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(app, ["traces", "show", trace_id, "--json"])
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def _readers(
    c: httpx.Client, monkeypatch: pytest.MonkeyPatch, server: LiveServer, trace_id: str
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The tool call as the timeline, the turn list, the CLI and the timeline's tool span show it."""
    timeline = c.get(f"/api/admin/turns/{trace_id}").json()
    (listed,) = [t for t in c.get("/api/admin/turns").json()["items"] if t["id"] == trace_id]
    cli = _cli_trace(monkeypatch, server, trace_id)
    (span,) = [s for s in timeline["spans"] if s["kind"] == "tool"]
    (dashboard_call,) = timeline["tool_calls"]
    (listed_call,) = listed["tool_calls"]
    (cli_call,) = cli["tool_calls"]
    assert [s["attributes"] for s in cli["spans"]] == [s["attributes"] for s in timeline["spans"]]
    return dashboard_call | {"listed": listed_call}, cli_call, span["attributes"], cli


def test_a_tool_call_is_stored_once_and_every_reader_shows_it(
    fake_llm: FakeLLM,
    live_server: Callable[..., LiveServer],
    db_overrides: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = live_server(**db_overrides)
    _admin(server)
    fake_llm.script(
        tool_calls(Call("searchKnowledge", {"query": "薪水談判 技巧", "top_k": 5}, id="c1")), text("好。")
    )
    with client(server) as c:
        login_sync(c, ADMIN)
        for key, value in (("use_full_retrieval_range", True), ("configured_top_k", 8)):
            assert (
                c.put(f"/api/admin/assistants/summer/settings/{key}", json={"value": value}).status_code
                == 200
            )
        events = parse_sse(c.post("/api/chat", json={"message": "怎麼談薪水？"}).text)
        streamed = next(d for n, d in events if n == "tool_call")
        result = next(d for n, d in events if n == "tool_result")
        done = next(d for n, d in events if n == "done")
        dashboard, cli, span, _ = _readers(c, monkeypatch, server, done["trace_id"])
        conversation = c.get(f"/api/conversations/{done['conversation_id']}").json()

    assert streamed["effective_arguments"]["top_k"] == 8 and streamed["requested_arguments"]["top_k"] == 5
    for key in CALL_KEYS:
        assert dashboard[key] == dashboard["listed"][key] == cli[key] == span[key] == streamed[key], key
    assert dashboard["result"]["returned"] == cli["returned"] == span["returned"] == result["returned"] == 8
    assert cli["ok"] is True and span["ok"] is True
    (answer,) = [m for m in conversation["messages"] if m["role"] == "assistant"]
    assert [s["top_k"] for s in answer["searches"]] == [8]

    async def stored(db: Database) -> tuple[list[TraceEvent], list[TraceSpan], list[str]]:
        async with db.session() as s:
            rows = list(
                (await s.scalars(select(TraceEvent).where(TraceEvent.trace_id == done["trace_id"]))).all()
            )
            spans = list(
                (await s.scalars(select(TraceSpan).where(TraceSpan.trace_id == done["trace_id"]))).all()
            )
            tables = await (await s.connection()).run_sync(lambda conn: inspect(conn).get_table_names())
        return rows, spans, tables

    rows, spans, tables = _run(stored, server.services.db.url)
    # one copy of the arguments: the tool_call event row; the span keeps only its call id
    assert [r.type for r in rows].count("tool_call") == 1
    assert [r.type for r in rows].count("tool_result") == 1
    (tool_span,) = [sp for sp in spans if sp.kind == "tool"]
    assert tool_span.attributes == {"call_id": "c1"}
    assert "tool_calls" not in tables


def test_turns_stored_before_the_migration_read_the_same(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = live_server()
    _admin(server)
    fake_llm.script(
        tool_calls(Call("searchKnowledge", {"query": "面試 準備", "top_k": 4}, id="c7")), text("好。")
    )
    with client(server) as c:
        login_sync(c, ADMIN)
        done = next(
            d for n, d in parse_sse(c.post("/api/chat", json={"message": "面試怎麼準備"}).text) if n == "done"
        )
        trace_id = done["trace_id"]
        before = _readers(c, monkeypatch, server, trace_id)

        # back to 0019: the tool_calls table is rebuilt from the event rows, as the code before it reads
        url = server.services.db.url
        path = Path(url.removeprefix("sqlite+aiosqlite:///"))
        command.downgrade(_alembic_config(url), "0019")
        with sqlite3.connect(path) as raw:
            (row,) = raw.execute(
                "SELECT call_id, name, requested_arguments, effective_arguments, reason, ok, returned "
                "FROM tool_calls WHERE trace_id = ?",
                (trace_id,),
            ).fetchall()
            # a turn stored then: its tool span carried the call's arguments and outcome itself
            raw.execute(
                "UPDATE trace_spans SET attributes = ? WHERE trace_id = ? AND kind = 'tool'",
                (json.dumps(before[2], ensure_ascii=False), trace_id),
            )
        cli = before[1]
        assert row[:2] == (cli["call_id"], cli["name"])
        assert (json.loads(row[2]), json.loads(row[3])) == (
            cli["requested_arguments"],
            cli["effective_arguments"],
        )
        assert row[4:] == (cli["reason"], 1, cli["returned"])

        # and up again: the table goes, and every reader shows what it showed before
        command.upgrade(_alembic_config(url), "head")
        after = _readers(c, monkeypatch, server, trace_id)
    assert after[:3] == before[:3]
    assert after[3]["spans"] == before[3]["spans"] and after[3]["tool_calls"] == before[3]["tool_calls"]
