"""The chat stream's bytes: one SSE frame per event, a comment line when the stream has been silent, and
frames written to the socket in small batches once the answer's text is flowing.

A deep answer on the embedded model can spend a minute in one LLM call. The flows send a ``waiting``
progress event every ``deep_heartbeat_interval`` seconds, but other flows (or a slow first token) can still
leave the connection idle, and some proxies close a connection that carries nothing for 30-60 s. So when no
event was sent for ``sse_keepalive_interval`` seconds, a comment line (``: keep-alive``) goes out: the SSE
format says clients ignore it (chat-api.js does), and it never changes which events arrive or their order.

Batching (``sse_flush_interval_ms``, off by default) cuts system calls and packets when many streams
run at once (docs/benchmarks.md has what it did and did not change). After the first visible text has been written (at once: the time to first text must not grow),
``delta``, ``progress`` and ``tool_result`` frames that become ready within ``flush_interval`` seconds of
the first pending one are joined and written together. Every event
stays its own frame, in order, so a client parses exactly the same stream (DESIGN principle 1); only the
number of writes changes. Frames that change what the user sees or how the turn ends (``route``,
``tool_call``, ``report``, ``degraded``, ``error``, ``done``) are never held: they go out at once with
whatever is pending, and the pending batch is always written before the stream ends.

Coalescing when behind (``sse_coalesce_behind_ms``, on by default): a frame whose event has waited that
long to be written means the process is behind (hundreds of streams at once); the frames already waiting
then share its write. Nothing is held for it, so it never delays text; it only keeps a loaded process from
paying a system call and a pass through the ASGI stack per frame.

The response (:class:`EventStreamResponse`) writes the frames straight to the server's ``send``. Starlette's
``StreamingResponse`` does the same work but, under uvicorn (ASGI spec 2.3), through an anyio task group
(a task, a cancel scope and its bookkeeping a request) to watch for the client leaving; here that is one
plain asyncio task that cancels the writer when the client goes, so the engine still sees the
cancellation and stores the turn as cancelled.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from careerwise.events import DeltaEvent, Event, event_to_sse

log = logging.getLogger(__name__)

KEEPALIVE = b": keep-alive\n\n"

HOLDABLE = frozenset({"delta", "progress", "tool_result"})
"""Event types whose frames may wait up to the flush interval for company; every other type flushes."""


async def sse_with_keepalive(
    events: AsyncIterator[Event],
    interval: float,
    *,
    flush_interval: float = 0.0,
    text_sent: bool = False,
    coalesce_behind: float = 0.0,
) -> AsyncIterator[bytes]:
    """``events`` as SSE frames, in order, with :data:`KEEPALIVE` after every ``interval`` seconds without
    one. Each yielded ``bytes`` is one write to the socket: one frame, or (``flush_interval`` > 0, after
    the first non-empty ``delta``; ``text_sent`` says the caller already wrote one) several frames joined.

    ``coalesce_behind`` > 0: when the frame about to be written has waited that many seconds since its
    event was ready, the writer is behind (a loaded event loop) and every frame already waiting goes out in
    the same write. Nothing ever waits for this, so the first text is never held; it only stops a loaded
    process from spending a system call and a pass through the ASGI stack on every frame, which is what
    kept it behind (issue #10, docs/benchmarks.md).

    The events are read by one task (so the engine's generator runs in one context from its second
    event to its end); when the client goes, that task is cancelled and awaited: the engine sees the
    cancellation as before and stores the turn as cancelled, and nothing is left running."""
    loop = asyncio.get_running_loop()
    # (event, when it was ready); None: the events ended
    queue: asyncio.Queue[tuple[Event, float] | None] = asyncio.Queue()

    async def drain() -> None:
        try:
            async for event in events:
                queue.put_nowait((event, loop.time()))
        finally:
            queue.put_nowait(None)

    async def next_item(within: float) -> tuple[Event, float] | None:
        # a ready item is taken without arming a timer: under load most chunks are already queued
        if not queue.empty():
            return queue.get_nowait()
        if within <= 0:
            raise TimeoutError
        async with asyncio.timeout(within):  # a timer handle, not a Task per call as wait_for on 3.11
            return await queue.get()

    batching = text_sent and flush_interval > 0
    task = asyncio.create_task(drain(), name="careerwise-sse-drain")
    pending: list[bytes] = []
    deadline = 0.0  # when the pending frames must be written
    ended = False
    try:
        while not ended:
            try:
                got = await next_item(deadline - loop.time() if pending else interval)
            except TimeoutError:
                # the window closed (frames pending) or the stream was silent (nothing pending)
                yield _take(pending) if pending else KEEPALIVE
                continue
            if got is None:
                break
            item, ready_at = got
            frame = event_to_sse(item)
            if not batching:
                if coalesce_behind > 0 and not queue.empty() and loop.time() - ready_at >= coalesce_behind:
                    frames, shown, ended = _ready_frames(queue, [frame], item)
                    yield b"".join(frames)
                else:
                    shown = isinstance(item, DeltaEvent) and bool(item.text)
                    yield frame
                batching = flush_interval > 0 and shown
                continue
            if not pending:
                deadline = loop.time() + flush_interval
            pending.append(frame)
            if item.type not in HOLDABLE:
                yield _take(pending)
        if pending:
            yield _take(pending)
        task.result()  # the engine turns its failures into events; anything else is a bug: raise it
    finally:
        if not task.done():
            task.cancel()
            await asyncio.wait({task})


def _ready_frames(
    queue: asyncio.Queue[tuple[Event, float] | None], frames: list[bytes], first: Event
) -> tuple[list[bytes], bool, bool]:
    """``frames`` plus the frames of every event already queued, in order; whether any of them is visible
    text (it starts the batching), and whether the events ended among them."""
    shown = isinstance(first, DeltaEvent) and bool(first.text)
    while not queue.empty():
        got = queue.get_nowait()
        if got is None:
            return frames, shown, True
        event = got[0]
        frames.append(event_to_sse(event))
        shown = shown or (isinstance(event, DeltaEvent) and bool(event.text))
    return frames, shown, False


def _take(pending: list[bytes]) -> bytes:
    """The pending frames as one write, emptying the list."""
    data = b"".join(pending)
    pending.clear()
    return data


EVENT_STREAM_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),  # nginx: pass each frame on at once
    (b"content-type", b"text/event-stream; charset=utf-8"),
)
"""What ``StreamingResponse(media_type="text/event-stream", headers={Cache-Control, X-Accel-Buffering})``
sent, byte for byte (tests/unit/test_event_stream_response.py compares the two)."""


class EventStreamResponse(Response):
    """An ASGI response that writes ``prefix`` and then each chunk of ``body`` as one ``http.response.body``
    message, and stops (closing ``body``, which cancels whatever it reads from) when the client leaves.

    Why not Starlette's ``StreamingResponse``: see the module docstring. The client's leaving is seen two
    ways: a server that keeps ASGI 2.3 (uvicorn) answers ``receive()`` with ``http.disconnect``, which a
    watcher task turns into a cancellation of this (the request's) task at its next ``await``; a server
    that keeps 2.4 may raise ``OSError`` from ``send``. Either way the response returns normally, as
    Starlette's did, so the middlewares see a completed 200 (the stored turn says "cancelled").
    """

    status_code = 200
    media_type = "text/event-stream"

    def __init__(self, body: AsyncIterator[bytes], *, prefix: bytes = b"") -> None:
        # Response's own __init__ renders a body and builds headers; neither applies (StreamingResponse
        # does not call it either). A Response subclass so FastAPI passes it through as it is.
        self.frames = body
        self.prefix = prefix
        self.raw_headers = list(EVENT_STREAM_HEADERS)
        self.background = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        writer = asyncio.current_task()
        assert writer is not None  # an ASGI app always runs in a task
        state = _StreamState()
        watcher = asyncio.create_task(_watch_disconnect(receive, writer, state), name="careerwise-sse-watch")
        try:
            await self._write(send, state)
        except asyncio.CancelledError:
            # our own cancellation (the client left) ends the response quietly; any other one goes on
            if not state.cancelled_by_watcher:
                raise
            state.own_cancel_pending = False
            if writer.uncancel() > 0:
                raise
        except OSError:
            log.info("chat stream: the client went away during a write (the server raised OSError)")
        finally:
            state.finished = True
            try:
                await _stop_watcher(watcher, writer, state)
            finally:
                await _close(self.frames)
        if self.background is not None:
            await self.background()

    async def _write(self, send: Send, state: _StreamState) -> None:
        start: Message = {
            "type": "http.response.start",
            "status": self.status_code,
            "headers": self.raw_headers,
        }
        await send(start)
        if self.prefix:
            await send({"type": "http.response.body", "body": self.prefix, "more_body": True})
        async for chunk in self.frames:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        state.finished = True  # from here on a disconnect is the normal end, not a reason to cancel
        await send({"type": "http.response.body", "body": b"", "more_body": False})


class _StreamState:
    __slots__ = ("cancelled_by_watcher", "finished", "own_cancel_pending")

    def __init__(self) -> None:
        self.finished = False
        self.cancelled_by_watcher = False
        self.own_cancel_pending = False  # the watcher's cancel of the writer, not yet taken back


async def _stop_watcher(
    watcher: asyncio.Task[None], writer: asyncio.Task[object], state: _StreamState
) -> None:
    """Cancel the disconnect watcher and wait for it to end.

    Awaiting a cancelled task raises ``CancelledError`` in the awaiting one, which is expected and not
    ours to pass on; but the same exception also arrives when the request task itself is cancelled
    while it waits here (the server shutting down), and that one must go on, or the cancellation is
    lost and the task ends as if it had finished. ``writer.cancelling()`` tells the two apart: it counts
    the cancel requests on the request task that nobody took back (the watcher's own, if it is still
    pending, is taken back here: the client left, and the response ends quietly as documented)."""
    watcher.cancel()
    try:
        await watcher
    except asyncio.CancelledError:
        if state.own_cancel_pending:  # the watcher's cancel arrived here rather than during a write
            state.own_cancel_pending = False
            if writer.uncancel() > 0:
                raise
        elif writer.cancelling() > 0:
            raise


async def _watch_disconnect(receive: Receive, writer: asyncio.Task[object], state: _StreamState) -> None:
    """Wait for ``http.disconnect`` and cancel ``writer`` unless the response is already complete."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
    if not state.finished:
        state.cancelled_by_watcher = True
        state.own_cancel_pending = True
        writer.cancel()


async def _close(body: AsyncIterator[bytes]) -> None:
    """Close the body generator now (its ``finally`` cancels the engine's task), not whenever the garbage
    collector finalises it."""
    aclose = getattr(body, "aclose", None)
    if aclose is not None:
        await aclose()
