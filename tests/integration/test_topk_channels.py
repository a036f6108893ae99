"""Seed 004 over the other two channels: a LINE webhook turn and an OpenAI-compatible turn (streamed
and not) report the same requested, effective and returned top_k as the web chat does
(test_topk_consistency.py): in what the channel gives back, in what the model was given, in the stored
trace (`careerwise traces show --json`) and in the dashboard's turn API, with the override on and off."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from careerwise.store import LineEventRecord
from tests.conftest import LiveServer, client
from tests.fakes.fake_line import FakeLine
from tests.fakes.fake_llm import Call, FakeLLM, text, tool_calls
from tests.integration.test_admin_api import admin_client
from tests.integration.test_line_webhook import (
    SECRET,
    TOKEN,
    message_event,
    post_events,
    query,
    settled,
    wait_until,
)
from tests.integration.test_openai_compat import issue_key
from tests.integration.test_topk_consistency import _set, _stored

REQUESTED = 5
CONFIGURED = 8


@pytest.fixture
def fake_line() -> Iterator[FakeLine]:
    with FakeLine(access_token=TOKEN) as fake:
        yield fake


def _script(fake_llm: FakeLLM) -> None:
    fake_llm.script(
        tool_calls(Call("searchKnowledge", {"query": "薪水談判 技巧", "top_k": REQUESTED}, id="c1")),
        text("好。"),
    )


def _agree_everywhere(
    server: LiveServer, fake_llm: FakeLLM, trace_id: str, expected: int, override: bool
) -> None:
    """The layers behind every channel: what the model got, the stored trace, the dashboard."""
    tool_msg = fake_llm.requests[1]["messages"][-1]["content"]
    assert tool_msg.count("source=") == expected
    stored = _stored(server, trace_id)
    [call] = stored["tool_calls"]
    assert call["requested_arguments"]["top_k"] == REQUESTED
    assert call["effective_arguments"]["top_k"] == expected
    assert call["returned"] == expected
    [event] = [e for e in stored["events"] if e["type"] == "tool_call"]  # one event: no flicker
    assert event["effective_arguments"]["top_k"] == expected
    assert ("use_full_retrieval_range" in event["reason"]) is override
    with admin_client(server) as c:
        turn = c.get(f"/api/admin/turns/{trace_id}").json()
    [shown] = turn["tool_calls"]
    assert shown["requested_arguments"]["top_k"] == REQUESTED
    assert shown["effective_arguments"]["top_k"] == expected
    assert shown["result"]["returned"] == expected


@pytest.mark.parametrize(("override", "expected"), [(False, REQUESTED), (True, CONFIGURED)])
def test_line_turn_reports_the_same_top_k(
    fake_llm: FakeLLM,
    live_server: Callable[..., LiveServer],
    fake_line: FakeLine,
    override: bool,
    expected: int,
) -> None:
    server = live_server(
        line_channel_secret=SECRET, line_channel_access_token=TOKEN, line_api_base_url=fake_line.base_url
    )
    if override:
        _set(server, use_full_retrieval_range=True, configured_top_k=CONFIGURED)
    _script(fake_llm)
    with client(server) as c:
        assert post_events(c, message_event("怎麼談薪水？")).status_code == 200
    fake_line.wait_for(lambda: fake_line.replies)
    wait_until(lambda: settled(server))
    [(status, trace_id)] = query(server, select(LineEventRecord.status, LineEventRecord.trace_id))
    assert status == "answered" and trace_id
    [reply] = fake_line.replies[0].texts
    assert reply.startswith("好。")
    _agree_everywhere(server, fake_llm, trace_id, expected, override)


def _completion(server: LiveServer, *, stream: bool) -> dict[str, Any]:
    """The ``careerwise`` extra field of a completion, streamed (from its final chunk) or not."""
    body = {"model": "summer", "messages": [{"role": "user", "content": "怎麼談薪水？"}], "stream": stream}
    headers = {"Authorization": f"Bearer {issue_key(server)}"}
    with httpx.Client(base_url=server.url, timeout=30) as c:
        r = c.post("/v1/chat/completions", json=body, headers=headers)
    assert r.status_code == 200, r.text
    if not stream:
        return dict(r.json()["careerwise"])
    chunks = [
        json.loads(line.removeprefix("data: "))
        for line in r.text.splitlines()
        if line.startswith("data: ") and line != "data: [DONE]"
    ]
    [final] = [c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    return dict(final["careerwise"])


@pytest.mark.parametrize("stream", [False, True], ids=["full", "stream"])
@pytest.mark.parametrize(("override", "expected"), [(False, REQUESTED), (True, CONFIGURED)])
def test_openai_compatible_turn_reports_the_same_top_k(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer], stream: bool, override: bool, expected: int
) -> None:
    server = live_server()
    if override:
        _set(server, use_full_retrieval_range=True, configured_top_k=CONFIGURED)
    _script(fake_llm)
    extra = _completion(server, stream=stream)
    assert extra["tool_calls"] == [
        {
            "name": "searchKnowledge",
            "arguments": {"query": "薪水談判 技巧", "top_k": expected},
            "ok": True,
            "returned": expected,
        }
    ]
    _agree_everywhere(server, fake_llm, extra["trace_id"], expected, override)
