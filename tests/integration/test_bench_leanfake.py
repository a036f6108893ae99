"""The burst benchmark's lean rig (bench/_leanfake.py, bench/_burstclient.py) over real sockets.

The lean provider must be a faithful stand-in for the test suite's fake in text mode (the same chunks,
text and usage), usable by the official SDK and by our provider class; it must refuse what it does not
serve with a clear 4xx. The lean client must read the same streams as httpx does and reach the same
verdicts (not the same times: those are the benchmark's business)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import openai
import pytest

from bench._burstclient import Sample, httpx_request, lean_request, lines_for
from bench._leanfake import LeanFake
from careerwise.llm.openai_provider import OpenAIProvider
from careerwise.llm.types import ChatMessage, CompletionRequest
from tests.fakes.fake_llm import BENCH_TEXT, FakeLLM, bench_responder

DELAY = 0.001  # the chunks' spacing: small, the tests are about content, not time


@pytest.fixture
async def lean() -> AsyncIterator[tuple[LeanFake, str]]:
    fake = LeanFake(first_token_delay=DELAY, delay=DELAY)
    server = await asyncio.start_server(fake.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield fake, f"http://127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()


def _body(content: str = "面試怎麼準備 1") -> dict[str, Any]:
    return {
        "model": "fake",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": content}],
    }


def _expected_usage(body: dict[str, Any]) -> dict[str, int]:
    # the fake's made-up counts (tests/fakes/fake_llm.py, Reply.usage), worked out independently here
    prompt = len(json.dumps(body["messages"], ensure_ascii=False)) // 4
    completion = len(BENCH_TEXT) // 2
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


async def _chunks(base: str, body: dict[str, Any]) -> tuple[httpx.Response, list[Any]]:
    """Every ``data:`` payload of one stream, parsed; ids and timestamps blanked."""
    payloads: list[Any] = []
    async with (
        httpx.AsyncClient(timeout=30) as client,
        client.stream("POST", f"{base}/v1/chat/completions", json=body) as r,
    ):
        async for line in r.aiter_lines():
            if line.startswith("data: "):
                data = line[6:]
                obj = data if data == "[DONE]" else json.loads(data)
                if isinstance(obj, dict):
                    obj["id"], obj["created"] = "-", 0
                payloads.append(obj)
    return r, payloads


async def test_same_stream_as_the_fakes_text_mode(lean: tuple[LeanFake, str]) -> None:
    _, base = lean
    body = _body()
    with FakeLLM() as fake:
        fake.responder = bench_responder("text", DELAY, DELAY)
        theirs_response, theirs = await _chunks(fake.base_url.removesuffix("/v1"), body)
    ours_response, ours = await _chunks(base, body)
    assert ours == theirs
    assert len(ours) == 1 + 43 + 1 + 1 + 1  # role, the text, finish, usage, [DONE]
    assert ours_response.headers["content-type"] == theirs_response.headers["content-type"]
    assert ours_response.headers["transfer-encoding"] == "chunked"


async def test_official_sdk_streams_text_and_usage(lean: tuple[LeanFake, str]) -> None:
    fake, base = lean
    body = _body("怎麼寫履歷")
    async with openai.AsyncOpenAI(
        base_url=f"{base}/v1",
        api_key="x",
        max_retries=0,
        http_client=openai.DefaultAioHttpClient(timeout=openai.Timeout(30, connect=5)),
    ) as client:
        stream = await client.chat.completions.create(
            model="fake",
            messages=body["messages"],
            stream=True,
            stream_options={"include_usage": True},
        )
        text, usage, finish = "", None, None
        async for chunk in stream:
            for choice in chunk.choices:
                text += choice.delta.content or ""
                finish = choice.finish_reason or finish
            if chunk.usage is not None:
                usage = chunk.usage.model_dump(include={"prompt_tokens", "completion_tokens", "total_tokens"})
    assert text == BENCH_TEXT
    assert finish == "stop"
    assert usage == _expected_usage(body)
    assert fake.stats.requests == 1
    assert fake.stats.failures == 0


async def test_careerwise_provider_class_streams_text_and_usage(lean: tuple[LeanFake, str]) -> None:
    _, base = lean
    provider = OpenAIProvider(
        base_url=f"{base}/v1", api_key="x", model="fake", connect_timeout=5, read_timeout=30
    )
    request = CompletionRequest(messages=[ChatMessage(role="user", content="面試怎麼準備")])
    try:
        chunks = [c async for c in provider.stream(request)]
    finally:
        await provider.aclose()
    assert "".join(c.text or "" for c in chunks) == BENCH_TEXT
    assert [c.finish_reason for c in chunks if c.finish_reason] == ["stop"]
    usages = [c.usage for c in chunks if c.usage is not None]
    assert len(usages) == 1
    messages = [m.to_openai() for m in request.messages]
    expected = _expected_usage({"messages": messages})
    assert (usages[0].prompt_tokens, usages[0].completion_tokens) == (
        expected["prompt_tokens"],
        expected["completion_tokens"],
    )


async def _raw(base: str, request: bytes) -> bytes:
    """Send ``request`` on a fresh connection and read until the server closes it."""
    host, port = base.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(request)
        return await asyncio.wait_for(reader.read(-1), 30)
    finally:
        writer.close()


def _post(path: str, payload: bytes, extra: str = "Connection: close\r\n") -> bytes:
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(payload)}\r\n{extra}\r\n"
    return head.encode() + payload


@pytest.mark.parametrize(
    ("request_bytes", "status", "says"),
    [
        (_post("/v1/embeddings", b"{}"), 404, "no route"),
        (b"GET /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 405, "use POST"),
        (_post("/v1/chat/completions", b"{not json"), 400, "not valid JSON"),
        (_post("/v1/chat/completions", b"[1]"), 400, "JSON object"),
        (_post("/v1/chat/completions", json.dumps({"stream": False}).encode()), 400, "only streams"),
        (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n\r\n", 411, "Content-Length"),
        (b"HELLO\r\n\r\n", 400, "bad request line"),
        (b"GET / HTTP/2.0\r\n\r\n", 505, "HTTP/2.0"),
    ],
)
async def test_refuses_what_it_does_not_serve(
    lean: tuple[LeanFake, str], request_bytes: bytes, status: int, says: str
) -> None:
    fake, base = lean
    answer = await _raw(base, request_bytes)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.split(b" ")[1] == str(status).encode()
    assert says in json.loads(body)["error"]["message"]
    assert fake.stats.refused == {status: 1}


async def test_keep_alive_then_close(lean: tuple[LeanFake, str]) -> None:
    """Two requests on one connection, the second asking to close: both answered, then EOF."""
    fake, base = lean
    payload = json.dumps(_body()).encode()
    models = b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"
    answer = await _raw(base, models + _post("/v1/chat/completions", payload))
    assert answer.count(b"HTTP/1.1 200 OK") == 2
    assert b"connection: close" in answer.lower()
    assert answer.endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n")
    assert fake.stats.requests == 1
    assert fake.stats.open_streams == 0


async def test_client_going_away_is_counted(lean: tuple[LeanFake, str]) -> None:
    fake, base = lean
    host, port = base.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(_post("/v1/chat/completions", json.dumps(_body()).encode(), extra=""))
    await reader.readuntil(b"data: ")  # the stream has started
    writer.close()
    await writer.wait_closed()
    for _ in range(500):  # the server notices at its next write, a few chunk delays later
        if fake.stats.closed_early:
            break
        await asyncio.sleep(0.01)
    assert fake.stats.closed_early == 1
    assert fake.stats.open_streams == 0
    assert fake.stats.failures == 0


@pytest.mark.parametrize("server", ["lean", "fake"])
async def test_lean_and_httpx_clients_reach_the_same_verdicts(
    lean: tuple[LeanFake, str], server: str
) -> None:
    """Against both providers (the lean one's framing, and uvicorn's): every stamp set, no error."""
    _, base = lean
    with FakeLLM() as fake:
        fake.responder = bench_responder("text", DELAY, DELAY)
        url = f"{base if server == 'lean' else fake.base_url.removesuffix('/v1')}/v1/chat/completions"
        results: dict[str, Sample] = {}
        async with httpx.AsyncClient(timeout=30) as client:
            for kind in ("lean", "httpx"):
                sample = Sample(0.0)
                t0 = time.perf_counter()
                lines = lines_for(ours=False, sample=sample, t0=t0)
                if kind == "lean":
                    await lean_request(url, _body(), lines, sample, t0)
                else:
                    await httpx_request(client, url, _body(), lines, sample, t0)
                results[kind] = sample
    for sample in results.values():
        assert sample.error is None
        assert sample.headers_ms is not None
        assert sample.first_ms is not None and sample.shown_ms is not None
        assert sample.shown_ms >= sample.first_ms


async def test_lean_client_reports_errors_as_httpx_does(lean: tuple[LeanFake, str]) -> None:
    _, base = lean
    sample = Sample(0.0)
    lines = lines_for(ours=False, sample=sample, t0=0.0)
    await lean_request(f"{base}/v1/nowhere", _body(), lines, sample, 0.0)
    assert sample.error is not None and sample.error.startswith("HTTP 404: ")
    assert "no route" in sample.error


async def test_lean_client_reads_careerwise_sse_events() -> None:
    """The CareerWise side of the parser: delta stamps the first text, done gives the trace id; an
    error event or a missing done is an error, over a real chunked HTTP/1.1 response."""
    bodies = {
        "/ok": b'event: route\ndata: {}\n\nevent: delta\ndata: {"text": "hi"}\n\n'
        b'event: done\ndata: {"status": "ok", "trace_id": "t1"}\n\n',
        "/cut": b'event: delta\ndata: {"text": "hi"}\n\n',
        "/err": b'event: error\ndata: {"code": "llm_unavailable"}\n\nevent: done\ndata: {"status": "error"}\n\n',
    }

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(
            next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")).split(b":")[1]
        )
        await reader.readexactly(length)
        body = bodies[head.split(b" ")[1].decode()]
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        )
        for piece in (body[:7], body[7:40], body[40:]):  # pieces that split lines in the middle
            writer.write(b"%x\r\n%b\r\n" % (len(piece), piece))
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        got = {}
        for path in bodies:
            sample = Sample(0.0)
            lines = lines_for(ours=True, sample=sample, t0=0.0)
            await lean_request(f"http://127.0.0.1:{port}{path}", {"message": "x"}, lines, sample, 0.0)
            got[path] = sample
    finally:
        server.close()
        await server.wait_closed()
    assert got["/ok"].error is None and got["/ok"].trace_id == "t1" and got["/ok"].first_ms is not None
    assert got["/cut"].error == "stream ended without a done event"
    assert got["/err"].error == "error event llm_unavailable"


def test_the_process_tree_and_its_memory_are_read_below_the_given_process() -> None:
    """The memory and CPU figures of a serving process add its workers: ``descendants`` must find the
    processes below the one it is given, and ``memory`` read each one."""
    import os
    import subprocess
    import sys

    from bench._serve import descendants, memory

    script = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        child = int(proc.stdout.readline())
        assert descendants(proc.pid) == [child]
        rows = memory(proc.pid)
        assert [m.pid for m in rows] == [proc.pid, child]
        assert all(m.rss_mb > 1 and m.pss_mb > 0 for m in rows)
    finally:
        for pid in descendants(proc.pid):
            os.kill(pid, 9)
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
