"""Issue #10: the chat stream's own response class (api/_sse.py) sends what Starlette's StreamingResponse
sent, over a real uvicorn server (the ASGI test transport would buffer the body and skip the server's
framing): the event-stream headers, the security headers added by the middleware, chunked framing, and
every event from ``route`` to ``done``; the request is counted as a completed 200."""

from __future__ import annotations

from collections.abc import Callable

from tests.conftest import LiveServer, client, parse_sse
from tests.fakes.fake_llm import FakeLLM, text


def test_a_streamed_chat_carries_every_header_and_every_event(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    fake_llm.script(text("先整理你的經歷，再練習常見問題。", chunk_size=4))
    server = live_server()
    with client(server) as c:
        with c.stream("POST", "/api/chat", json={"message": "面試怎麼準備"}) as r:
            body = "".join(r.iter_text())
            headers = r.headers
        metrics = c.get("/metrics").text
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
    counted = [
        line
        for line in metrics.splitlines()
        if line.startswith("careerwise_http_requests_total{")
        and 'route="/api/chat"' in line
        and 'status="200"' in line
    ]
    assert counted and float(counted[0].rsplit(" ", 1)[1]) == 1.0
