"""Issue #10: the chat stream's own response class (api/_sse.py) sends what Starlette's StreamingResponse
sent, over a real uvicorn server (the ASGI test transport would buffer the body and skip the server's
framing): the event-stream headers, the security headers added by the middleware, chunked framing, and
every event from ``route`` to ``done``; the request is counted as a completed 200. On both server stacks
(uvloop + httptools, the default, and asyncio + h11: decision 0012)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.conftest import SERVER_STACKS, LiveServer, client, parse_sse
from tests.fakes.fake_llm import FakeLLM, text


@pytest.mark.parametrize("stack", SERVER_STACKS)
def test_a_streamed_chat_carries_every_header_and_every_event(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer], stack: dict[str, Any]
) -> None:
    fake_llm.script(text("先整理你的經歷，再練習常見問題。", chunk_size=4))
    server = live_server(**stack)
    with client(server) as c:
        with c.stream("POST", "/api/chat", json={"message": "面試怎麼準備"}) as r:
            body = "".join(r.iter_text())
            headers = r.headers
        # the middleware counts the request once the response class returns, which is after the last
        # byte went out (it closes the engine's stream first): the scrape may come in before that
        metrics = _scrape_until_counted(c)
    assert r.status_code == 200
    assert headers["content-type"] == "text/event-stream; charset=utf-8"
    assert headers["cache-control"] == "no-cache"
    assert headers["x-accel-buffering"] == "no"
    assert headers["transfer-encoding"] == "chunked" and "content-length" not in headers
    assert "default-src 'self'" in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "same-origin"
    assert headers["x-frame-options"] == "DENY"
    events = parse_sse(body)
    names = [name for name, _ in events]
    assert names[0] == "route" and names[-1] == "done"
    assert events[-1][1]["status"] == "ok"
    assert "".join(str(d["text"]) for n, d in events if n == "delta") == "先整理你的經歷，再練習常見問題。"
    counted = _chat_200(metrics)
    assert counted and float(counted[0].rsplit(" ", 1)[1]) == 1.0


def _chat_200(metrics: str) -> list[str]:
    return [
        line
        for line in metrics.splitlines()
        if line.startswith("careerwise_http_requests_total{")
        and 'route="/api/chat"' in line
        and 'status="200"' in line
    ]


def _scrape_until_counted(c: httpx.Client) -> str:
    # polling for an outcome, not timing it: the deadline only stops a broken server from hanging the test
    deadline = time.monotonic() + 20
    metrics = c.get("/metrics").text
    while not _chat_200(metrics) and time.monotonic() < deadline:
        time.sleep(0.02)
        metrics = c.get("/metrics").text
    return metrics
