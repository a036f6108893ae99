"""Every turn ends with ``done``, also when the turn's deadline fires while the provider is still
writing: the provider (the scripted fake, a real HTTP server) stalls mid-answer and the turn's deadline
(``CAREERWISE_TURN_DEADLINE``, set short) fires; each channel over a real HTTP server gets what it
promises: the SSE stream ``error`` then ``done`` (last), the JSON mode the error in its body, the
OpenAI-compatible stream its error chunk then ``[DONE]``. (LINE: tests/integration/test_line_webhook.py.)

The order of what arrives is asserted, never how long it took."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx

from tests.conftest import LiveServer, client, on_db, parse_sse
from tests.fakes.fake_llm import FakeLLM, stall
from tests.integration.test_openai_compat import issue_key

QUESTION = "怎麼談薪水？"
SHOWN = ["先", "查", "清", "楚", "同", "職", "位", "的"]  # more than the chunks phase 1 holds back
DEADLINE = {
    "turn_deadline": 10.0
}  # far past the stall's first chunks (also on a loaded machine), far short of its end


def stalled(fake: FakeLLM) -> None:
    """The answer starts, then the provider goes silent far past the turn's deadline."""
    fake.script(stall(60, after_chunks=SHOWN))


def test_the_sse_stream_gets_error_then_done_when_the_deadline_fires_mid_answer(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    stalled(fake_llm)
    server = live_server(**DEADLINE)
    with client(server) as c, c.stream("POST", "/api/chat", json={"message": QUESTION}) as r:
        assert r.status_code == 200
        events = parse_sse(r.read().decode())
    kinds = [name for name, _ in events]
    assert kinds[-2:] == ["error", "done"], kinds
    assert "delta" in kinds, kinds  # the answer had started: the deadline fired mid-answer
    error, done = events[-2][1], events[-1][1]
    assert error["code"] == "llm_timeout" and error["retryable"] is True
    assert done["status"] == "error"


def test_the_json_mode_returns_the_error_in_its_body(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    stalled(fake_llm)
    server = live_server(**DEADLINE)
    with client(server) as c:
        r = c.post("/api/chat", json={"message": QUESTION, "mode": "full"})
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "error" and body["error"]["code"] == "llm_timeout"
    assert body["answer"].startswith("".join(SHOWN[:3]))  # what was shown before the deadline is kept


def test_the_openai_compatible_stream_ends_with_its_error_chunk_then_done(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    stalled(fake_llm)
    server = live_server(**DEADLINE)
    token = issue_key(server)
    with (
        httpx.Client(base_url=server.url, timeout=30) as c,
        c.stream(
            "POST",
            "/v1/chat/completions",
            headers={"Authorization": f"Bearer {token}"},
            json={"model": "summer", "stream": True, "messages": [{"role": "user", "content": QUESTION}]},
        ) as r,
    ):
        assert r.status_code == 200
        frames = [f[len("data: ") :] for f in r.read().decode().split("\n\n") if f.startswith("data: ")]
    assert frames[-1] == "[DONE]"
    last = json.loads(frames[-2])
    assert last["error"]["code"] == "llm_timeout" and last["careerwise"]["status"] == "error"
    texts = [
        json.loads(f)["choices"][0]["delta"].get("content") or ""
        for f in frames[:-2]
        if json.loads(f).get("choices")
    ]
    assert "".join(texts).startswith("".join(SHOWN[:3]))


def test_the_stored_turn_ends_as_an_error(fake_llm: FakeLLM, live_server: Callable[..., LiveServer]) -> None:
    from sqlalchemy import select

    from careerwise.store import Trace

    stalled(fake_llm)
    server = live_server(**DEADLINE)
    with client(server) as c, c.stream("POST", "/api/chat", json={"message": QUESTION}) as r:
        events = parse_sse(r.read().decode())
    trace_id = events[-1][1]["trace_id"]

    async def status(db: object) -> list[object]:
        async with db.session() as s:  # type: ignore[attr-defined]
            return list((await s.execute(select(Trace.status).where(Trace.id == trace_id))).scalars())

    assert on_db(server, status) == ["error"]
