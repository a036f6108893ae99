"""Adaptive stream pacing's policy and probe (issue #10, src/careerwise/loadwatch.py).

The pace is driven by calling ``observe`` with chosen lags and clock values: no assertion depends on how
late a real timer fires. The probe's own test only relies on a lower bound that holds by construction
(a loop blocked for 150 ms cannot wake a 10 ms timer less than 140 ms late)."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from prometheus_client import CollectorRegistry

from careerwise.config import Settings
from careerwise.loadwatch import LAG_HIGH, LAG_LOW, LoopLagProbe, StreamPace, stream_pace

BASE, CAP = 0.1, 0.4


def _pace(**kw: float) -> StreamPace:
    return StreamPace(base=BASE, cap=CAP, **kw)


def test_the_pace_is_the_base_until_the_loop_is_behind_then_rises_to_the_cap() -> None:
    pace = _pace()
    assert pace.adaptive and pace.current() == BASE  # nothing observed yet: the base
    assert pace.pace_for(0.0) == pace.pace_for(LAG_LOW) == BASE
    middle = pace.pace_for((LAG_LOW + LAG_HIGH) / 2)
    assert middle == pytest.approx((BASE + CAP) / 2)
    lags = [LAG_LOW + k * (LAG_HIGH - LAG_LOW) / 10 for k in range(11)]
    paces = [pace.pace_for(lag) for lag in lags]
    assert paces == sorted(paces) and len(set(paces)) == len(paces)  # rises with the lag, step by step
    assert pace.pace_for(LAG_HIGH) == pace.pace_for(60.0) == CAP  # never past the cap


def test_the_pace_rises_at_once_and_falls_back_with_the_half_life() -> None:
    pace = _pace()
    pace.observe(0.001, now=10.0)
    assert pace.current() == BASE
    pace.observe(5.0, now=10.05)  # a loop five seconds behind: the cap, not more
    assert pace.lag == 5.0 and pace.current() == CAP
    pace.observe(0.0, now=10.55)  # one half-life of quiet samples: the estimate halves, still capped
    assert pace.lag == pytest.approx(2.5) and pace.current() == CAP
    pace.observe(0.0, now=13.05)  # five half-lives: 5 s / 32 ≈ 156 ms, between the two thresholds
    assert BASE < pace.current() < CAP
    pace.observe(0.0, now=20.0)
    assert pace.lag < LAG_LOW and pace.current() == BASE  # back to the base


def test_a_higher_sample_wins_over_the_decayed_estimate() -> None:
    pace = _pace()
    pace.observe(0.3, now=0.0)
    pace.observe(0.05, now=2.0)  # 0.3 decayed over four half-lives is 19 ms: the new sample is higher
    assert pace.lag == pytest.approx(0.05)
    assert pace.current() == pytest.approx(pace.pace_for(0.05))


def test_a_fixed_or_zero_pace_never_adapts_and_starts_no_probe() -> None:
    for base, cap in ((0.1, 0.0), (0.1, 0.1), (0.1, 0.05), (0.0, 0.4)):
        probe = _RecordingProbe()
        pace = StreamPace(base=base, cap=cap, probe=probe)
        pace.observe(10.0, now=1.0)
        assert not pace.adaptive and pace.current() == base and pace.cap == base
        assert probe.asked == 0


def test_every_paced_read_keeps_the_probe_running() -> None:
    probe = _RecordingProbe()
    pace = StreamPace(base=BASE, cap=CAP, probe=probe)
    for _ in range(3):
        pace.current()
    assert probe.asked == 3


def test_idle_returns_to_the_base_and_the_gauges_follow() -> None:
    registry = CollectorRegistry()
    pace = _pace()
    pace.export_to(registry)
    assert registry.get_sample_value("careerwise_stream_pace_seconds") == BASE
    pace.observe(1.0, now=0.0)
    assert registry.get_sample_value("careerwise_stream_pace_seconds") == CAP
    assert registry.get_sample_value("careerwise_event_loop_lag_seconds") == 1.0
    pace.idle()
    assert pace.current() == BASE
    assert registry.get_sample_value("careerwise_stream_pace_seconds") == BASE
    assert registry.get_sample_value("careerwise_event_loop_lag_seconds") == 0.0


def test_a_second_export_to_the_same_registry_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    registry = CollectorRegistry()
    _pace().export_to(registry)
    with caplog.at_level(logging.WARNING, logger="careerwise.loadwatch"):
        _pace().export_to(registry)
    assert "not exported" in caplog.text


def test_the_settings_choose_fixed_or_adaptive() -> None:
    def made(**values: int) -> StreamPace:
        return stream_pace(Settings(_env_file=None, environment="test", **values))  # type: ignore[call-arg]

    default = made()  # off by default: measured, no gain (docs/decisions/0008, the amendment)
    assert not default.adaptive and default.current() == 0.1
    adaptive = made(stream_pace_max_ms=400)
    assert adaptive.adaptive and adaptive.base == 0.1 and adaptive.cap == 0.4
    assert not made(stream_pace_max_ms=0).adaptive and not made(stream_pace_max_ms=100).adaptive
    assert not made(stream_pace_ms=0).adaptive and made(stream_pace_ms=0).current() == 0.0
    assert made(stream_pace_ms=50, stream_pace_max_ms=1000).cap == 1.0


async def test_the_probe_measures_a_blocked_loop_and_stops_when_no_stream_asks() -> None:
    class Recording(StreamPace):
        def observe(self, lag: float, now: float) -> None:
            super().observe(lag, now)
            samples.append((lag, self.seconds))

    samples: list[tuple[float, float]] = []
    probe = LoopLagProbe(interval=0.01, idle_after=0.3)
    pace = Recording(base=BASE, cap=CAP, probe=probe)
    pace.current()  # a paced read asks: the probe starts
    await asyncio.sleep(0.03)
    # the loop is stuck on purpose (what a CPU-bound burst does to it): the probe's next wake-up is at
    # least 240 ms late
    time.sleep(0.25)  # noqa: ASYNC251
    await asyncio.sleep(0.03)
    late = max(samples)
    assert late[0] >= 0.24 and late[1] == CAP  # that sample put the pace at the cap
    task = probe._task
    assert task is not None
    await asyncio.wait({task})  # nobody asks any more: it stops by itself (bounded by the test timeout)
    assert probe.failures == 0
    assert pace.lag == 0.0 and pace.seconds == BASE
    await pace.aclose()


async def test_a_failing_probe_is_logged_and_counted_and_the_pace_falls_back(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Broken(StreamPace):
        def observe(self, lag: float, now: float) -> None:
            raise RuntimeError("probe bug")

    probe = LoopLagProbe(interval=0.005, idle_after=10.0)
    pace = Broken(base=BASE, cap=CAP, probe=probe)
    pace.seconds = CAP
    with caplog.at_level(logging.ERROR, logger="careerwise.loadwatch"):
        pace.current()
        task = probe._task
        assert task is not None
        await asyncio.wait({task})
        await asyncio.sleep(0)  # the done callback runs
    assert probe.failures == 1 and "loop-lag probe failed" in caplog.text
    assert pace.seconds == BASE
    await pace.aclose()


async def test_aclose_stops_a_running_probe() -> None:
    probe = LoopLagProbe(interval=0.01, idle_after=60.0)
    pace = StreamPace(base=BASE, cap=CAP, probe=probe)
    pace.current()
    task = probe._task
    assert task is not None and not task.done()
    await pace.aclose()
    assert task.cancelled() and pace.seconds == BASE


class _RecordingProbe:
    def __init__(self) -> None:
        self.asked = 0

    def ensure_running(self, pace: StreamPace) -> None:
        self.asked += 1

    async def aclose(self) -> None:
        return None
