"""Issue #10: a chat stream that has fallen behind writes the frames already waiting in one socket write.

"Behind" is made here by blocking the event loop after a write (as hundreds of other streams would), so
the next frame has waited longer than ``coalesce_behind``. Nothing is measured: the tests check which
frames share a write, that the frames and their order never change, and that nothing is held back.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest

from careerwise.api._sse import sse_with_keepalive
from careerwise.events import DeltaEvent, DoneEvent, Event, event_to_sse
from tests.conftest import parse_sse

DONE = DoneEvent(
    conversation_id="c" * 32, message_id="m" * 32, trace_id="t" * 32, status="ok", path="B", usage={}
)
ITEMS: list[Event] = [
    DeltaEvent(text="面試", phase=1),
    DeltaEvent(text="前先", phase=1),
    DeltaEvent(text="研究", phase=1),
    DeltaEvent(text="公司", phase=1),
    DONE,
]
FRAMES = [event_to_sse(e) for e in ITEMS]


async def _events(*items: Event, fail: bool = False) -> AsyncIterator[Event]:
    for item in items:
        yield item
    if fail:
        raise RuntimeError("a bug in the engine")


async def _writes(behind: float, *, stall: float, flush: float = 0.0, fail: bool = False) -> list[bytes]:
    """Every write, the loop blocked for ``stall`` seconds after each one (a loaded process)."""
    writes = []
    async for w in sse_with_keepalive(
        _events(*ITEMS, fail=fail), 60.0, flush_interval=flush, coalesce_behind=behind
    ):
        writes.append(w)
        time.sleep(stall)  # noqa: ASYNC251 - blocking on purpose: the loop falls behind
    return writes


async def test_frames_that_waited_go_out_together_and_stay_the_same_frames() -> None:
    writes = await _writes(0.05, stall=0.2)
    # the first text goes at once and alone; the rest waited behind the stalled loop: one write
    assert writes == [FRAMES[0], b"".join(FRAMES[1:])]
    assert parse_sse(b"".join(writes).decode()) == parse_sse(b"".join(FRAMES).decode())


async def test_a_stream_that_keeps_up_or_zero_writes_each_frame_alone() -> None:
    assert await _writes(0.05, stall=0.0) == FRAMES  # never behind: nothing shares a write
    assert await _writes(0.0, stall=0.2) == FRAMES  # behind, but coalescing is off


async def test_with_a_flush_interval_the_batching_handles_what_follows_the_first_text() -> None:
    # the first text is written alone and starts the batching; the rest goes out with `done`
    writes = await _writes(0.05, stall=0.2, flush=60.0)
    assert b"".join(writes) == b"".join(FRAMES)
    assert writes[0] == FRAMES[0]


async def test_a_failure_after_the_coalesced_frames_still_raises() -> None:
    with pytest.raises(RuntimeError, match="a bug in the engine"):
        await _writes(0.05, stall=0.2, fail=True)
