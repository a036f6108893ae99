"""The serving app freezes its start-up heap out of the garbage collector's walks (CAREERWISE_GC_FREEZE,
careerwise.memory.freeze_heap), answers as usual, and undoes it when it shuts down.

The live server runs in this process (a uvicorn thread), so the collector's freeze count is this
process's: it is read before, during and after the server's life.
"""

from __future__ import annotations

import gc
from collections.abc import Callable

import httpx

from tests.conftest import LiveServer, parse_sse
from tests.fakes.fake_llm import FakeLLM, text


def test_the_start_up_heap_is_frozen_while_serving_and_released_at_shutdown(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    assert gc.get_freeze_count() == 0
    thresholds = gc.get_threshold()
    server = live_server(gc_freeze=True, gc_gen2_threshold=thresholds[2] + 90)
    assert gc.get_threshold() == (thresholds[0], thresholds[1], thresholds[2] + 90)
    frozen = gc.get_freeze_count()
    assert frozen > 10_000  # the app, its services and the loaded knowledge base, not a handful
    fake_llm.script(text("先做功課。"))
    with httpx.Client(base_url=server.url, timeout=30) as c:
        r = c.post("/api/chat", json={"message": "怎麼談薪水？"})
    assert r.status_code == 200
    events = [name for name, _ in parse_sse(r.text)]
    assert events[-1] == "done" and "delta" in events
    # frozen once, at start-up: turns add nothing (frozen objects freed by reference counting leave it)
    assert 0 < gc.get_freeze_count() <= frozen
    server.stop()
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == thresholds


def test_no_freeze_when_turned_off(live_server: Callable[..., LiveServer]) -> None:
    thresholds = gc.get_threshold()
    live_server(gc_freeze=False, gc_gen2_threshold=0)
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == thresholds
