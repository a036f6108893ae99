"""Issue #10: the chat stream's own ASGI response (``api/_sse.py``, ``EventStreamResponse``).

It replaces Starlette's ``StreamingResponse`` for ``POST /api/chat`` to save the anyio task group a
request; these tests pin what must not change with it: the same headers, every frame in order as its own
write, keep-alive comments passed through, a client that leaves cancels what the body reads from (the
engine), a cancellation from outside is not swallowed, and nothing is left running. Nothing is timed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from starlette.responses import StreamingResponse

from careerwise.api._sse import KEEPALIVE, EventStreamResponse, sse_with_keepalive
from careerwise.events import DeltaEvent, DoneEvent, Event, event_to_sse

SCOPE: dict[str, Any] = {"type": "http", "method": "POST", "path": "/api/chat", "headers": []}
DONE = DoneEvent(
    conversation_id="c" * 32, message_id="m" * 32, trace_id="t" * 32, status="ok", path="B", usage={}
)


class Client:
    """The server side of one request: records what was sent; ``leave()`` makes ``receive`` answer
    ``http.disconnect`` (as uvicorn does when the peer closes)."""

    def __init__(self, *, leave_after_writes: int | None = None) -> None:
        self.sent: list[dict[str, Any]] = []
        self.gone = asyncio.Event()
        self.leave_after_writes = leave_after_writes

    async def receive(self) -> dict[str, Any]:
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)
        bodies = sum(1 for m in self.sent if m["type"] == "http.response.body")
        if self.leave_after_writes is not None and bodies >= self.leave_after_writes:
            self.gone.set()

    @property
    def bodies(self) -> list[bytes]:
        return [m["body"] for m in self.sent if m["type"] == "http.response.body"]


class Body:
    """An async generator of frames that can wait forever after them; records whether it was closed
    and whether that was a cancellation (what the engine sees when a client leaves)."""

    def __init__(self, frames: list[bytes], *, then_wait: bool = False) -> None:
        self.frames = frames
        self.then_wait = then_wait
        self.cancelled = False
        self.closed = False
        self.waiting = asyncio.Event()  # every frame was taken and the body waits for more

    async def run(self) -> AsyncIterator[bytes]:
        try:
            for f in self.frames:
                yield f
            if self.then_wait:
                self.waiting.set()
                await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        finally:
            self.closed = True


def _others() -> set[asyncio.Task[Any]]:
    return {t for t in asyncio.all_tasks() if t is not asyncio.current_task()}


async def test_writes_the_prefix_then_each_frame_in_order_and_ends_the_body() -> None:
    frames = [b"event: delta\ndata: 1\n\n", KEEPALIVE, b"event: done\ndata: 2\n\n"]
    body = Body(frames)
    client = Client()
    await EventStreamResponse(body.run(), prefix=b"event: route\ndata: 0\n\n")(
        SCOPE, client.receive, client.send
    )
    assert client.sent[0]["type"] == "http.response.start" and client.sent[0]["status"] == 200
    assert client.bodies == [b"event: route\ndata: 0\n\n", *frames, b""]
    assert [m.get("more_body") for m in client.sent[1:]] == [True, True, True, True, False]
    assert body.closed and not body.cancelled
    assert not _others()  # the disconnect watcher is gone


async def test_the_headers_are_those_starlette_sent() -> None:
    theirs = StreamingResponse(
        Body([]).run(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
    client = Client()
    await EventStreamResponse(Body([]).run())(SCOPE, client.receive, client.send)
    assert sorted(client.sent[0]["headers"]) == sorted(theirs.raw_headers)


async def test_a_client_that_leaves_cancels_the_body_and_the_response_ends_normally() -> None:
    body = Body([b"a", b"b"], then_wait=True)
    client = Client(leave_after_writes=2)  # leaves after the prefix and the first frame
    await asyncio.wait_for(
        EventStreamResponse(body.run(), prefix=b"p")(SCOPE, client.receive, client.send), timeout=10
    )
    assert body.cancelled and body.closed
    assert client.bodies[:2] == [b"p", b"a"]
    assert b"" not in client.bodies  # no end of body after the client left
    assert not _others()


async def test_leaving_cancels_the_engine_behind_the_keepalive_writer() -> None:
    """The chat's real body: sse_with_keepalive reading the engine's events in a task of its own."""
    engine_cancelled = asyncio.Event()

    async def engine() -> AsyncIterator[Event]:
        try:
            yield DeltaEvent(text="面試", phase=1)
            await asyncio.Event().wait()  # the provider is slow
            yield DONE
        except asyncio.CancelledError:
            engine_cancelled.set()
            raise

    client = Client(leave_after_writes=1)
    frames = sse_with_keepalive(engine(), 60.0)
    await asyncio.wait_for(EventStreamResponse(frames)(SCOPE, client.receive, client.send), timeout=10)
    assert engine_cancelled.is_set()
    assert client.bodies == [event_to_sse(DeltaEvent(text="面試", phase=1))]
    assert not _others()


async def test_a_cancellation_from_outside_is_not_swallowed() -> None:
    body = Body([b"a"], then_wait=True)
    client = Client()
    task = asyncio.create_task(EventStreamResponse(body.run())(SCOPE, client.receive, client.send))
    await body.waiting.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert body.cancelled and body.closed
    assert not _others()


async def test_a_write_error_ends_the_response_and_closes_the_body(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="careerwise.api._sse")
    body = Body([b"a", b"b"], then_wait=True)
    client = Client()

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            raise OSError("connection reset")  # an ASGI 2.4 server whose client left
        await client.send(message)

    await asyncio.wait_for(EventStreamResponse(body.run())(SCOPE, client.receive, send), timeout=10)
    assert body.closed
    assert "went away" in caplog.text
    assert not _others()


async def test_a_disconnect_after_the_last_write_changes_nothing() -> None:
    body = Body([b"a"])
    client = Client(leave_after_writes=2)  # "leaves" on the final empty write, as uvicorn reports it
    await EventStreamResponse(body.run())(SCOPE, client.receive, client.send)
    assert client.bodies == [b"a", b""]
    assert body.closed and not body.cancelled
