"""A scripted, in-process fake of an OpenAI-compatible chat-completions server.

It is a real HTTP server (Starlette app served by uvicorn on 127.0.0.1 in a
background thread), so the code under test talks to it through its ordinary
HTTP client, exactly as it would talk to Groq, OpenAI or llama.cpp.

Usage::

    with FakeLLM() as fake:
        fake.script(text("你好！"), tool_calls(Call("searchKnowledge", {"query": "履歷"})))
        client = AsyncOpenAI(base_url=fake.base_url, api_key="x", max_retries=0)
        ...
        assert fake.requests[0]["messages"][-1]["content"] == "..."

Each POST /v1/chat/completions records its JSON body in ``fake.requests`` and
pops the next scripted ``Reply`` (falling back to ``fake.responder(body)`` if
set, then to ``fake.default``).  Streaming follows the wire format of real
providers: ``data: {json}\\n\\n`` lines ending with ``data: [DONE]\\n\\n``.

Benchmark CLI::

    python -m tests.fakes.fake_llm --port 8009 --first-token-delay 0.5 --delay 0.02 --mode tool
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send

__all__ = [
    "Call",
    "FakeLLM",
    "Reply",
    "connection_reset",
    "error",
    "raw",
    "stall",
    "text",
    "tool_calls",
]

FAKE_MODEL = "fake-model"

_call_ids = itertools.count(1)
_completion_ids = itertools.count(1)


# --------------------------------------------------------------------------- replies


@dataclass(frozen=True)
class Call:
    """One tool call the fake model makes."""

    name: str
    arguments: str | dict[str, Any]
    id: str | None = None


@dataclass
class Reply:
    """What the fake answers to one request. Build it with text(), tool_calls(), error(), stall(), raw().

    kind is "stream" (a normal answer: text and/or tool calls), "error", "stall", "reset" or "raw".
    ``deltas`` are the streamed ``delta`` objects that follow the first role chunk.
    """

    kind: str = "stream"
    deltas: list[dict[str, Any]] = field(default_factory=list)
    content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = "stop"
    first_token_delay: float = 0.0
    delay: float = 0.0
    # error
    status: int = 200
    body: dict[str, Any] | None = None
    headers: dict[str, str] | None = None
    # stall
    stall_seconds: float = 0.0
    # raw
    raw_chunks: list[str | bytes] = field(default_factory=list)
    # a streamed reply waits for this event (set by the test) before its first token: a test can hold a
    # reply until it has seen what the page shows before it, without guessing a delay
    gate: threading.Event | None = None
    # usage overrides (None: computed, see usage())
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    send_usage: bool = True  # False: never report usage, as llama.cpp's server does not

    def usage(self, request: dict[str, Any] | None = None) -> dict[str, int]:
        """Made-up but deterministic token counts for this reply to ``request``.

        prompt = len(json of messages) // 4, completion = len(content + tool arguments) // 2.
        """
        if self.prompt_tokens is not None:
            prompt = self.prompt_tokens
        else:
            messages = (request or {}).get("messages", [])
            prompt = len(json.dumps(messages, ensure_ascii=False)) // 4
        if self.completion_tokens is not None:
            completion = self.completion_tokens
        else:
            produced = self.content + "".join(tc["function"]["arguments"] for tc in self.tool_calls)
            completion = len(produced) // 2
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _split_even(s: str, n: int) -> list[str]:
    """Split s into n contiguous pieces of (nearly) equal length; pieces may be empty if len(s) < n."""
    n = max(1, n)
    bounds = [round(i * len(s) / n) for i in range(n + 1)]
    return [s[bounds[i] : bounds[i + 1]] for i in range(n)]


def _split_text(content: str, chunks: int | None, chunk_size: int) -> list[str]:
    if chunks is not None:
        pieces = _split_even(content, chunks)
    else:
        size = max(1, chunk_size)
        pieces = [content[i : i + size] for i in range(0, len(content), size)]
    return [p for p in pieces if p]


def text(
    content: str,
    *,
    chunks: int | None = None,
    chunk_size: int = 2,
    first_token_delay: float = 0.0,
    delay: float = 0.0,
    finish_reason: str = "stop",
    usage: bool = True,
) -> Reply:
    """A plain text answer, streamed in pieces of chunk_size characters (or in ``chunks`` equal pieces);
    ``usage=False``: no usage chunk even when the client asks for one."""
    deltas: list[dict[str, Any]] = [{"content": p} for p in _split_text(content, chunks, chunk_size)]
    return Reply(
        kind="stream",
        deltas=deltas,
        content=content,
        finish_reason=finish_reason,
        first_token_delay=first_token_delay,
        delay=delay,
        send_usage=usage,
    )


def tool_calls(
    *calls: Call,
    text_before: str = "",
    split: int = 3,
    first_index: int = 0,
    finish_reason: str = "tool_calls",
    repeat_id_and_name: bool = False,
    first_token_delay: float = 0.0,
    delay: float = 0.0,
) -> Reply:
    """One or more (parallel) tool calls, each call's arguments streamed in ``split`` pieces.

    Calls get indexes first_index, first_index+1, ... and their chunks are interleaved
    (piece 0 of every call, then piece 1 of every call, ...). id/type/name are sent only in the
    first delta of each call, unless repeat_id_and_name (llama.cpp style: on every delta).
    ``text_before`` is streamed as text chunks (2 characters each) before the calls.
    """
    if not calls:
        raise ValueError("tool_calls() needs at least one Call")
    full: list[dict[str, Any]] = []
    pieces: list[list[str]] = []
    for call in calls:
        args = (
            call.arguments
            if isinstance(call.arguments, str)
            else json.dumps(call.arguments, ensure_ascii=False)
        )
        call_id = call.id or f"call_fake_{next(_call_ids)}"
        full.append({"id": call_id, "type": "function", "function": {"name": call.name, "arguments": args}})
        parts = _split_even(args, split)
        # keep the first piece (it carries id and name) even if empty; drop other empty pieces
        pieces.append([parts[0]] + [p for p in parts[1:] if p])

    deltas: list[dict[str, Any]] = [{"content": p} for p in _split_text(text_before, None, 2)]
    for j in range(max(len(p) for p in pieces)):
        for i, (tc, parts) in enumerate(zip(full, pieces, strict=True)):
            if j >= len(parts):
                continue
            entry: dict[str, Any] = {"index": first_index + i}
            if j == 0 or repeat_id_and_name:
                entry["id"] = tc["id"]
                entry["type"] = "function"
                entry["function"] = {"name": tc["function"]["name"], "arguments": parts[j]}
            else:
                entry["function"] = {"arguments": parts[j]}
            deltas.append({"tool_calls": [entry]})
    return Reply(
        kind="stream",
        deltas=deltas,
        content=text_before,
        tool_calls=full,
        finish_reason=finish_reason,
        first_token_delay=first_token_delay,
        delay=delay,
    )


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    429: "rate_limit_error",
}


def error(status: int, body: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> Reply:
    """An HTTP error answer, sent before any streaming starts.

    e.g. error(500), error(429, headers={"Retry-After": "1"}), error(400, {"error": {"message": "..."}}).
    """
    if body is None:
        body = {
            "error": {
                "message": f"fake error {status}",
                "type": _ERROR_TYPES.get(status, "server_error"),
                "code": None,
            }
        }
    return Reply(kind="error", status=status, body=body, headers=dict(headers or {}), finish_reason=None)


def stall(seconds: float, after_chunks: list[str] | None = None) -> Reply:
    """Send the role chunk and the text chunks ``after_chunks`` (if given), then nothing for ``seconds``
    with the connection held open, then end the stream without a finish chunk or [DONE].

    For a non-streaming request: wait ``seconds`` then drop the connection without a complete response.
    """
    after = list(after_chunks or [])
    return Reply(
        kind="stall",
        deltas=[{"content": c} for c in after],
        content="".join(after),
        stall_seconds=seconds,
        finish_reason=None,
    )


def connection_reset(after_chunks: list[str] | None = None) -> Reply:
    """Send the role chunk and ``after_chunks``, then abort the connection mid-body (the client sees the
    stream break off without a finish chunk, [DONE] or the end of the chunked body)."""
    after = list(after_chunks or [])
    return Reply(
        kind="reset", deltas=[{"content": c} for c in after], content="".join(after), finish_reason=None
    )


def raw(chunks: list[str | bytes], delay: float = 0.0) -> Reply:
    """Send exactly these bytes/strings as the (200, text/event-stream) body, ``delay`` seconds apart."""
    return Reply(kind="raw", raw_chunks=list(chunks), delay=delay, finish_reason=None)


# --------------------------------------------------------------------------- server


class _ServerClosing(Exception):
    """Raised inside a response writer when FakeLLM.stop() is called mid-response."""


class _ConnectionReset(Exception):
    """Raised by a ``reset()`` reply mid-body: uvicorn then drops the connection without ending it."""


def _sse(obj: Any) -> bytes:
    return b"data: " + json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n\n"


class _LiveResponse(Response):
    """Runs ``writer(send)`` while watching for the client going away.

    On disconnect the writer is cancelled (it stops writing) and FakeLLM.closed_early is incremented.
    """

    def __init__(self, fake: FakeLLM, writer: Callable[[Send], Awaitable[None]]) -> None:
        self._fake = fake
        self._writer = writer
        self.background = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        fake = self._fake
        finished = False
        disconnected = False

        async def watch(cancel: anyio.CancelScope) -> None:
            nonlocal disconnected
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    if not finished:
                        disconnected = True
                        cancel.cancel()
                    return

        started = False

        async def tracked_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        fake._stream_opened()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(watch, tg.cancel_scope)
                try:
                    await self._writer(tracked_send)
                except _ServerClosing:
                    # stop() was called mid-response: end what was started, or answer 503.
                    if started:
                        await send({"type": "http.response.body", "body": b"", "more_body": False})
                    else:
                        await JSONResponse({"error": {"message": "fake server stopping"}}, 503)(
                            scope, receive, send
                        )
                finished = True
                tg.cancel_scope.cancel()
        finally:
            fake._stream_closed(early=disconnected and not finished)


class FakeLLM:
    """A scripted OpenAI-compatible chat-completions server on 127.0.0.1 (see the module docstring)."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self.port = port
        self.default: Reply = text("好的。")
        # Called with the request body when the script queue is empty; returns a Reply (or None for default).
        self.responder: Callable[[dict[str, Any]], Reply | None] | None = None
        # True: behave as llama.cpp's Python server (``interrupt_requests``): a stream being written ends
        # with ``[DONE]`` and no finish reason, after its current chunk, when a new request arrives
        self.interrupt_on_new_request = False
        # what GET /v1/models names as each model's owner ("llamacpp" or "me": a llama.cpp server)
        self.owned_by = "fake"
        self._arrivals = 0
        self._interrupted = 0
        self._lock = threading.Lock()
        self._queue: deque[Reply] = deque()
        self._requests: list[dict[str, Any]] = []
        self._open_streams = 0
        self._max_open_streams = 0
        self._closed_early = 0
        self._closed_early_at: list[float] = []
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing: asyncio.Event | None = None
        self._startup_error: BaseException | None = None
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat_completions, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/_fake/stats", self._stats, methods=["GET"]),
            ]
        )

    # ---- public state

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """JSON bodies received at /v1/chat/completions, oldest first (a snapshot copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def open_streams(self) -> int:
        """Chat-completion responses currently being written."""
        with self._lock:
            return self._open_streams

    @property
    def max_open_streams(self) -> int:
        """Highest value open_streams has reached."""
        with self._lock:
            return self._max_open_streams

    @property
    def interrupted(self) -> int:
        """Streams ended early because another request arrived (``interrupt_on_new_request``)."""
        with self._lock:
            return self._interrupted

    @property
    def closed_early(self) -> int:
        """Responses whose client disconnected before the reply was fully written."""
        with self._lock:
            return self._closed_early

    @property
    def closed_early_at(self) -> list[float]:
        """``time.monotonic()`` when each early close was seen (system-wide on Linux, so another process
        on the same host can compare it with its own: bench/disconnect.py does)."""
        with self._lock:
            return list(self._closed_early_at)

    def script(self, *replies: Reply) -> None:
        """Queue replies; each chat-completions request pops the next one."""
        with self._lock:
            self._queue.extend(replies)

    def reset(self) -> None:
        """Forget scripted replies, recorded requests and counters; restore default and responder."""
        with self._lock:
            self._queue.clear()
            self._requests.clear()
            self._closed_early = 0
            self._closed_early_at.clear()
            self._max_open_streams = self._open_streams
            self._interrupted = 0
        self.default = text("好的。")
        self.responder = None
        self.interrupt_on_new_request = False
        self.owned_by = "fake"

    @property
    def pending(self) -> int:
        """Scripted replies not yet used."""
        with self._lock:
            return len(self._queue)

    # ---- lifecycle

    def _make_server(self) -> uvicorn.Server:
        config = uvicorn.Config(
            self.app,
            lifespan="off",
            loop="none",
            http="h11",
            log_config=None,
            log_level=None,
            timeout_graceful_shutdown=2,
        )
        return uvicorn.Server(config)

    def _bind(self) -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self.port))
            sock.listen(128)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        self.port = sock.getsockname()[1]
        return sock

    async def _serve(self, server: uvicorn.Server, sock: socket.socket) -> None:
        self._loop = asyncio.get_running_loop()
        self._closing = asyncio.Event()
        await server.serve(sockets=[sock])

    def _thread_main(self, server: uvicorn.Server, sock: socket.socket) -> None:
        try:
            asyncio.run(self._serve(server, sock))
        except BaseException as exc:  # noqa: BLE001 - surfaced by start() if it happens during startup
            self._startup_error = exc
        finally:
            sock.close()

    def start(self) -> FakeLLM:
        """Start serving in a background thread; returns self once the server accepts connections."""
        if self._thread is not None:
            raise RuntimeError("FakeLLM already started")
        sock = self._bind()
        server = self._make_server()
        self._sock, self._server = sock, server
        self._thread = threading.Thread(
            target=self._thread_main, args=(server, sock), name=f"FakeLLM:{self.port}", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"FakeLLM failed to start: {self._startup_error!r}")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        """Stop the server: responses still being written are ended, then the thread is joined."""
        server, thread, loop, closing = self._server, self._thread, self._loop, self._closing
        if server is None or thread is None:
            return
        if loop is not None and closing is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # loop already closed
                loop.call_soon_threadsafe(closing.set)
        server.should_exit = True
        thread.join(timeout=5)
        if thread.is_alive():
            server.force_exit = True
            thread.join(timeout=5)
        self._server = self._thread = None
        self._loop = self._closing = None
        self._sock = None

    def serve_forever(self, *, announce: bool = False) -> None:
        """Serve in the current (main) thread until interrupted (used by the CLI)."""
        sock = self._bind()
        if announce:
            print(f"fake LLM serving on {self.base_url}", flush=True)
        server = self._make_server()
        self._server = server
        try:
            asyncio.run(self._serve(server, sock))
        finally:
            sock.close()
            self._server = None

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # ---- bookkeeping (called on the server loop)

    def _stream_opened(self) -> None:
        with self._lock:
            self._open_streams += 1
            self._max_open_streams = max(self._max_open_streams, self._open_streams)

    def _stream_closed(self, *, early: bool) -> None:
        with self._lock:
            self._open_streams -= 1
            if early:
                self._closed_early += 1
                self._closed_early_at.append(time.monotonic())

    async def _sleep(self, seconds: float) -> None:
        """asyncio sleep on the server loop that is cut short (raising _ServerClosing) by stop()."""
        if seconds <= 0:
            return
        closing = self._closing
        if closing is None:
            await asyncio.sleep(seconds)
            return
        try:
            await asyncio.wait_for(closing.wait(), seconds)
        except TimeoutError:
            return
        raise _ServerClosing

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self._arrivals += 1
            self._requests.append(body)
            if self._queue:
                return self._queue.popleft()
            responder = self.responder
        if responder is not None:
            reply = responder(body)
            if reply is not None:
                return reply
        return self.default

    # ---- endpoints

    async def _models(self, request: Request) -> Response:
        return JSONResponse(
            {
                "object": "list",
                "data": [
                    {
                        "id": FAKE_MODEL,
                        "object": "model",
                        "created": 0,
                        "owned_by": self.owned_by,
                        "permissions": [],
                    }
                ],
            }
        )

    async def _stats(self, request: Request) -> Response:
        """The counters, for a fake running in its own process (the benchmarks)."""
        with self._lock:
            return JSONResponse(
                {
                    "requests": len(self._requests),
                    "open_streams": self._open_streams,
                    "closed_early": self._closed_early,
                    "closed_early_at": list(self._closed_early_at),
                }
            )

    async def _chat_completions(self, request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:
            return JSONResponse({"error": {"message": "request body is not valid JSON"}}, status_code=400)
        if not isinstance(body, dict):
            return JSONResponse({"error": {"message": "request body must be a JSON object"}}, status_code=400)
        reply = self._next_reply(body)
        with self._lock:  # no await since _next_reply counted this request: its own number
            arrival = self._arrivals
        if reply.kind == "error":
            return JSONResponse(reply.body, status_code=reply.status, headers=reply.headers)
        stream = bool(body.get("stream"))

        async def write(send: Send) -> None:
            if stream:
                await self._stream_writer(send, reply, body, arrival)
            else:
                await self._json_writer(send, reply, body)

        return _LiveResponse(self, write)

    def _superseded(self, arrival: int) -> bool:
        """Whether a stream that started as request ``arrival`` is cut off by a later one (and count it)."""
        with self._lock:
            if not self.interrupt_on_new_request or self._arrivals <= arrival:
                return False
            self._interrupted += 1
            return True

    async def _stream_writer(self, send: Send, reply: Reply, body: dict[str, Any], arrival: int = 0) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream; charset=utf-8"),
                    (b"cache-control", b"no-cache"),
                ],
            }
        )

        async def emit(data: bytes) -> None:
            await send({"type": "http.response.body", "body": data, "more_body": True})

        if reply.kind == "raw":
            for i, piece in enumerate(reply.raw_chunks):
                if i:
                    await self._sleep(reply.delay)
                await emit(piece.encode("utf-8") if isinstance(piece, str) else piece)
        else:
            cid = f"chatcmpl-fake-{next(_completion_ids)}"
            created = int(time.time())
            model = str(body.get("model") or FAKE_MODEL)

            def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
                return _sse(
                    {
                        "id": cid,
                        "object": "chat.completion.chunk",
                        "created": created,
                        "model": model,
                        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
                    }
                )

            if reply.kind == "reset":
                await emit(chunk({"role": "assistant", "content": None}))
                for delta in reply.deltas:
                    await emit(chunk(delta))
                raise _ConnectionReset("fake connection reset")
            if reply.kind == "stall":
                if reply.deltas:
                    await emit(chunk({"role": "assistant", "content": None}))
                    for delta in reply.deltas:
                        await emit(chunk(delta))
                await self._sleep(reply.stall_seconds)
            else:
                while reply.gate is not None and not reply.gate.is_set():
                    await self._sleep(0.02)  # cut short by stop(), like every wait of the fake
                await self._sleep(reply.first_token_delay)
                await emit(chunk({"role": "assistant", "content": None}))
                for i, delta in enumerate(reply.deltas):
                    if i:
                        await self._sleep(reply.delay)
                    await emit(chunk(delta))
                    if self._superseded(arrival):  # llama.cpp: [DONE] at once, no finish reason
                        await emit(b"data: [DONE]\n\n")
                        await send({"type": "http.response.body", "body": b"", "more_body": False})
                        return
                await emit(chunk({}, reply.finish_reason))
                if reply.send_usage and (body.get("stream_options") or {}).get("include_usage"):
                    await emit(
                        _sse(
                            {
                                "id": cid,
                                "object": "chat.completion.chunk",
                                "created": created,
                                "model": model,
                                "choices": [],
                                "usage": reply.usage(body),
                            }
                        )
                    )
                await emit(b"data: [DONE]\n\n")
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _json_writer(self, send: Send, reply: Reply, body: dict[str, Any]) -> None:
        if reply.kind == "raw":
            await self._sleep(reply.delay * max(0, len(reply.raw_chunks) - 1))
            payload = b"".join(c.encode("utf-8") if isinstance(c, str) else c for c in reply.raw_chunks)
            await self._send_full(send, 200, payload, b"application/json")
            return
        if reply.kind == "stall":
            await self._sleep(reply.stall_seconds)
            # Promise a body, send none, return: the server drops the connection.
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", b"64")],
                }
            )
            return
        await self._sleep(reply.first_token_delay + reply.delay * max(0, len(reply.deltas) - 1))
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            message["content"] = reply.content or None
            message["tool_calls"] = [json.loads(json.dumps(tc)) for tc in reply.tool_calls]
        completion = {
            "id": f"chatcmpl-fake-{next(_completion_ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model") or FAKE_MODEL),
            "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
            "usage": reply.usage(body),
        }
        payload = json.dumps(completion, ensure_ascii=False).encode("utf-8")
        await self._send_full(send, 200, payload, b"application/json")

    @staticmethod
    async def _send_full(send: Send, status: int, payload: bytes, content_type: bytes) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", content_type), (b"content-length", str(len(payload)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": payload, "more_body": False})


# --------------------------------------------------------------------------- CLI

BENCH_TEXT = (
    "談薪水時，先做功課：查清楚同職位在市場上的薪資範圍，"
    "再根據自己的經驗與成果定出目標數字。讓對方先開價，"
    "回應時以具體貢獻支撐你的要求，並把福利、彈性與成長機會一起納入討論。"
)


def bench_responder(mode: str, first_token_delay: float, delay: float) -> Callable[[dict[str, Any]], Reply]:
    """The fixed replies served by the CLI.

    mode "text": always BENCH_TEXT.  mode "tool": a request with no ``role: tool`` message gets a
    searchKnowledge tool call {"query": "薪水談判技巧"}; one that has a tool result gets BENCH_TEXT.
    """
    answer = text(BENCH_TEXT, first_token_delay=first_token_delay, delay=delay)
    call = tool_calls(
        Call("searchKnowledge", {"query": "薪水談判技巧"}, id="call_bench_search"),
        first_token_delay=first_token_delay,
        delay=delay,
    )

    def respond(body: dict[str, Any]) -> Reply:
        if mode == "tool":
            messages = body.get("messages") or []
            if not any(isinstance(m, dict) and m.get("role") == "tool" for m in messages):
                return call
        return answer

    return respond


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="Serve a fake OpenAI-compatible LLM forever (for benchmarks)."
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8009)
    parser.add_argument("--first-token-delay", type=float, default=0.0)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--mode", choices=["text", "tool"], default="text")
    args = parser.parse_args(argv)

    fake = FakeLLM(host=args.host, port=args.port)
    fake.responder = bench_responder(args.mode, args.first_token_delay, args.delay)
    with contextlib.suppress(KeyboardInterrupt):
        fake.serve_forever(announce=True)


if __name__ == "__main__":
    main()
