"""A client that goes away mid-answer: the upstream call is closed, the turn is stored as cancelled."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import select

from careerwise.store import Database, Message, Trace
from tests.conftest import SERVER_STACKS, LiveServer, client
from tests.fakes.fake_llm import FakeLLM, text


def _wait_for(predicate: Callable[[], bool], timeout: float = 20.0) -> bool:
    # polling for an outcome, not asserting on time: the deadline only stops a broken test from hanging
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _stored(server: LiveServer) -> tuple[list[tuple[str, str, str]], list[str]]:
    db = Database(server.services.db.url)

    async def run() -> tuple[list[tuple[str, str, str]], list[str]]:
        try:
            async with db.sessions() as s:
                msgs = (await s.scalars(select(Message).order_by(Message.created_at))).all()
                traces = (await s.scalars(select(Trace))).all()
            return [(m.role, m.status, m.content) for m in msgs], [t.status for t in traces]
        finally:
            await db.dispose()

    return asyncio.run(run())


@pytest.mark.parametrize("stack", SERVER_STACKS)  # the client's leaving is seen by the HTTP protocol
def test_disconnect_cancels_upstream_and_stores_what_was_shown(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer], stack: dict[str, Any]
) -> None:
    fake_llm.script(text("這是一段很長的回答。" * 40, chunk_size=2, delay=0.05))
    server = live_server(**stack)
    with client(server) as c, c.stream("POST", "/api/chat", json={"message": "面試要怎麼準備"}) as r:
        seen = 0
        for line in r.iter_lines():
            if line.startswith("event: delta"):
                seen += 1
            if seen >= 5:
                break  # leave mid-stream
    # the provider saw its client (us) go away before it finished its script
    assert _wait_for(lambda: fake_llm.closed_early == 1)
    assert _wait_for(lambda: _stored(server)[1] == ["cancelled"])
    messages, _ = _stored(server)
    assert [(role, status) for role, status, _ in messages] == [("user", "ok"), ("assistant", "cancelled")]
    partial = messages[1][2]
    assert partial and len(partial) < len("這是一段很長的回答。" * 40)
    assert fake_llm.open_streams == 0


def test_second_message_while_a_turn_runs_is_refused_with_409(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    fake_llm.script(text("第一題。"), text("慢慢來。" * 20, chunk_size=2, delay=0.05), text("第三題。"))
    server = live_server()
    with client(server) as c:
        first = c.post("/api/chat", json={"message": "我想轉職", "mode": "full"}).json()
        conv = first["conversation_id"]
        with (
            client(server) as c2,
            c2.stream("POST", "/api/chat", json={"message": "那要多久？", "conversation_id": conv}) as r,
        ):
            checked = False
            for line in r.iter_lines():
                if line.startswith("event: delta") and not checked:
                    busy = c.post("/api/chat", json={"message": "還有呢？", "conversation_id": conv})
                    assert busy.status_code == 409
                    assert busy.json()["error"]["code"] == "conversation_busy"
                    checked = True
            assert checked
        third = c.post("/api/chat", json={"message": "還有呢？", "conversation_id": conv, "mode": "full"})
    assert third.status_code == 200 and third.json()["answer"] == "第三題。"


def test_20_of_20_disconnects_are_clean(fake_llm: FakeLLM, live_server: Callable[..., LiveServer]) -> None:
    """The issue's figure: each disconnect closes the upstream call, leaves no running turn behind and
    stores the reply as cancelled with what was produced."""
    fake_llm.default = text("這是一段很長的回答。" * 40, chunk_size=2, delay=0.03)
    server = live_server()
    for i in range(20):
        with client(server) as c, c.stream("POST", "/api/chat", json={"message": f"面試要怎麼準備 {i}"}) as r:
            seen = 0
            for line in r.iter_lines():
                seen += line.startswith("event: delta")
                if seen >= 3 + i % 5:
                    break
        assert _wait_for(lambda n=i: fake_llm.closed_early == n + 1)
    assert _wait_for(lambda: _stored(server)[1].count("cancelled") == 20)
    messages, traces = _stored(server)
    replies = [(status, content) for role, status, content in messages if role == "assistant"]
    assert len(replies) == 20 and all(s == "cancelled" and content for s, content in replies)
    assert traces == ["cancelled"] * 20
    assert fake_llm.open_streams == 0 and server.services.engine._running == set()
