"""A lean fake provider for the burst benchmark: the fake's text mode on plain asyncio, no framework.

Why: the test suite's fake (tests/fakes/fake_llm.py: uvicorn + Starlette + an anyio task group a request)
costs about 13 ms of CPU a 43-chunk stream; at the burst's 100 new streams a second that is more than one
of the machine's two cores, taken from the server it is meant to measure. A production provider does not
run on the server's machine at all. This one answers the same requests with the same bytes and timing:

- ``POST /v1/chat/completions`` with ``"stream": true``: ``text/event-stream`` of ``chat.completion.chunk``
  objects: a role chunk after ``--first-token-delay``, then ``BENCH_TEXT`` in the fake's 43 pieces
  ``--delay`` apart, a finish chunk, the usage chunk when ``stream_options.include_usage`` is set (the
  fake's made-up counts, ``Reply.usage``) and ``data: [DONE]``. Each chunk's JSON is encoded once at start
  (only the id/created/model head changes per stream) and leaves in one write with its HTTP chunk framing.
- ``GET /v1/models`` (the benchmarks' readiness probe) and ``GET /_fake/stats`` (counters).
- Anything else gets a JSON error: 404 (unknown path), 405 (wrong method), 400 (not JSON, not an object,
  ``stream`` not true: this fake only streams), 411 (no Content-Length), 413, 431, 505.

HTTP/1.1 keep-alive unless the request says ``Connection: close`` (or is HTTP/1.0); the streamed body is
chunked. Nothing here is for the test suite's scripted replies; those stay in the fake.

    python -m bench._leanfake --port 8009 --first-token-delay 0.5 --delay 0.02
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.fake_llm import BENCH_TEXT, FAKE_MODEL, text

log = logging.getLogger("bench.leanfake")

MAX_HEAD = 16 * 1024
MAX_BODY = 4 * 1024 * 1024
_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    411: "Length Required",
    413: "Content Too Large",
    431: "Request Header Fields Too Large",
    505: "HTTP Version Not Supported",
}
_STREAM_HEAD = (
    b"HTTP/1.1 200 OK\r\n"
    b"content-type: text/event-stream; charset=utf-8\r\n"
    b"cache-control: no-cache\r\n"
    b"transfer-encoding: chunked\r\n"
)


class HttpError(Exception):
    """A request this server refuses: answered with ``status`` and a JSON error, then the connection
    closes when the request could not be read to its end."""

    def __init__(self, status: int, message: str, *, close: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.close = close


@dataclass
class Request:
    method: str
    path: str
    version: str
    headers: dict[str, str]
    body: bytes = b""

    @property
    def keep_alive(self) -> bool:
        connection = self.headers.get("connection", "").lower()
        if self.version == "HTTP/1.0":
            return "keep-alive" in connection
        return "close" not in connection


@dataclass
class Stats:
    requests: int = 0
    open_streams: int = 0
    closed_early: int = 0
    disconnects: int = 0
    failures: int = 0  # our own bugs, each logged with its traceback
    refused: dict[int, int] = field(default_factory=dict)


def _dumps(obj: Any) -> bytes:
    # the fake's encoding (json.dumps defaults, ensure_ascii=False), so both send the same bytes
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


class Script:
    """The stream's chunks, encoded once: every chunk object starts with the same four keys (id, object,
    created, model), so a chunk is the stream's head + its own pre-encoded tail."""

    def __init__(self, *, first_token_delay: float, delay: float) -> None:
        self.reply = text(BENCH_TEXT, first_token_delay=first_token_delay, delay=delay)
        self.first_token_delay = first_token_delay
        self.delay = delay

        def tail(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
            return (
                _dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]})[1:]
                + b"\n\n"
            )

        self.role = tail({"role": "assistant", "content": None})
        self.deltas = [tail(d) for d in self.reply.deltas]
        self.finish = tail({}, self.reply.finish_reason)

    @staticmethod
    def head(cid: str, created: int, model: str) -> bytes:
        """``data: {"id": ..., "object": ..., "created": ..., "model": ..., `` (the tail closes it)."""
        return (
            b"data: "
            + _dumps({"id": cid, "object": "chat.completion.chunk", "created": created, "model": model})[:-1]
            + b", "
        )

    def usage(self, body: dict[str, Any]) -> bytes:
        return _dumps({"choices": [], "usage": self.reply.usage(body)})[1:] + b"\n\n"


def _frame(data: bytes) -> bytes:
    """One HTTP/1.1 chunk."""
    return b"%x\r\n%b\r\n" % (len(data), data)


def _json_response(status: int, payload: Any, *, close: bool) -> bytes:
    body = _dumps(payload)
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
        f"content-type: application/json\r\ncontent-length: {len(body)}\r\n"
        + ("connection: close\r\n" if close else "")
        + "\r\n"
    )
    return head.encode("latin-1") + body


def _error(status: int, message: str, *, close: bool) -> bytes:
    kind = "not_found_error" if status == 404 else "invalid_request_error"
    return _json_response(status, {"error": {"message": message, "type": kind, "code": None}}, close=close)


async def read_request(reader: asyncio.StreamReader) -> Request | None:
    """The next request on the connection, or None when the client closed it between requests."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if exc.partial.strip():
            raise HttpError(400, "request head cut short", close=True) from exc
        return None  # a keep-alive connection the client closed: normal
    except asyncio.LimitOverrunError as exc:
        raise HttpError(431, f"request head over {MAX_HEAD} bytes", close=True) from exc
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        raise HttpError(400, f"bad request line {lines[0][:80]!r}", close=True)
    method, path, version = parts
    if version not in ("HTTP/1.1", "HTTP/1.0"):
        raise HttpError(505, f"{version} is not served here", close=True)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, sep, value = line.partition(":")
            if not sep:
                raise HttpError(400, f"bad header line {line[:80]!r}", close=True)
            headers[name.strip().lower()] = value.strip()
    request = Request(method, path, version, headers)
    if "transfer-encoding" in headers:
        raise HttpError(411, "send the body with a Content-Length, not chunked", close=True)
    length = headers.get("content-length")
    if length is not None:
        if not length.isdigit():
            raise HttpError(400, f"bad Content-Length {length[:40]!r}", close=True)
        if int(length) > MAX_BODY:
            raise HttpError(413, f"body over {MAX_BODY} bytes", close=True)
        request.body = await reader.readexactly(int(length))
    elif method == "POST":
        raise HttpError(411, "POST needs a Content-Length", close=True)
    return request


class LeanFake:
    """The server: one coroutine a connection, requests answered in turn on it (no pipelining needed)."""

    def __init__(self, *, first_token_delay: float, delay: float) -> None:
        self.script = Script(first_token_delay=first_token_delay, delay=delay)
        self.stats = Stats()
        self._ids = itertools.count(1)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    request = await read_request(reader)
                except HttpError as exc:
                    self._refuse(writer, exc)
                    break
                if request is None:
                    break
                try:
                    await self._answer(request, writer)
                except HttpError as exc:
                    self._refuse(writer, exc)
                    if exc.close:
                        break
                if not request.keep_alive:
                    break
                await writer.drain()
        except ConnectionError as exc:
            # the client went away (a stream cut short is also counted as closed early in _stream)
            self.stats.disconnects += 1
            log.debug("client went away: %r", exc)
        except Exception:
            self.stats.failures += 1
            log.exception("connection handler failed")
        finally:
            writer.close()

    def _refuse(self, writer: asyncio.StreamWriter, exc: HttpError) -> None:
        self.stats.refused[exc.status] = self.stats.refused.get(exc.status, 0) + 1
        log.info("refused with %d: %s", exc.status, exc)
        writer.write(_error(exc.status, str(exc), close=exc.close))

    async def _answer(self, request: Request, writer: asyncio.StreamWriter) -> None:
        path = request.path.split("?", 1)[0]
        close = not request.keep_alive
        if path == "/v1/chat/completions":
            if request.method != "POST":
                raise HttpError(405, "use POST")
            await self._stream(self._body(request), writer, close=close)
        elif path in ("/v1/models", "/_fake/stats"):
            if request.method != "GET":
                raise HttpError(405, "use GET")
            writer.write(_json_response(200, self._get(path), close=close))
        else:
            raise HttpError(404, f"no route {path[:80]!r}")

    def _get(self, path: str) -> dict[str, Any]:
        if path == "/v1/models":
            return {
                "object": "list",
                "data": [{"id": FAKE_MODEL, "object": "model", "created": 0, "owned_by": "fake"}],
            }
        s = self.stats
        return {
            "requests": s.requests,
            "open_streams": s.open_streams,
            "closed_early": s.closed_early,
            "disconnects": s.disconnects,
            "failures": s.failures,
            "refused": {str(k): v for k, v in s.refused.items()},
        }

    @staticmethod
    def _body(request: Request) -> dict[str, Any]:
        try:
            body = json.loads(request.body)
        except ValueError as exc:
            raise HttpError(400, "request body is not valid JSON") from exc
        if not isinstance(body, dict):
            raise HttpError(400, "request body must be a JSON object")
        if body.get("stream") is not True:
            raise HttpError(400, 'this fake only streams: send "stream": true')
        return body

    async def _stream(self, body: dict[str, Any], writer: asyncio.StreamWriter, *, close: bool) -> None:
        script = self.script
        self.stats.requests += 1
        self.stats.open_streams += 1
        head = Script.head(
            f"chatcmpl-lean-{next(self._ids)}", int(time.time()), str(body.get("model") or FAKE_MODEL)
        )
        finished = False
        try:
            writer.write(_STREAM_HEAD + (b"connection: close\r\n\r\n" if close else b"\r\n"))
            await asyncio.sleep(script.first_token_delay)
            writer.write(_frame(head + script.role) + _frame(head + script.deltas[0]))
            for tail in script.deltas[1:]:
                await asyncio.sleep(script.delay)
                if writer.is_closing():
                    raise ConnectionResetError("client closed the stream")
                writer.write(_frame(head + tail))
                await writer.drain()
            end = _frame(head + script.finish)
            if (body.get("stream_options") or {}).get("include_usage"):
                end += _frame(head + script.usage(body))
            writer.write(end + _frame(b"data: [DONE]\n\n") + b"0\r\n\r\n")
            finished = True
        finally:
            self.stats.open_streams -= 1
            if not finished:
                self.stats.closed_early += 1


async def serve(host: str, port: int, fake: LeanFake) -> None:
    server = await asyncio.start_server(fake.handle, host, port, limit=MAX_HEAD, backlog=1024)
    print(f"lean fake LLM serving on http://{host}:{port}/v1", flush=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve the fake's text-mode stream on plain asyncio.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8009)
    parser.add_argument("--first-token-delay", type=float, default=0.0)
    parser.add_argument("--delay", type=float, default=0.0)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    fake = LeanFake(first_token_delay=args.first_token_delay, delay=args.delay)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.host, args.port, fake))


if __name__ == "__main__":
    main()
