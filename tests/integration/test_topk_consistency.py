"""Seed 004's four layers must agree: the effective top_k in the SSE tool_call event, the stored trace
(as `careerwise traces show --json` prints it), and the number of chunks the tool returned — from the
first streamed event on, with the admin override on and off, streamed and `mode: "full"`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from careerwise.assistant_settings import SettingsStore
from careerwise.cli.admin import load_trace
from careerwise.store import Database
from tests.conftest import LiveServer, client, parse_sse
from tests.fakes.fake_llm import Call, FakeLLM, text, tool_calls


def _stored(server: LiveServer, trace_id: str) -> dict[str, Any]:
    db = Database(server.services.db.url)

    async def run() -> dict[str, Any]:
        try:
            data = await load_trace(db, trace_id)
            assert data is not None
            return data
        finally:
            await db.dispose()

    return asyncio.run(run())


def _set(server: LiveServer, **values: object) -> None:
    db = Database(server.services.db.url)

    async def run() -> None:
        try:
            store = SettingsStore(db, server.services.settings)
            for k, v in values.items():
                await store.set(k, v, changed_by="test")
        finally:
            await db.dispose()

    asyncio.run(run())


@pytest.mark.parametrize("mode", ["stream", "full"])
@pytest.mark.parametrize(("override", "expected"), [(False, 5), (True, 8)])
def test_effective_top_k_agrees_everywhere(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer], mode: str, override: bool, expected: int
) -> None:
    server = live_server()
    if override:
        _set(server, use_full_retrieval_range=True, configured_top_k=8)
    fake_llm.script(
        tool_calls(Call("searchKnowledge", {"query": "薪水談判 技巧", "top_k": 5}, id="c1")), text("好。")
    )
    with client(server) as c:
        r = c.post("/api/chat", json={"message": "怎麼談薪水？", "mode": mode})
    assert r.status_code == 200
    if mode == "stream":
        events = parse_sse(r.text)
        calls = [d for n, d in events if n == "tool_call"]
        results = [d for n, d in events if n == "tool_result"]
        trace_id = next(d for n, d in events if n == "done")["trace_id"]
    else:
        body = r.json()
        calls, results, trace_id = body["tool_calls"], body["tool_results"], body["trace_id"]
    # one tool_call event, carrying the final value from the start (no "5 then 15" flicker)
    assert len(calls) == 1
    assert calls[0]["requested_arguments"]["top_k"] == 5
    assert calls[0]["effective_arguments"]["top_k"] == expected
    assert ("use_full_retrieval_range" in calls[0]["reason"]) is override
    # the tool returned that many chunks, and the model was given that many
    assert results[0]["returned"] == expected == len(results[0]["sources"])
    tool_msg = fake_llm.requests[1]["messages"][-1]["content"]
    assert tool_msg.count("source=") == expected
    # the stored trace (what the CLI and the dashboard read) says the same
    stored = _stored(server, trace_id)
    assert stored["tool_calls"][0]["effective_arguments"]["top_k"] == expected
    assert stored["tool_calls"][0]["requested_arguments"]["top_k"] == 5
    assert stored["tool_calls"][0]["returned"] == expected
    stored_event = next(e for e in stored["events"] if e["type"] == "tool_call")
    assert stored_event["effective_arguments"] == calls[0]["effective_arguments"]


def test_setting_change_applies_to_the_next_turn_without_restart(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    server = live_server()
    call = tool_calls(Call("searchKnowledge", {"query": "面試 準備"}))
    fake_llm.script(call, text("一"), call, text("二"))
    with client(server) as c:
        first = parse_sse(c.post("/api/chat", json={"message": "面試怎麼準備"}).text)
        _set(server, search_default_top_k=4)
        second = parse_sse(c.post("/api/chat", json={"message": "面試怎麼準備"}).text)
    assert dict(first)["tool_result"]["returned"] == 3
    assert dict(second)["tool_result"]["returned"] == 4
    assert dict(second)["tool_call"]["effective_arguments"]["top_k"] == 4


def test_more_than_matched_says_how_many_were_found(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    server = live_server()
    _set(server, use_full_retrieval_range=True, configured_top_k=50)
    fake_llm.script(tool_calls(Call("searchKnowledge", {"query": "Summer 對跳槽加薪的看法"})), text("好。"))
    with client(server) as c:
        events = parse_sse(c.post("/api/chat", json={"message": "跳槽加薪？"}).text)
    call, result = dict(events)["tool_call"], dict(events)["tool_result"]
    assert call["effective_arguments"]["top_k"] == 50
    # the pool grew to 50; "effective" and "returned" are both shown and never confused
    assert result["returned"] <= 50 and result["returned"] == len(result["sources"])
    assert "requested top_k=50" in fake_llm.requests[1]["messages"][-1]["content"]
