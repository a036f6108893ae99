"""How far behind the event loop is, and the stream pace that follows from it (issue #10, adaptive pacing).

A streamed answer that already shows text costs the loop one pass of the provider read, the flow, the
engine's sinks and an SSE write per paced read (docs/decisions/0008-stream-pacing.md). In a burst those
passes queue up in front of the turns that have not shown anything yet, and the user of a new turn waits
for them. So when the loop is behind, streams that are already showing text are read less often (bigger
merged pieces) and the loop's time goes to the new turns; when it is not behind, nothing changes.

- :class:`LoopLagProbe`: one task per process that sleeps ``interval`` seconds and measures how late it
  woke up. A loop with a backlog of ready callbacks wakes every timer late by about that backlog, so the
  overshoot is the wait a newly arrived piece of work sees. The task runs only while paced streams ask
  for the pace (it stops ``idle_after`` seconds after the last one): an idle server is not woken.
- :class:`StreamPace`: the pace a paced read uses now. ``base`` while the (smoothed) lag is under
  ``lag_low``, rising linearly to ``cap`` at ``lag_high``. Each probe sample updates the figure; a paced
  read only reads an attribute. The lag estimate rises at once and falls with a half-life, so one quiet
  sample in a burst does not drop the pace back while the backlog is still there.

The first visible text of a round is never paced (pacing starts only after it), so none of this can
delay it; it only makes the later updates of the answers already on screen coarser while the process is
behind. Both figures are gauges: ``careerwise_stream_pace_seconds`` and
``careerwise_event_loop_lag_seconds``.

Off by default (``CAREERWISE_STREAM_PACE_MAX_MS=0``): it does not shorten the time to first text, and a
loop that is behind already reads late, so a fixed pace merges more by itself (the figures:
docs/decisions/0008-stream-pacing.md, the amendment).
"""

from __future__ import annotations

import asyncio
import logging
import math
from typing import TYPE_CHECKING, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge

from careerwise.tracing import background

if TYPE_CHECKING:
    from careerwise.config import Settings

log = logging.getLogger(__name__)

# The smoothed lag at which the pace starts to rise, and where it reaches the cap. An idle or lightly used
# loop wakes its timers within a few milliseconds; 20 ms late means the ready queue is long enough that a
# new turn's first step waits noticeably. 200 ms is already far past the first-text goal.
LAG_LOW = 0.020
LAG_HIGH = 0.200
HALF_LIFE = 0.5  # seconds for the lag estimate to halve once the samples fall
# after the probe failed, paced reads do not start it again for this long: a failure that repeats (a bug,
# a gauge that cannot be written) is then logged and counted twice a minute, not on every paced read
RETRY_AFTER = 30.0


class _Probe(Protocol):
    def ensure_running(self, pace: StreamPace) -> None: ...
    async def aclose(self) -> None: ...


class StreamPace:
    """The pace (seconds between paced reads) that streams showing text use now.

    ``cap`` <= ``base`` or ``base`` 0: a fixed pace, no probe. Otherwise ``probe`` (normally a
    :class:`LoopLagProbe`) feeds :meth:`observe`; tests call :meth:`observe` themselves with ``probe``
    None, so no assertion depends on how late a real timer fires."""

    def __init__(
        self,
        *,
        base: float,
        cap: float = 0.0,
        probe: _Probe | None = None,
        lag_low: float = LAG_LOW,
        lag_high: float = LAG_HIGH,
        half_life: float = HALF_LIFE,
    ) -> None:
        self.base = max(0.0, base)
        self.cap = cap if self.base > 0 and cap > self.base else self.base
        self._probe = probe if self.adaptive else None
        self.lag_low, self.lag_high = lag_low, max(lag_high, lag_low + 1e-3)
        self._half_life = half_life
        self.lag = 0.0  # the smoothed lag, seconds
        self.seconds = self.base  # what the next paced read uses
        self._sampled_at: float | None = None
        self._gauges: tuple[Gauge, Gauge] | None = None
        self._failures: Counter | None = None

    @property
    def adaptive(self) -> bool:
        return self.cap > self.base

    def current(self) -> float:
        """The pace for a paced read about to wait. Makes sure the probe runs (it stops by itself when
        no stream has asked for a while); otherwise one attribute read: this runs once per paced read."""
        if self._probe is not None:
            self._probe.ensure_running(self)
        return self.seconds

    def observe(self, lag: float, now: float) -> None:
        """One lag sample (seconds late) taken at ``now`` (the loop's clock): the estimate takes it at
        once if it is higher, else decays toward it with the half-life; the pace follows the estimate."""
        lag = max(0.0, lag)
        if self._sampled_at is None:
            decayed = 0.0
        else:
            decayed = self.lag * math.pow(0.5, max(0.0, now - self._sampled_at) / self._half_life)
        self._sampled_at = now
        self.lag = max(lag, decayed)
        self.seconds = self.pace_for(self.lag)
        if self._gauges is not None:
            self._gauges[0].set(self.seconds)
            self._gauges[1].set(self.lag)

    def pace_for(self, lag: float) -> float:
        """``base`` up to ``lag_low``, ``cap`` from ``lag_high``, a straight line between."""
        if lag <= self.lag_low:
            return self.base
        if lag >= self.lag_high:
            return self.cap
        share = (lag - self.lag_low) / (self.lag_high - self.lag_low)
        return self.base + share * (self.cap - self.base)

    def probe_failed(self) -> None:
        """The probe raised (it has logged why): counted in ``careerwise_loop_lag_probe_failures``."""
        if self._failures is not None:
            self._failures.inc()

    def idle(self) -> None:
        """The probe stopped (no paced stream for a while): back to the base pace, no lag to report."""
        self.lag, self._sampled_at = 0.0, None
        self.seconds = self.base
        if self._gauges is not None:
            self._gauges[0].set(self.seconds)
            self._gauges[1].set(0.0)

    def export_to(self, registry: CollectorRegistry) -> None:
        """The two gauges and the probe's failure counter in the app's registry. With several workers each
        keeps its own gauge series (``pid`` label): one worker that is behind is visible as such."""
        try:
            failures = Counter(
                "careerwise_loop_lag_probe_failures",
                "Loop-lag probe runs that raised (logged; paced reads go on at the base pace).",
                registry=registry,
            )
            pace = Gauge(
                "careerwise_stream_pace_seconds",
                "Seconds between paced provider reads for answers already showing text (rises when the "
                "event loop is behind).",
                registry=registry,
                multiprocess_mode="all",
            )
            lag = Gauge(
                "careerwise_event_loop_lag_seconds",
                "How late the event loop wakes a timer (smoothed), while paced streams run; 0 when idle.",
                registry=registry,
                multiprocess_mode="all",
            )
        except ValueError as exc:  # already there: one registry shared by two apps (tests)
            log.warning("loadwatch: the pace gauges are not exported: %s", exc)
            return
        pace.set(self.seconds)
        lag.set(self.lag)
        self._gauges = (pace, lag)
        self._failures = failures

    async def aclose(self) -> None:
        if self._probe is not None:
            await self._probe.aclose()


class LoopLagProbe:
    """Sleeps ``interval`` seconds at a time on the running loop and reports how late each wake-up was.

    About ``1 / interval`` wake-ups a second while streams are paced (a few microseconds each), none when
    idle. One task per loop: a second loop (tests start several) gets its own when a stream asks there.
    A run that raises is logged and counted, and the probe stays off for ``retry_after`` seconds: paced
    reads call :meth:`ensure_running` many times a second, and a failure that repeats must not turn each
    of them into a new task and an error line."""

    def __init__(
        self, *, interval: float = 0.05, idle_after: float = 5.0, retry_after: float = RETRY_AFTER
    ) -> None:
        self.interval = interval
        self.idle_after = idle_after
        self.retry_after = retry_after
        self._task: asyncio.Task[None] | None = None
        self._asked = 0.0  # loop time of the last ensure_running
        self._failed_at: float | None = None  # loop time of the last failure
        self.failures = 0

    def ensure_running(self, pace: StreamPace) -> None:
        loop = asyncio.get_running_loop()
        self._asked = loop.time()
        task = self._task
        if task is not None and not task.done() and task.get_loop() is loop:
            return
        if self._failed_at is not None and self._asked - self._failed_at < self.retry_after:
            return  # it failed a moment ago: the base pace until the retry
        self._task = loop.create_task(self._run(pace), name="careerwise-loop-lag")
        self._task.add_done_callback(lambda done: self._finished(done, pace))

    async def _run(self, pace: StreamPace) -> None:
        loop = asyncio.get_running_loop()
        try:
            while loop.time() - self._asked < self.idle_after:
                start = loop.time()
                await asyncio.sleep(self.interval)
                now = loop.time()
                pace.observe(now - start - self.interval, now)
        finally:
            pace.idle()

    def _finished(self, task: asyncio.Task[None], pace: StreamPace) -> None:
        what = (
            "loadwatch: the loop-lag probe failed "
            f"(paced reads use the base pace; retry in {self.retry_after:.0f} s)"
        )
        exc = background.task_failed(task, task=background.LOOP_LAG_PROBE, logger=log, what=what)
        if exc is not None:  # a bug in the probe: paced reads go on at the base pace, and it restarts later
            self.failures += 1
            self._failed_at = task.get_loop().time()
            pace.probe_failed()

    async def aclose(self) -> None:
        task, self._task = self._task, None
        if task is None or task.done():
            return
        other = task.get_loop()
        if other is not asyncio.get_running_loop():
            if not other.is_closed():  # a closed loop's tasks are gone with it
                other.call_soon_threadsafe(task.cancel)  # that loop's own shutdown awaits it
            return
        task.cancel()
        await asyncio.wait({task})


def stream_pace(settings: Settings) -> StreamPace:
    """The process's pace from the settings: fixed at ``stream_pace_ms``, or adaptive up to
    ``stream_pace_max_ms`` with a loop-lag probe."""
    base, cap = settings.stream_pace_ms / 1000, settings.stream_pace_max_ms / 1000
    return StreamPace(base=base, cap=cap, probe=LoopLagProbe() if 0 < base < cap else None)
