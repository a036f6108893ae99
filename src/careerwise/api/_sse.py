"""The chat stream's bytes: one SSE frame per event, and a comment line when the stream has been silent.

A deep answer on the embedded model can spend a minute in one LLM call. The flows send a ``waiting``
progress event every ``deep_heartbeat_interval`` seconds, but other flows (or a slow first token) can still
leave the connection idle, and some proxies close a connection that carries nothing for 30-60 s. So when no
event was sent for ``sse_keepalive_interval`` seconds, a comment line (``: keep-alive``) goes out: the SSE
format says clients ignore it (chat-api.js does), and it never changes which events arrive or their order.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

from careerwise.events import Event, event_to_sse

log = logging.getLogger(__name__)

KEEPALIVE = b": keep-alive\n\n"


async def sse_with_keepalive(events: AsyncIterator[Event], interval: float) -> AsyncIterator[bytes]:
    """``events`` as SSE frames, in order, with :data:`KEEPALIVE` after every ``interval`` seconds without
    one. The events are read by one task (so the engine's generator runs in one context from its second
    event to its end); when the client goes, that task is cancelled and awaited: the engine sees the
    cancellation as before and stores the turn as cancelled, and nothing is left running."""
    queue: asyncio.Queue[Event | None] = asyncio.Queue()  # None: the events ended

    async def drain() -> None:
        try:
            async for event in events:
                queue.put_nowait(event)
        finally:
            queue.put_nowait(None)

    task = asyncio.create_task(drain(), name="careerwise-sse-drain")
    try:
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), timeout=interval)
            except TimeoutError:
                yield KEEPALIVE
                continue
            if item is None:
                break
            yield event_to_sse(item)
        task.result()  # the engine turns its failures into events; anything else is a bug: raise it
    finally:
        if not task.done():
            task.cancel()
            await asyncio.wait({task})
