"""Issue #10: after the first text, a chat stream's SSE frames share socket writes; the frames stay the same.

The writes are counted at the ASGI boundary (each non-empty ``http.response.body`` message is one
``send()`` to the socket), under a real uvicorn server so no test transport buffers the stream.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from careerwise.api._sse import sse_with_keepalive
from careerwise.events import DeltaEvent, DoneEvent, Event, ToolCallEvent, event_to_sse
from careerwise.services import Services
from tests.conftest import LiveServer, client, parse_sse
from tests.fakes.fake_llm import FakeLLM, text

ANSWER = "一二三四五六七八九十" * 4  # 20 chunks of 2 characters, 20 ms apart: the benchmark's pace
VARYING = re.compile(r"(_id|_ms)$|^(usage|duration|elapsed)")  # ids and timings differ between turns


class BodyWrites:
    """Pass-through ASGI wrapper keeping every non-empty response body that ``/api/chat`` sends."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.writes: list[bytes] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != "/api/chat":
            await self.app(scope, receive, send)
            return

        async def counting_send(message: Message) -> None:
            if message["type"] == "http.response.body" and message.get("body"):
                self.writes.append(bytes(message["body"]))
            await send(message)

        await self.app(scope, receive, counting_send)


@pytest.fixture
def counted_server(
    make_server_services: Callable[..., Services],
) -> Iterator[Callable[[int], tuple[LiveServer, BodyWrites]]]:
    servers: list[LiveServer] = []

    def factory(flush_ms: int) -> tuple[LiveServer, BodyWrites]:
        # coalescing-when-behind off: a stalled server thread must not merge writes this test counts
        server = LiveServer(make_server_services(sse_flush_interval_ms=flush_ms, sse_coalesce_behind_ms=0))
        writes = BodyWrites(server.app)
        server.server.config.app = writes  # uvicorn loads its app when it starts
        servers.append(server.start())
        return server, writes

    yield factory
    for s in servers:
        s.stop()


def _normalised(events: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    return [(name, {k: v for k, v in data.items() if not VARYING.search(k)}) for name, data in events]


def _stream(server: LiveServer, writes: BodyWrites, fake_llm: FakeLLM) -> list[bytes]:
    fake_llm.script(text(ANSWER, chunk_size=2, delay=0.02))
    with client(server) as c:
        r = c.post("/api/chat", json={"message": "面試要怎麼準備"})
    assert r.status_code == 200
    assert r.content == b"".join(writes.writes)
    return list(writes.writes)


def test_frames_share_writes_and_stay_the_same_frames(
    fake_llm: FakeLLM, counted_server: Callable[[int], tuple[LiveServer, BodyWrites]]
) -> None:
    unbatched = _stream(*counted_server(0), fake_llm)
    batched = _stream(*counted_server(1000), fake_llm)

    plain = parse_sse(b"".join(unbatched).decode())
    joined = parse_sse(b"".join(batched).decode())
    names = [n for n, _ in plain]
    assert names[0] == "route" and names[-1] == "done" and names.count("delta") >= 20
    # one write per frame without batching; far fewer with it, carrying the same frames in the same order
    assert len(unbatched) == len(plain)
    assert len(batched) < len(plain) // 2
    assert _normalised(joined) == _normalised(plain)
    assert "".join(str(d["text"]) for n, d in joined if n == "delta") == ANSWER

    # the first text is not held: the write that carries the first delta carries nothing after it
    first_text = next(i for i, w in enumerate(batched) if b"event: delta" in w)
    assert parse_sse(batched[first_text].decode())[-1][0] == "delta"
    assert batched[first_text].count(b"event: delta") == 1
    # `done` is written as soon as it arrives, with whatever was pending, and ends the last write
    assert parse_sse(batched[-1].decode())[-1][0] == "done"


# --------------------------------------------------------------------------- the frame writer itself


async def _events(*items: Event) -> AsyncIterator[Event]:
    for item in items:
        yield item


def _delta(t: str) -> DeltaEvent:
    return DeltaEvent(text=t, phase=1)


DONE = DoneEvent(
    conversation_id="c" * 32, message_id="m" * 32, trace_id="t" * 32, status="ok", path="B", usage={}
)
CALL = ToolCallEvent(
    call_id="1", name="searchKnowledge", requested_arguments={}, effective_arguments={}, reason="as requested"
)


async def test_held_frames_go_out_with_the_next_frame_that_may_not_wait() -> None:
    items: list[Event] = [
        _delta(""),  # an empty delta is no visible text: it does not start the batching
        _delta("a"),
        _delta("b"),
        CALL,
        _delta("c"),
        DONE,
    ]
    writes = [w async for w in sse_with_keepalive(_events(*items), 60.0, flush_interval=60.0)]
    frames = [event_to_sse(e) for e in items]
    # the empty delta and the first text go alone; b waits for the tool call; c is flushed with done
    assert writes == [frames[0], frames[1], frames[2] + frames[3], frames[4] + frames[5]]


async def test_a_pending_batch_is_written_when_the_stream_ends() -> None:
    items = [_delta("a"), _delta("b"), _delta("c")]
    writes = [w async for w in sse_with_keepalive(_events(*items), 60.0, flush_interval=60.0)]
    assert writes == [event_to_sse(items[0]), event_to_sse(items[1]) + event_to_sse(items[2])]


async def test_text_already_sent_by_the_caller_starts_the_batching_and_zero_turns_it_off() -> None:
    items: list[Event] = [_delta("a"), _delta("b"), DONE]
    frames = [event_to_sse(e) for e in items]
    held = [w async for w in sse_with_keepalive(_events(*items), 60.0, flush_interval=60.0, text_sent=True)]
    assert held == [b"".join(frames)]
    off = [w async for w in sse_with_keepalive(_events(*items), 60.0, flush_interval=0.0, text_sent=True)]
    assert off == frames
