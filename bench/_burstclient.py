"""The burst's two clients: httpx and a lean one on raw asyncio streams.

Why a second client: 200 httpx streams in the benchmark process cost about as much CPU as the fake
provider does, on the same cores as the server being measured, so the rig would slow what it measures. The
lean client writes the HTTP/1.1 request itself and reads the (chunked) body with ``StreamReader``; the
lines it reads go through the same parsers as httpx's, so a first-text stamp is decided by the same code
whichever client read the bytes: the first ``delta`` event through CareerWise, the GUARD-th non-blank
content chunk from the provider. Both take their stamp when the line is parsed, right after its bytes are
read off the socket.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

import httpx

GUARD = 3  # the buffer guard's window: the provider's text counts as shown at its GUARD-th non-blank chunk
TIMEOUT_S = 120.0  # a whole request, as httpx's read timeout in the burst


@dataclass
class Sample:
    start_s: float  # when the request was sent, from the burst's start
    headers_ms: float | None = None
    first_ms: float | None = None  # provider: first non-blank token; ours: first delta
    shown_ms: float | None = None  # provider: GUARD-th non-blank token; ours: first delta
    end_ms: float | None = None
    error: str | None = None
    trace_id: str | None = None


class Lines(Protocol):
    """What a response's lines mean for one sample; ``close`` says whether the stream ended properly."""

    def feed(self, line: str) -> None: ...

    def close(self) -> None: ...


class ProviderLines:
    """An OpenAI-style stream: stamps the first and the GUARD-th non-blank content chunk."""

    def __init__(self, sample: Sample, t0: float) -> None:
        self.sample, self.t0 = sample, t0
        self.counted = 0
        self.finished = False

    def feed(self, line: str) -> None:
        if line == "data: [DONE]":
            self.finished = True
        elif line.startswith("data: "):
            for choice in json.loads(line[6:]).get("choices", []):
                content = (choice.get("delta") or {}).get("content")
                if content and content.strip():
                    self.counted += 1
                    now = 1000 * (time.perf_counter() - self.t0)
                    if self.counted == 1:
                        self.sample.first_ms = now
                    if self.counted == GUARD:
                        self.sample.shown_ms = now

    def close(self) -> None:
        if not self.finished:
            self.sample.error = "stream ended without [DONE]"


class OursLines:
    """CareerWise's SSE: stamps the first ``delta`` event; the ``done`` event gives the trace id."""

    def __init__(self, sample: Sample, t0: float) -> None:
        self.sample, self.t0 = sample, t0
        self.event = ""
        self.done: dict[str, object] | None = None

    def feed(self, line: str) -> None:
        sample = self.sample
        if line.startswith("event: "):
            self.event = line[7:]
        elif line.startswith("data: "):
            if self.event == "delta" and sample.first_ms is None:
                sample.first_ms = sample.shown_ms = 1000 * (time.perf_counter() - self.t0)
            elif self.event == "error" and sample.error is None:
                sample.error = f"error event {json.loads(line[6:]).get('code')}"
            elif self.event == "done":
                self.done = json.loads(line[6:])

    def close(self) -> None:
        sample, done = self.sample, self.done
        if done is None:
            sample.error = sample.error or "stream ended without a done event"
            return
        sample.trace_id = str(done.get("trace_id"))
        if done.get("status") != "ok":
            sample.error = sample.error or f"done status {done.get('status')}"
        elif sample.first_ms is None:
            sample.error = "no text"


def lines_for(*, ours: bool, sample: Sample, t0: float) -> Lines:
    return OursLines(sample, t0) if ours else ProviderLines(sample, t0)


# ---------------------------------------------------------------- httpx


async def httpx_request(
    client: httpx.AsyncClient, url: str, body: dict[str, object], lines: Lines, sample: Sample, t0: float
) -> None:
    async with client.stream("POST", url, json=body) as r:
        sample.headers_ms = 1000 * (time.perf_counter() - t0)
        if r.status_code != 200:
            sample.error = f"HTTP {r.status_code}: {(await r.aread())[:200]!r}"
            return
        async for line in r.aiter_lines():
            lines.feed(line)
    lines.close()


# ---------------------------------------------------------------- lean: raw asyncio streams

LEAN_ERRORS = (OSError, EOFError, TimeoutError, ValueError, asyncio.LimitOverrunError)
"""What a lean request can fail with (connection refused or reset, a body cut short, a timeout, bad
framing); the burst records it on the sample, as it does httpx.HTTPError."""


def request_bytes(url: str, body: dict[str, object]) -> tuple[str, int, bytes]:
    """(host, port, the bytes of a JSON POST to ``url``), for a client that writes to the socket itself."""
    parts = urlsplit(url)
    if parts.scheme != "http" or parts.hostname is None:
        raise ValueError(f"the lean client speaks plain http only, not {url!r}")
    port = parts.port or 80
    payload = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    head = (
        f"POST {parts.path or '/'} HTTP/1.1\r\nHost: {parts.hostname}:{port}\r\nAccept: */*\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
    )
    return parts.hostname, port, head.encode("latin-1") + payload


async def _head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    raw = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    status_line = raw[0].split(" ", 2)
    if len(status_line) < 2 or not status_line[1].isdigit():
        raise ValueError(f"bad status line {raw[0][:80]!r}")
    headers = {}
    for line in raw[1:]:
        name, _, value = line.partition(":")
        if name:
            headers[name.strip().lower()] = value.strip()
    return int(status_line[1]), headers


class _Body:
    """The response body as it arrives, de-chunked: one ``next_piece`` a transfer chunk (or read)."""

    def __init__(self, reader: asyncio.StreamReader, headers: dict[str, str]) -> None:
        self.reader = reader
        self.chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        length = headers.get("content-length")
        self.left = int(length) if length is not None and not self.chunked else -1
        self.done = False

    async def next_piece(self) -> bytes:
        """The next bytes of the body, b"" at its end."""
        if self.done:
            return b""
        if self.chunked:
            size_line = await self.reader.readuntil(b"\r\n")
            size = int(size_line.split(b";", 1)[0], 16)
            if size == 0:
                await self.reader.readuntil(b"\r\n")  # no trailers are sent: the empty line ends it
                self.done = True
                return b""
            return (await self.reader.readexactly(size + 2))[:-2]
        if self.left == 0:
            self.done = True
            return b""
        piece = await self.reader.read(65536 if self.left < 0 else min(65536, self.left))
        if not piece:
            if self.left > 0:
                raise EOFError(f"body cut short, {self.left} bytes missing")
            self.done = True
        elif self.left > 0:
            self.left -= len(piece)
        return piece


async def lean_request(url: str, body: dict[str, object], lines: Lines, sample: Sample, t0: float) -> None:
    """One POST on its own connection, closed afterwards (as the httpx client without keep-alive)."""
    host, port, request = request_bytes(url, body)
    async with asyncio.timeout(TIMEOUT_S):
        reader, writer = await asyncio.open_connection(host, port)
        try:
            writer.write(request)
            status, headers = await _head(reader)
            sample.headers_ms = 1000 * (time.perf_counter() - t0)
            response = _Body(reader, headers)
            if status != 200:
                text = b""
                while len(text) < 200 and (piece := await response.next_piece()):
                    text += piece
                sample.error = f"HTTP {status}: {text[:200]!r}"
                return
            pending = b""
            while piece := await response.next_piece():
                pending += piece
                *complete, pending = pending.split(b"\n")
                for raw in complete:
                    lines.feed(raw.rstrip(b"\r").decode("utf-8"))
            if pending:
                lines.feed(pending.rstrip(b"\r").decode("utf-8"))
        finally:
            writer.close()
    lines.close()
