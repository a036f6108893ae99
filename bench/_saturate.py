"""``BENCH_TURNCOST_MODE=saturate``: adaptive stream pacing on vs off with the serving loop saturated.

The question (issue #10, decision 0008's amendment): when the event loop is behind, does reading the
streams that already show text less often give the loop's time to new turns? So the load has to put the
loop behind: waves of the burst's shape (``WAVE`` turns opened evenly over ``SPREAD`` seconds, one
worker, SQLite, the lean fake provider with the burst's 500 ms to the first token and 20 ms between
chunks, the lean client of bench/_burstclient.py), sent to servers that differ only in
``CAREERWISE_STREAM_PACE_MAX_MS`` (``0``: the fixed 100 ms pace; each cap in ``BENCH_SATURATE_PACE_MAX``,
``400,1000``: adaptive), one wave each in turn, the order rotated every round, so the machine's load
falls on all alike.

Per server: loop-thread and other-thread CPU a turn (from /proc, as the default mode), the time to the
first ``delta`` event (p50 / p95 / p99, and the same minus the provider's own share: its first token plus
the buffer guard's two more chunks), ``delta`` events a turn, errors, and the highest
``careerwise_stream_pace_seconds`` / ``careerwise_event_loop_lag_seconds`` seen by polling /metrics
during the wave (every ``SCRAPE`` seconds; both servers are polled alike).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench._burstclient import GUARD, LEAN_ERRORS, OursLines, Sample, lean_request
from bench._serve import data_dir_with_corpus, serve
from bench.common import free_port, lean_fake, pct, process, table

FIRST_TOKEN = 0.50
INTER_CHUNK = 0.02
WAVE = int(os.environ.get("BENCH_SATURATE_WAVE", "200"))
SPREAD = float(os.environ.get("BENCH_SATURATE_SPREAD", "2.0"))
ROUNDS = max(1, int(os.environ.get("BENCH_SATURATE_ROUNDS", "4")))
# the adaptive caps to compare with the fixed pace, each on a server of its own
PACE_MAX = [int(v) for v in os.environ.get("BENCH_SATURATE_PACE_MAX", "400,1000").split(",") if v.strip()]
SCRAPE = 0.25
PROVIDER_SHARE_MS = 1000 * (FIRST_TOKEN + (GUARD - 1) * INTER_CHUNK)  # when the provider lets text show
MESSAGE = "面試怎麼準備 {i}"


class _CountingLines(OursLines):
    """CareerWise's SSE lines, also counting the ``delta`` events (pacing merges text into fewer)."""

    def __init__(self, sample: Sample, t0: float) -> None:
        super().__init__(sample, t0)
        self.deltas = 0

    def feed(self, line: str) -> None:
        if line.startswith("data: ") and self.event == "delta":
            self.deltas += 1
        super().feed(line)


@dataclass
class Side:
    """One server (one setting), summed over its waves."""

    label: str
    pace_max_ms: int
    samples: list[Sample] = field(default_factory=list)
    deltas: list[int] = field(default_factory=list)
    loop_s: float = 0.0
    other_s: float = 0.0
    max_pace: float = 0.0
    max_lag: float = 0.0
    per_wave: list[tuple[float, float]] = field(default_factory=list)  # (loop ms a turn, first-text p50)

    def ok(self) -> list[Sample]:
        return [s for s in self.samples if s.error is None and s.first_ms is not None]


def _gauge(text: str, name: str) -> float:
    values = [float(v) for v in re.findall(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, re.MULTILINE)]
    return max(values, default=0.0)


async def _scrape(url: str, side: Side, stop: asyncio.Event) -> None:
    async with httpx.AsyncClient(timeout=10) as client:
        while not stop.is_set():
            try:
                text = (await client.get(f"{url}/metrics")).text
            except httpx.HTTPError:
                text = ""  # a scrape that fails under load: the wave's own figures still count
            side.max_pace = max(side.max_pace, _gauge(text, "careerwise_stream_pace_seconds"))
            side.max_lag = max(side.max_lag, _gauge(text, "careerwise_event_loop_lag_seconds"))
            try:
                await asyncio.wait_for(stop.wait(), SCRAPE)
            except TimeoutError:
                continue


async def _wave(url: str, side: Side, first: int) -> None:
    t0 = time.perf_counter()
    stop = asyncio.Event()
    scraper = asyncio.create_task(_scrape(url, side, stop))
    counters: list[_CountingLines] = []

    async def one(i: int) -> None:
        await asyncio.sleep(i * SPREAD / WAVE)
        sample = Sample(start_s=time.perf_counter() - t0)
        start = time.perf_counter()
        lines = _CountingLines(sample, start)
        counters.append(lines)
        try:
            await lean_request(
                f"{url}/api/chat", {"message": MESSAGE.format(i=first + i)}, lines, sample, start
            )
        except LEAN_ERRORS as exc:
            sample.error = f"{type(exc).__name__}: {exc}"[:200]
        side.samples.append(sample)

    try:
        await asyncio.gather(*(one(i) for i in range(WAVE)))
    finally:
        stop.set()
        await scraper
    side.deltas += [c.deltas for c in counters if c.sample.error is None]


def run() -> list[str]:
    from bench.turncost import CpuReading

    llm_port = free_port()
    logs = Path(tempfile.mkdtemp(prefix="cw-bench-saturate-"))
    load0 = os.getloadavg()[0]
    sides = [Side("fixed 100 ms (max 0)", 0)] + [Side(f"adaptive 100 → {m} ms", m) for m in PACE_MAX]
    data_dirs: list[Path] = []
    fake_args = lean_fake(llm_port, first_token_delay=FIRST_TOKEN, delay=INTER_CHUNK)
    try:
        with (
            process(fake_args, ready_url=f"http://127.0.0.1:{llm_port}/v1/models"),
            ExitStack() as stack,
        ):
            servers = []
            for side in sides:
                data_dirs.append(data_dir_with_corpus())
                env = {
                    "CAREERWISE_STREAM_PACE_MS": "100",
                    "CAREERWISE_STREAM_PACE_MAX_MS": str(side.pace_max_ms),
                }
                servers.append(
                    stack.enter_context(
                        serve(
                            data_dir=data_dirs[-1],
                            llm_port=llm_port,
                            port=free_port(),
                            workers=1,
                            log=logs / f"serve-max{side.pace_max_ms}.log",
                            env=env,
                        )
                    )
                )
            for server in servers:  # warm-up: a small wave each, not measured
                warm = Side("warm-up", 0)
                asyncio.run(_warm(server.url, warm))
                errors = [s.error for s in warm.samples if s.error]
                if errors:
                    raise RuntimeError(f"warm-up failed: {errors[:3]}")
            for r in range(ROUNDS):
                # rotated each round, and reversed every other: no setting always follows the same one
                order = [(r + k) % len(sides) for k in range(len(sides))]
                for k in order if r % 2 == 0 else order[::-1]:
                    side, server = sides[k], servers[k]
                    time.sleep(1.0)  # the previous wave's server has gone quiet
                    before = CpuReading.of(server.proc.pid)
                    n0 = len(side.samples)
                    asyncio.run(_wave(server.url, side, first=(r * len(sides) + k) * WAVE))
                    loop_s, other_s = CpuReading.of(server.proc.pid).minus(before)
                    side.loop_s += loop_s
                    side.other_s += other_s
                    wave = side.samples[n0:]
                    ok = [s.first_ms for s in wave if s.error is None and s.first_ms is not None]
                    side.per_wave.append((1000 * loop_s / max(1, len(ok)), pct(ok, 50)))
    finally:
        for d in data_dirs:
            shutil.rmtree(d, ignore_errors=True)
    return _report(sides, load0, logs)


async def _warm(url: str, side: Side) -> None:
    """A few turns at once, not measured: the first turns of a process load what later ones reuse."""

    async def one(i: int) -> None:
        sample = Sample(start_s=0.0)
        start = time.perf_counter()
        try:
            await lean_request(
                f"{url}/api/chat",
                {"message": MESSAGE.format(i=900_000 + i)},
                OursLines(sample, start),
                sample,
                start,
            )
        except LEAN_ERRORS as exc:
            sample.error = f"{type(exc).__name__}: {exc}"[:200]
        side.samples.append(sample)

    await asyncio.gather(*(one(i) for i in range(8)))


def _report(sides: list[Side], load0: float, logs: Path) -> list[str]:
    out = [
        f"## Adaptive stream pacing, loop saturated ({ROUNDS} waves a setting of {WAVE} turns over "
        f"{SPREAD:.1f} s, alternating; one worker, SQLite, lean fake {1000 * FIRST_TOKEN:.0f} ms first token, "
        f"{1000 * INTER_CHUNK:.0f} ms between chunks; load average {load0:.2f} before, "
        f"{os.getloadavg()[0]:.2f} after; {os.cpu_count()} cores)\n"
    ]
    rows: list[list[object]] = []
    for side in sides:
        ok = side.ok()
        first = [s.first_ms for s in ok if s.first_ms is not None]
        n = max(1, len(ok))
        rows.append(
            [
                side.label,
                f"{len(ok)}/{len(side.samples)}",
                1000 * side.loop_s / n,
                1000 * side.other_s / n,
                f"{sum(side.deltas) / max(1, len(side.deltas)):.1f}",
                f"{pct(first, 50):.0f} / {pct(first, 95):.0f} / {pct(first, 99):.0f}",
                f"{pct(first, 50) - PROVIDER_SHARE_MS:.0f} / {pct(first, 99) - PROVIDER_SHARE_MS:.0f}",
                f"{1000 * side.max_pace:.0f}",
                f"{1000 * side.max_lag:.0f}",
                ", ".join(f"{c:.1f}/{p:.0f}" for c, p in side.per_wave),
            ]
        )
    out.append(
        table(
            [
                "setting",
                "ok",
                "loop ms/turn",
                "other threads ms/turn",
                "deltas/turn",
                "first text p50 / p95 / p99 ms",
                f"added p50 / p99 (minus {PROVIDER_SHARE_MS:.0f} ms)",
                "max pace ms",
                "max lag ms",
                "per wave: loop ms/turn / first-text p50",
            ],
            rows,
        )
    )
    fixed = sides[0]
    f_ok = fixed.ok()
    f_first = pct([s.first_ms for s in f_ok if s.first_ms is not None], 50)
    for side in sides[1:]:
        ok = side.ok()
        if not (fixed.loop_s and side.loop_s and ok and f_ok):
            continue
        turn = (side.loop_s / len(ok)) / (fixed.loop_s / len(f_ok))
        first_ratio = pct([s.first_ms for s in ok if s.first_ms is not None], 50) / f_first
        better = sum(a[1] < f[1] for a, f in zip(side.per_wave, fixed.per_wave, strict=True))
        out.append(
            f"\n{side.label} vs fixed: loop CPU a turn {turn:.2f}x, first text p50 {first_ratio:.2f}x; first-text "
            f"p50 lower in {better} of {len(side.per_wave)} rounds (ratios within this run)."
        )
    errors = [s.error for side in sides for s in side.samples if s.error]
    for err in sorted(set(errors))[:5]:
        out.append(f"- {errors.count(err)} x {err}")
    out.append(f"\nServer logs: {logs}")
    return out


if __name__ == "__main__":
    print("\n".join(run()))
