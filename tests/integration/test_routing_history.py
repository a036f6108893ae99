"""The history rule through the HTTP chat API: a short follow-up in the same conversation keeps the
previous turn's career intent (layer ``history`` in its route event), with the real router and model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from tests.conftest import LiveServer, client, parse_sse
from tests.fakes.fake_llm import FakeLLM, text


def turn(c: httpx.Client, message: str, conversation_id: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"message": message}
    if conversation_id:
        body["conversation_id"] = conversation_id
    r = c.post("/api/chat", json=body)
    assert r.status_code == 200, r.text
    events = dict(parse_sse(r.text))
    assert events["done"]["status"] == "ok", events
    return events


def test_a_follow_up_keeps_the_previous_career_intent(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    server = live_server()
    fake_llm.script(text("先整理作品集，再練習自我介紹。"), text("台北的職缺比較多。"))
    with client(server) as c:
        first = turn(c, "how do I prepare for a job interview")
        # plain enough for layer 2's lexical stage; the follow-up below is not (it skips that stage)
        assert (first["route"]["intent"], first["route"]["layer"]) == ("career", "lexical")
        second = turn(c, "what about in Taipei?", first["done"]["conversation_id"])
        # a new conversation with the same words has no history: not the history layer
        alone = turn(c, "what about in Taipei?")
    route = second["route"]
    assert (route["intent"], route["tier"], route["layer"]) == ("career", "simple", "history")
    assert any("how do I prepare for a job interview" in r for r in route["reasons"])
    assert [stage["stage"] for stage in route["stages"]] == ["embedding"]
    assert alone["route"]["layer"] != "history"
