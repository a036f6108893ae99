"""A loop-lag probe that keeps failing (src/careerwise/loadwatch.py): logged and counted once per retry,
never restarted by every paced read (the failure-handling audit of 2026-11-30).

No assertion depends on how late a timer fires: the probe's failure is its first ``observe``, and the
tests only check which tasks exist and what was counted."""

from __future__ import annotations

import asyncio
import logging

import pytest
from prometheus_client import CollectorRegistry

from careerwise.loadwatch import LoopLagProbe, StreamPace

BASE, CAP = 0.1, 0.4


class _Broken(StreamPace):
    """A pace whose update raises, as a gauge that cannot be written would."""

    def observe(self, lag: float, now: float) -> None:
        raise OSError("the metrics directory is full")


async def _first_failure(pace: StreamPace, probe: LoopLagProbe) -> asyncio.Task[None]:
    pace.current()  # a paced read: the probe starts
    task = probe._task
    assert task is not None
    await asyncio.wait({task})
    await asyncio.sleep(0)  # the done callback runs
    return task


async def test_a_failed_probe_is_not_restarted_by_every_paced_read(caplog: pytest.LogCaptureFixture) -> None:
    registry = CollectorRegistry()
    probe = LoopLagProbe(interval=0.001, idle_after=10.0, retry_after=3600.0)
    pace = _Broken(base=BASE, cap=CAP, probe=probe)
    pace.export_to(registry)
    with caplog.at_level(logging.ERROR, logger="careerwise.loadwatch"):
        failed = await _first_failure(pace, probe)
        for _ in range(50):  # fifty paced reads after the failure
            pace.current()
            await asyncio.sleep(0)
    assert probe._task is failed  # no new task: the probe waits for its retry
    assert probe.failures == 1
    assert registry.get_sample_value("careerwise_loop_lag_probe_failures_total") == 1.0
    assert caplog.text.count("loop-lag probe failed") == 1
    assert pace.current() == BASE  # the reads go on at the base pace
    await pace.aclose()


async def test_the_probe_starts_again_once_the_retry_time_has_passed() -> None:
    registry = CollectorRegistry()
    probe = LoopLagProbe(interval=0.001, idle_after=10.0, retry_after=0.0)
    pace = _Broken(base=BASE, cap=CAP, probe=probe)
    pace.export_to(registry)
    failed = await _first_failure(pace, probe)
    again = await _first_failure(pace, probe)
    assert again is not failed
    assert probe.failures == 2
    assert registry.get_sample_value("careerwise_loop_lag_probe_failures_total") == 2.0
    await pace.aclose()


async def test_a_healthy_probe_counts_no_failure() -> None:
    registry = CollectorRegistry()
    probe = LoopLagProbe(interval=0.001, idle_after=0.0)  # stops after its first sample
    pace = StreamPace(base=BASE, cap=CAP, probe=probe)
    pace.export_to(registry)
    pace.current()
    task = probe._task
    assert task is not None
    await asyncio.wait({task})
    assert not task.cancelled() and task.exception() is None
    assert registry.get_sample_value("careerwise_loop_lag_probe_failures_total") == 0.0
    await pace.aclose()
