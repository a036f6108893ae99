"""The serving process's resident memory: idle, right after a burst of streamed chats, and after a few idle
seconds; the default allocator settings against glibc's, in one run.

Each configuration is ``careerwise serve`` (one worker, SQLite: a copy of the ingested corpus, the fake
provider from bench.common in its own process). After start-up and 4 warm-up turns it sits idle for
IDLE_S seconds (reading 1), then takes REQUESTS streamed chats spread over SPREAD seconds with
bench/concurrency.py's client (reading 2, right after the last stream ends), then sits idle SETTLE_S
seconds (reading 3). The baseline is glibc's defaults (both of the app's allocator settings off); the
two configurations run in turn, REPEATS rounds (the order reversed every other round, so a drift in the
machine's load does not favour one). RssAnon is reported beside VmRSS because it does not move with the
page cache (how much of a mapped file is resident depends on how the kernel cached it).

``BENCH_MEMORY_REPEATS`` (2) and ``BENCH_MEMORY_CONFIGS`` (all) narrow a run.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench._serve import corpus_db, data_dir_with_corpus, memory, proc_kb, serve
from bench.common import fake_llm, pct, process, table
from bench.concurrency import FIRST_TOKEN, INTER_CHUNK, REQUESTS, SPREAD, _burst, _warm
from tests.conftest import free_port

IDLE_S = 3.0
SETTLE_S = 6.0  # longer than the trimmer's idle wait (2 s by default)
REPEATS = int(os.environ.get("BENCH_MEMORY_REPEATS", "2"))
CONFIGS: dict[str, dict[str, str]] = {
    "baseline (glibc defaults)": {
        "CAREERWISE_MALLOC_ARENA_MAX": "0",
        "CAREERWISE_MEMORY_TRIM_IDLE_SECONDS": "0",
    },
    "arenas 2 + idle trim (default)": {
        "CAREERWISE_MALLOC_ARENA_MAX": "2",
        "CAREERWISE_MEMORY_TRIM_IDLE_SECONDS": "2",
    },
}
WHEN = ("idle", "right after", "after idle")
# The ingested corpus database this run copies for each server, resolved once at the start: other work
# on the tree may change the corpus key (tests/conftest.py) mid-run, and a re-ingest between
# configurations would load the machine.
CORPUS: list[Path] = []


@dataclass
class Reading:
    rss: dict[str, list[float]] = field(default_factory=lambda: {w: [] for w in WHEN})
    pss: dict[str, list[float]] = field(default_factory=lambda: {w: [] for w in WHEN})
    # RssAnon: VmRSS less the file pages mapped, whose count depends on the page cache
    anon: dict[str, list[float]] = field(default_factory=lambda: {w: [] for w in WHEN})
    errors: int = 0
    error_kinds: dict[str, int] = field(default_factory=dict)
    first_text_ms: list[float] = field(default_factory=list)  # every stream's, all rounds


def _read(pid: int, reading: Reading, when: str) -> None:
    rows = memory(pid)
    reading.rss[when].append(sum(m.rss_mb for m in rows))
    reading.pss[when].append(sum(m.pss_mb for m in rows))
    reading.anon[when].append(proc_kb(pid, "RssAnon") / 1024)


def _one(env: dict[str, str], llm_port: int, logs: Path, label: str, reading: Reading, rnd: int) -> None:
    data_dir = data_dir_with_corpus(CORPUS[0])
    log = logs / ("serve-" + label.split(" (")[0].replace(" + ", "-").replace(" ", "-") + f"-{rnd}.log")
    try:
        with serve(
            data_dir=data_dir, llm_port=llm_port, port=free_port(), workers=1, log=log, env=env
        ) as server:
            warm = asyncio.run(_warm(server.url, 4))
            if warm:
                raise RuntimeError(f"warm-up failed: {warm}")
            time.sleep(IDLE_S)
            _read(server.proc.pid, reading, "idle")
            burst = asyncio.run(_burst(f"{server.url}/api/chat", ours=True))
            reading.errors += len(burst.samples) - len(burst.ok)
            for kind, n in burst.errors.items():
                reading.error_kinds[kind] = reading.error_kinds.get(kind, 0) + n
            reading.first_text_ms += burst.shown()
            _read(server.proc.pid, reading, "right after")
            time.sleep(SETTLE_S)
            _read(server.proc.pid, reading, "after idle")
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


# ---------------------------------------------------------------- report


def _cell(values: list[float]) -> str:
    if not values:
        return "-"
    mean = statistics.fmean(values)
    return f"{mean:.0f} ({min(values):.0f}-{max(values):.0f})" if len(values) > 1 else f"{mean:.0f}"


def _report(readings: dict[str, Reading]) -> list[str]:
    load = os.getloadavg()
    out = [
        f"## Memory of the serving process (VmRSS MB of `careerwise serve`, one worker, SQLite, no local "
        f"model; mean (min-max) of {REPEATS} rounds; {REQUESTS} streamed chats over {SPREAD:.0f} s, fake "
        f"provider {FIRST_TOKEN * 1000:.0f} ms first token, {INTER_CHUNK * 1000:.0f} ms between chunks; "
        f"{os.cpu_count()} cores, load average now {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f})\n"
    ]
    base = readings.get(next(iter(CONFIGS)))
    rows = []
    for label, r in readings.items():
        row: list[object] = [label, r.errors]
        for when in WHEN:
            row.append(_cell(r.rss[when]))
            if base is not None and r is not base and r.rss[when] and base.rss[when]:
                row.append(f"{statistics.fmean(r.rss[when]) - statistics.fmean(base.rss[when]):+.0f}")
            else:
                row.append("")
        row.append(_cell(r.pss["after idle"]))
        row.append(_cell(r.anon["after idle"]))
        row.append(f"{pct(r.first_text_ms, 50):.0f} / {pct(r.first_text_ms, 99):.0f}")
        rows.append(row)
    out.append(
        table(
            [
                "configuration",
                "errors",
                f"idle ({IDLE_S:.0f} s after warm-up)",
                "vs baseline",
                f"right after the {REQUESTS} chats",
                "vs baseline",
                f"{SETTLE_S:.0f} s later",
                "vs baseline",
                "PSS then",
                "anonymous then",
                "first text p50 / p99 ms",
            ],
            rows,
        )
    )
    out.append("\nGoal: a serving process < 300 MB without the local model, idle and after the burst.")
    for label, r in readings.items():
        for kind, n in sorted(r.error_kinds.items(), key=lambda kv: -kv[1]):
            out.append(f"- {label}: {n} x {kind} (the server's log says why)")
    return out


def run() -> list[str]:
    names = os.environ.get("BENCH_MEMORY_CONFIGS")
    configs = {k: v for k, v in CONFIGS.items() if not names or k.split(" (")[0] in names.split(",")}
    CORPUS[:] = [corpus_db()]  # built (or found) once, before any measurement
    llm_port = free_port()
    fake = fake_llm(llm_port, mode="text", first_token_delay=FIRST_TOKEN, delay=INTER_CHUNK)
    logs = Path(tempfile.mkdtemp(prefix="cw-bench-memory-"))
    readings = {label: Reading() for label in configs}
    with process(fake, ready_url=f"http://127.0.0.1:{llm_port}/v1/models"):
        for rnd in range(REPEATS):
            order = list(configs.items())
            for label, env in order if rnd % 2 == 0 else reversed(order):
                _one(env, llm_port, logs, label, readings[label], rnd)
    out = _report(readings)
    out.append(f"\nServer logs kept in {logs}")
    return out


if __name__ == "__main__":
    print("\n".join(run()))
