"""``CachedEmbedder`` when the inner embedder misbehaves after it returned (the audit of 2026-11-30): a
wrong number of rows must fail the caller and every caller waiting for the same text, and leave
nothing in flight, where it used to leave the waiters' futures unsettled for good.

The callers run in daemon threads (a waiter that hangs must not keep the test process alive) and are
awaited with ``asyncio.wait_for``: its timeout is only a guard against that hang, nothing is timed."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from concurrent.futures import Future

import numpy as np
import pytest

from careerwise.knowledge.embeddings import CachedEmbedder, Matrix

HANG_GUARD = 60.0  # seconds; far beyond what the calls take, even on a loaded machine


class _OneShort:
    """Returns one row fewer than it was given texts (while ``short``), once ``release`` is set."""

    name, dim = "short", 4

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        self.calls: list[list[str]] = []
        self.short = True

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        self.calls.append(list(texts))
        self.started.set()
        assert self.release.wait(HANG_GUARD)
        rows = np.array([[len(t), 1, 2, 3] for t in texts], dtype=np.float32)
        return rows[:-1] if self.short else rows

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        raise NotImplementedError


def _call(cached: CachedEmbedder, texts: list[str]) -> asyncio.Future[Matrix]:
    """``cached.embed_queries(texts)`` in a daemon thread, as an awaitable."""
    out: Future[Matrix] = Future()

    def run() -> None:
        try:
            out.set_result(cached.embed_queries(texts))
        except Exception as exc:  # noqa: BLE001 - handed to the awaiting test, which asserts on it
            out.set_exception(exc)

    threading.Thread(target=run, daemon=True).start()
    return asyncio.wrap_future(out)


async def _until_waiting(cached: CachedEmbedder) -> None:
    """Until the second caller has registered as a waiter (it counts a hit on the text in flight)."""
    for _ in range(2000):
        if cached.hits >= 1:
            return
        await asyncio.sleep(0.005)
    raise AssertionError("the second caller never waited for the text in flight")


async def test_too_few_rows_fail_the_caller_and_the_waiter_and_the_next_call_retries() -> None:
    inner = _OneShort()
    cached = CachedEmbedder(inner)
    first = _call(cached, ["怎麼談薪水"])
    assert await asyncio.to_thread(inner.started.wait, HANG_GUARD)
    second = _call(cached, ["怎麼談薪水"])
    await _until_waiting(cached)
    inner.release.set()
    with pytest.raises(ValueError, match="returned 0 vectors for 1 texts"):
        await asyncio.wait_for(first, HANG_GUARD)
    with pytest.raises(ValueError, match="returned 0 vectors for 1 texts"):
        await asyncio.wait_for(second, HANG_GUARD)  # the old code left this one waiting forever
    assert inner.calls == [["怎麼談薪水"]] and not cached.has_all(["怎麼談薪水"])
    inner.short = False
    rows = await asyncio.wait_for(_call(cached, ["怎麼談薪水"]), HANG_GUARD)
    assert rows.shape == (1, 4) and len(inner.calls) == 2  # nothing stuck in flight: embedded again
    assert cached.has_all(["怎麼談薪水"])


async def test_a_short_batch_fails_every_text_of_it_and_caches_none() -> None:
    inner = _OneShort()
    inner.release.set()
    cached = CachedEmbedder(inner)
    with pytest.raises(ValueError, match="returned 1 vectors for 2 texts"):
        await asyncio.wait_for(_call(cached, ["a", "bb"]), HANG_GUARD)
    assert not cached.has_all(["a"]) and not cached.has_all(["bb"])
    inner.short = False
    rows = await asyncio.wait_for(_call(cached, ["a", "bb"]), HANG_GUARD)
    assert rows.shape == (2, 4) and inner.calls == [["a", "bb"], ["a", "bb"]]
