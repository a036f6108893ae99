"""The paced wait between two reads of a streamed answer.

:func:`pause` waits the given seconds as a plain sleep, so a client that goes away cancels it at once.
Meanwhile, on the SDK's aiohttp transport, reading from the socket is paused (:func:`flow_control`): the
kernel keeps what the provider sends and the event loop is not woken for each chunk; on any other
transport, or a layout this code does not know, the wait is only the sleep. A read shorter than
:data:`FULL_READ` left nothing behind in the transport's buffer.
"""

from __future__ import annotations

import asyncio
from typing import Protocol, cast

from careerwise.llm.types import StreamPacing

# The SDK's aiohttp transport reads at most this much at a time; a read this long left more behind.
FULL_READ = 16 * 1024


class FlowControl(Protocol):
    def pause_reading(self) -> None: ...
    def resume_reading(self) -> None: ...


def flow_control(http_response: object) -> FlowControl | None:
    """The aiohttp connection under the SDK's response, whose reading from the socket can be paused, or
    None (another transport, or a layout this code does not know: the wait is then a plain sleep).

    Paused, the kernel keeps what the provider sends and the loop is not woken for each chunk; resumed,
    one socket read takes it all. Do not 'simplify' to a sleep only: the per-chunk wake-ups it saves are
    a large part of what pacing is for (docs/decisions/0008-stream-pacing.md)."""
    stream = getattr(http_response, "stream", None)
    stream = getattr(stream, "_stream", stream)  # httpx2's BoundAsyncStream around the transport's stream
    raw = getattr(stream, "_aiohttp_response", None)  # the SDK's vendored httpx_aiohttp transport
    protocol = getattr(getattr(raw, "connection", None), "protocol", None)
    if callable(getattr(protocol, "pause_reading", None)) and callable(
        getattr(protocol, "resume_reading", None)
    ):
        return cast(FlowControl, protocol)
    return None


async def pause(pacing: StreamPacing, seconds: float, http_response: object) -> None:
    """The paced wait before the next read. A plain sleep, so a client that goes away cancels it at
    once and the ``async with`` above closes the upstream response."""
    if seconds <= 0:
        return
    pacing.waits += 1
    socket_reads = flow_control(http_response)  # None once aiohttp has the whole body and let go
    if socket_reads is None:
        await asyncio.sleep(seconds)
        return
    socket_reads.pause_reading()  # aiohttp's own flow control; it also stops the read timeout meanwhile
    try:
        await asyncio.sleep(seconds)
    finally:
        socket_reads.resume_reading()
