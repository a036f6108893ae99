"""Failures of work nobody awaits (``careerwise.tracing.background``, the audit of 2026-11-30): logged
with their context by the site's own logger and counted in
``careerwise_background_task_failures_total{task}``, which every app's ``/metrics`` reads.

The tally is process-wide (some of these run before any app exists), so the tests compare counts
before and after rather than absolute values."""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import Future

import pytest
from prometheus_client.parser import text_string_to_metric_families

from careerwise.channels.line import LineChannel
from careerwise.flows import tool_use
from careerwise.memory import Glibc, limit_arenas
from careerwise.tracing import background
from careerwise.tracing.metrics import Metrics

log = logging.getLogger("careerwise.test_background")


def _scraped(metrics: Metrics, task: str) -> float:
    for family in text_string_to_metric_families(metrics.render().decode()):
        for s in family.samples:
            if s.name == "careerwise_background_task_failures_total" and s.labels["task"] == task:
                return s.value
    raise AssertionError(f"no careerwise_background_task_failures_total{{task={task!r}}} in the scrape")


async def _failing() -> None:
    raise OSError("the weights file is truncated")


async def test_a_failed_task_is_logged_with_its_context_counted_and_scraped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    metrics = Metrics()
    before = background.failure_counts()[background.LOCAL_MODEL_WARM]
    assert _scraped(metrics, background.LOCAL_MODEL_WARM) == before  # there before the first failure
    task = asyncio.create_task(_failing())
    await asyncio.wait({task})
    with caplog.at_level(logging.ERROR, logger=log.name):
        exc = background.task_failed(
            task, task=background.LOCAL_MODEL_WARM, logger=log, what="the local model failed to load"
        )
    assert isinstance(exc, OSError)
    assert "the local model failed to load: the weights file is truncated" in caplog.text
    assert caplog.records[-1].exc_info is not None  # with the traceback
    assert background.failure_counts()[background.LOCAL_MODEL_WARM] == before + 1
    assert _scraped(metrics, background.LOCAL_MODEL_WARM) == before + 1


async def test_a_cancelled_or_successful_task_is_neither_logged_nor_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    before = background.failure_counts()
    cancelled = asyncio.create_task(asyncio.Event().wait())
    await asyncio.sleep(0)
    cancelled.cancel()
    done = asyncio.create_task(asyncio.sleep(0))
    await asyncio.wait({cancelled, done})
    with caplog.at_level(logging.DEBUG, logger=log.name):
        for t in (cancelled, done):
            assert background.task_failed(t, task=background.TOOL_WARM, logger=log, what="x") is None
    assert background.failure_counts() == before and not caplog.records


def test_a_failed_thread_future_is_counted_too() -> None:
    before = background.failure_counts()[background.BM25_BESIDE_EMBEDDING]
    done: Future[None] = Future()
    done.set_exception(MemoryError("postings"))
    exc = background.task_failed(done, task=background.BM25_BESIDE_EMBEDDING, logger=log, what="bm25")
    assert isinstance(exc, MemoryError)
    assert background.failure_counts()[background.BM25_BESIDE_EMBEDDING] == before + 1


async def test_a_failed_search_warm_up_is_logged_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    """``flows/tool_use.py``: the warm-up's done-callback, as the flow registers it."""
    before = background.failure_counts()[background.TOOL_WARM]
    task = asyncio.create_task(_failing(), name="careerwise-warm-searchKnowledge")
    tool_use._WARMING.add(task)
    await asyncio.wait({task})
    with caplog.at_level(logging.WARNING, logger="careerwise.flows.tool_use"):
        tool_use._warm_done(task)
    assert task not in tool_use._WARMING
    assert "careerwise-warm-searchKnowledge failed (the tool's run will try again)" in caplog.text
    assert background.failure_counts()[background.TOOL_WARM] == before + 1


def test_a_refused_arena_limit_is_counted(caplog: pytest.LogCaptureFixture) -> None:
    refusing = Glibc(mallopt=lambda option, value: 0, malloc_trim=lambda pad: 1)
    before = background.failure_counts()[background.MALLOC_ARENA_LIMIT]
    with caplog.at_level(logging.ERROR, logger="careerwise.memory"):
        assert limit_arenas(2, libc=refusing) is False
    assert "mallopt(M_ARENA_MAX, 2) failed" in caplog.text
    assert background.failure_counts()[background.MALLOC_ARENA_LIMIT] == before + 1
    assert limit_arenas(0, libc=refusing) is False  # 0 asks nothing: no failure
    assert background.failure_counts()[background.MALLOC_ARENA_LIMIT] == before + 1


async def test_a_failed_line_chat_worker_is_counted_by_the_channel_and_the_tally(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``channels/line/worker.py``: the chat queue's done-callback. Only the callback is under test, so the
    channel is made without its LINE client (the callback touches nothing else)."""
    channel = LineChannel.__new__(LineChannel)
    channel.failures = 0
    before = background.failure_counts()[background.LINE_CHAT_QUEUE]
    task = asyncio.create_task(_failing(), name="line-chat-0123456789ab")
    await asyncio.wait({task})
    with caplog.at_level(logging.ERROR, logger="careerwise.channels.line"):
        channel._worker_done(task)
    assert channel.failures == 1
    assert "line channel: line-chat-0123456789ab failed: the weights file is truncated" in caplog.text
    assert background.failure_counts()[background.LINE_CHAT_QUEUE] == before + 1
