"""Thumbs up/down on an answer over real HTTP, on SQLite and PostgreSQL: stored with the trace, one per
message (a second replaces the first), only the conversation's owner, every bad request a clear 4xx."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, inspect, select

from careerwise.store import Database, Feedback, Trace
from careerwise.store import db as store_db
from careerwise.store.db import sync_url
from tests.auth_helpers import PASSWORD
from tests.conftest import LiveServer, client
from tests.fakes.fake_llm import FakeLLM, text
from tests.integration.test_metrics import scrape, value


def _rows(server: LiveServer) -> list[Feedback]:
    async def run() -> list[Feedback]:
        db = Database(server.services.db.url)
        try:
            async with db.session() as s:
                return list((await s.scalars(select(Feedback))).all())
        finally:
            await db.dispose()

    return asyncio.run(run())


def _trace(server: LiveServer, trace_id: str) -> Trace:
    async def run() -> Trace:
        db = Database(server.services.db.url)
        try:
            async with db.session() as s:
                trace = await s.get(Trace, trace_id)
                assert trace is not None
                return trace
        finally:
            await db.dispose()

    return asyncio.run(run())


def _answer(c: Any, fake_llm: FakeLLM) -> dict[str, Any]:
    fake_llm.script(text("先查行情，再談數字。"))
    body: dict[str, Any] = c.post("/api/chat", json={"message": "怎麼談薪水？", "mode": "full"}).json()
    assert body["status"] == "ok"
    return body


def test_rate_an_answer_and_change_the_rating(
    db_overrides: dict[str, Any], fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    server = live_server(**db_overrides)
    with client(server) as c:
        answer = _answer(c, fake_llm)
        url = f"/api/messages/{answer['message_id']}/feedback"
        first = c.post(url, json={"rating": "up"})
        assert first.status_code == 200, first.text
        assert first.json()["replaced"] is False and first.json()["comment"] is None
        assert first.json()["trace_id"] == answer["trace_id"]
        second = c.post(url, json={"rating": "down", "comment": "  數字不對，請寄到 mei@gmail.com  "})
    assert second.status_code == 200, second.text
    out = second.json()
    assert out["replaced"] is True and out["id"] == first.json()["id"] and out["rating"] == "down"
    assert out["comment"] == "數字不對，請寄到 [email]"  # trimmed and masked like a trace
    rows = _rows(server)
    assert len(rows) == 1
    row = rows[0]
    assert (row.rating, row.trace_id, row.message_id) == ("down", answer["trace_id"], answer["message_id"])
    assert row.conversation_id == answer["conversation_id"] and row.user_id is None
    assert row.assistant_id == _trace(server, answer["trace_id"]).assistant_id == "summer"
    m = scrape(server)
    assert value(m, "careerwise_feedback_total", rating="up") == 1
    assert value(m, "careerwise_feedback_total", rating="down") == 1


def test_bad_feedback_is_a_clear_4xx(fake_llm: FakeLLM, live_server: Callable[..., LiveServer]) -> None:
    server = live_server()
    with client(server) as c:
        answer = _answer(c, fake_llm)
        url = f"/api/messages/{answer['message_id']}/feedback"
        cases: list[tuple[str, Any, int, str]] = [
            (url, {"rating": "meh"}, 422, "invalid_input"),
            (url, {"rating": "up", "comment": "x" * 1001}, 422, "invalid_input"),
            (url, {"rating": "up", "extra": 1}, 422, "invalid_input"),
            (url, {}, 422, "invalid_input"),
            ("/api/messages/not-an-id/feedback", {"rating": "up"}, 422, "invalid_input"),
            (f"/api/messages/{'a' * 32}/feedback", {"rating": "up"}, 404, "not_found"),
        ]
        for path, body, status, code in cases:
            r = c.post(path, json=body)
            assert (r.status_code, r.json()["error"]["code"]) == (status, code), (path, body, r.text)
        not_json = c.post(url, content=b"{", headers={"content-type": "application/json"})
        assert (not_json.status_code, not_json.json()["error"]["code"]) == (400, "invalid_json")
        # the user's own message is not an answer
        history = _user_message_id(server, answer["conversation_id"])
        r = c.post(f"/api/messages/{history}/feedback", json={"rating": "up"})
        assert (r.status_code, r.json()["error"]["message"]) == (
            400,
            "only an assistant's answer can be rated",
        )
        assert c.post(url, json={"rating": "up", "comment": "x" * 1000}).status_code == 200
        # another site's page cannot rate on the user's behalf
        r = c.post(url, json={"rating": "down"}, headers={"Origin": "https://evil.example"})
        assert r.status_code == 403
    assert [r.rating for r in _rows(server)] == ["up"]


def _user_message_id(server: LiveServer, conversation_id: str) -> str:
    from careerwise.store import Message

    async def run() -> str:
        db = Database(server.services.db.url)
        try:
            async with db.session() as s:
                found = await s.scalar(
                    select(Message.id).where(
                        Message.conversation_id == conversation_id, Message.role == "user"
                    )
                )
                assert found is not None
                return found
        finally:
            await db.dispose()

    return asyncio.run(run())


@contextmanager
def _signed_up(server: LiveServer, email: str) -> Iterator[httpx.Client]:
    with client(server) as c:
        r = c.post("/api/auth/signup", json={"email": email, "password": PASSWORD})
        assert r.status_code == 201, r.text
        yield c


def test_only_the_owner_rates(fake_llm: FakeLLM, live_server: Callable[..., LiveServer]) -> None:
    server = live_server()
    with _signed_up(server, "owner@example.com") as owner, _signed_up(server, "other@example.com") as other:
        mine = _answer(owner, fake_llm)
        url = f"/api/messages/{mine['message_id']}/feedback"
        # someone else's answer looks like a missing one, logged in or not
        r = other.post(url, json={"rating": "down"})
        assert (r.status_code, r.json()["error"]["code"]) == (404, "not_found")
        with client(server) as anonymous:
            assert anonymous.post(url, json={"rating": "down"}).status_code == 404
            anon_answer = _answer(anonymous, fake_llm)
            anon_url = f"/api/messages/{anon_answer['message_id']}/feedback"
            # an anonymous conversation is rated by anonymous callers only
            r = owner.post(anon_url, json={"rating": "up"})
            assert (r.status_code, r.json()["error"]["code"]) == (403, "forbidden")
            assert anonymous.post(anon_url, json={"rating": "up"}).status_code == 200
        r = owner.post(url, json={"rating": "up"})
        assert r.status_code == 200, r.text
    by_message = {row.message_id: row for row in _rows(server)}
    assert set(by_message) == {mine["message_id"], anon_answer["message_id"]}
    assert by_message[mine["message_id"]].user_id is not None
    assert by_message[anon_answer["message_id"]].user_id is None


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_migration_0007_goes_down_and_up(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = (
        f"sqlite:///{tmp_path / 'm.db'}"
        if backend == "sqlite"
        else sync_url(request.getfixturevalue("pg_empty_database"))
    )
    cfg = Config()
    cfg.set_main_option("script_location", str(Path(store_db.__file__).parent / "migrations"))
    cfg.set_main_option("sqlalchemy.url", sync_url(url).replace("%", "%%"))
    engine = create_engine(url)
    try:

        def shape() -> tuple[set[str], set[str], set[str]]:
            found = inspect(engine)
            tables = set(found.get_table_names())
            return (
                tables,
                {c["name"] for c in found.get_columns("traces")},
                {c["name"] for c in found.get_columns("conversations")},
            )

        command.upgrade(cfg, "head")
        tables, traces, conversations = shape()
        assert {"trace_spans", "feedback"} <= tables
        assert "assistant_id" in traces and "assistant_id" in conversations
        command.downgrade(cfg, "0006")
        tables, traces, conversations = shape()
        assert not {"trace_spans", "feedback"} & tables
        assert "assistant_id" not in traces and "assistant_id" not in conversations
        command.upgrade(cfg, "head")
        assert {"trace_spans", "feedback"} <= shape()[0]
    finally:
        engine.dispose()
