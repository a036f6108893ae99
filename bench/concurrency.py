"""200 streaming chats connected within 2 s, with one worker and with two; and the serving memory.

The provider is a fake OpenAI-compatible server in its own process (500 ms to the first token, 20 ms
between chunks), `careerwise serve --workers N` another, the load generator this one. The baseline,
measured in the same run just before each CareerWise burst, is the same 200 requests sent straight to the
provider's /v1/chat/completions with the same client.

In production neither the provider nor the clients share the server's cores, so both are lean here:
the provider is bench/_leanfake.py (the fake's text-mode stream on plain asyncio), the client
bench/_burstclient.py (raw asyncio streams). They still share the machine's cores with the server, so
the numbers include the rig's own slowdown under load; the report prints the serving processes' CPU
during each burst.

Added latency compares distributions, not pairs (a request to the fake and one to CareerWise have
nothing to pair on): added pN = (time to first visible text through CareerWise) pN - (the moment the
provider's own stream allows text to be shown) pN, the latter being its GUARD-th non-blank chunk, as in
bench/ttft.py (the buffer guard's window counts as the provider's share).

Both stores: SQLite (a copy of the ingested corpus database) and PostgreSQL (a throwaway server from
tests/pg.py, the corpus ingested once and copied per run as a template). ``BENCH_CONCURRENCY_STORES``
(``sqlite,postgresql`` by default) picks them; ``BENCH_CONCURRENCY_WORKERS`` (``1,2``) the worker counts;
``BENCH_CONCURRENCY_REQUESTS`` (200) how many streams the 2 s burst opens, for a headroom check above the
goal's load; ``BENCH_CONCURRENCY_PASSES`` (1) runs every configuration again, interleaved;
``BENCH_CONCURRENCY_PLOTS`` is where the PNGs go (docs/benchmarks/ by default).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench import _plots
from bench._burstclient import GUARD, LEAN_ERRORS, Sample, httpx_request, lean_request, lines_for
from bench._serve import Memory, cpu_seconds, data_dir_with_corpus, memory, pg_corpus, pg_database, serve
from bench.common import fake_llm, pct, process, table
from tests.conftest import free_port

FIRST_TOKEN = 0.50
INTER_CHUNK = 0.02
REQUESTS = int(os.environ.get("BENCH_CONCURRENCY_REQUESTS", "200"))
SPREAD = 2.0  # seconds over which the connections are opened, evenly
WORKERS = tuple(int(w) for w in os.environ.get("BENCH_CONCURRENCY_WORKERS", "1,2").split(","))
STORES = tuple(os.environ.get("BENCH_CONCURRENCY_STORES", "sqlite,postgresql").split(","))
# interleaved passes: a noisy minute lands on one pass of each configuration, not on all passes of one
PASSES = int(os.environ.get("BENCH_CONCURRENCY_PASSES", "1"))
MESSAGE = (
    "面試怎麼準備 {i}"  # routes to career/simple (path B with the text-mode fake); numbered: no two alike
)
PLOTS = Path(
    os.environ.get("BENCH_CONCURRENCY_PLOTS")
    or Path(__file__).resolve().parent.parent / "docs" / "benchmarks"
)


@dataclass
class Burst:
    samples: list[Sample]
    wall_s: float

    @property
    def ok(self) -> list[Sample]:
        return [s for s in self.samples if s.error is None]

    @property
    def errors(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for s in self.samples:
            if s.error is not None:
                counts[s.error] = counts.get(s.error, 0) + 1
        return counts

    def shown(self) -> list[float]:
        return [s.shown_ms for s in self.ok if s.shown_ms is not None]

    def first(self) -> list[float]:
        return [s.first_ms for s in self.ok if s.first_ms is not None]

    @property
    def rps(self) -> float:
        return len(self.ok) / self.wall_s


def _body(i: int, *, ours: bool) -> dict[str, object]:
    if ours:
        return {"message": MESSAGE.format(i=i)}
    return {
        "model": "fake",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": MESSAGE.format(i=i)}],
    }


async def _burst(url: str, *, ours: bool) -> Burst:
    """REQUESTS streams opened evenly over SPREAD seconds, a connection each (the lean client)."""
    origin = time.perf_counter()
    samples = [Sample(start_s=i * SPREAD / REQUESTS) for i in range(REQUESTS)]

    async def run(i: int) -> None:
        sample = samples[i]
        await asyncio.sleep(max(0.0, origin + sample.start_s - time.perf_counter()))
        t0 = time.perf_counter()
        sample.start_s = t0 - origin  # the loop may be late: record when it really went
        try:
            lines = lines_for(ours=ours, sample=sample, t0=t0)
            await lean_request(url, _body(i, ours=ours), lines, sample, t0)
        except LEAN_ERRORS as exc:
            sample.error = f"{type(exc).__name__}: {exc}"[:200]
        sample.end_ms = 1000 * (time.perf_counter() - t0)

    await asyncio.gather(*(run(i) for i in range(REQUESTS)))
    return Burst(samples, time.perf_counter() - origin)


@dataclass
class Run:
    store: str  # "SQLite" or "PostgreSQL"
    workers: int
    baseline: Burst
    ours: Burst
    idle: list[Memory]
    after: list[Memory]
    log_problems: dict[str, int] = field(default_factory=dict)
    load: tuple[float, float] = (0.0, 0.0)
    cpu_s: float = 0.0  # CPU seconds the serving processes used during the CareerWise burst
    pass_no: int = 1

    @property
    def config(self) -> str:
        return f"{self.store}, --workers {self.workers}"

    @property
    def label(self) -> str:
        return self.config if PASSES == 1 else f"{self.config}, pass {self.pass_no}"

    @property
    def added(self) -> tuple[float, float]:
        """Added p50 and p99 ms: CareerWise's first text pN minus the provider's text-shown pN."""
        o, b = self.ours.shown(), self.baseline.shown()
        return pct(o, 50) - pct(b, 50), pct(o, 99) - pct(b, 99)


def _log_problems(log: str) -> dict[str, int]:
    """What broke, counted by kind: the final line of each traceback (the exception), the SQL statement
    an SQLAlchemy error names, and ERROR lines, without timestamps, ids and parameters."""
    counts: dict[str, int] = {}
    skip = ("Traceback", "The above exception", "During handling", "[parameters:", "(Background on")
    for raw in log.splitlines():
        if (
            not raw
            or raw.startswith(" ")
            or raw.startswith(skip)
            or " INFO " in raw
            or raw.startswith("INFO:")
        ):
            continue
        line = raw
        if line[:1].isdigit():  # "2025-01-01 12:00:00,000 LEVEL name: message"
            line = line.split(" ", 2)[-1]
        if line.startswith("WARNING"):
            continue
        if line.startswith("[SQL: "):
            line = "statement: " + line[6:90]
        line = re.sub(r"[0-9a-f]{32}", "<id>", line)
        counts[line] = counts.get(line, 0) + 1
    return counts


def _one_run(
    workers: int,
    llm_port: int,
    logs: Path,
    pg: tuple[str, str] | None = None,
    pass_no: int = 1,
) -> Run:
    """``pg``: (server URL, template database) to run on a fresh PostgreSQL copy; None: SQLite."""
    data_dir = data_dir_with_corpus() if pg is None else Path(tempfile.mkdtemp(prefix="cw-bench-"))
    store = "SQLite" if pg is None else "PostgreSQL"
    db_url = (
        f"sqlite+aiosqlite:///{data_dir / 'careerwise.db'}"
        if pg is None
        else pg_database(pg[0], f"bench_run_w{workers}_p{pass_no}", template=pg[1])
    )
    env = {} if pg is None else {"CAREERWISE_DATABASE_URL": db_url}
    try:
        port = free_port()
        log = logs / f"serve-{store.lower()}-workers{workers}-pass{pass_no}.log"
        with serve(
            data_dir=data_dir, llm_port=llm_port, port=port, workers=workers, log=log, env=env
        ) as server:
            time.sleep(2)  # let start-up finish settling before the idle reading
            idle = memory(server.proc.pid)
            warm = asyncio.run(_warm(server.url, 4 * workers))
            if warm:
                raise RuntimeError(f"warm-up failed: {warm}")
            load0 = os.getloadavg()[0]
            baseline = asyncio.run(_burst(f"http://127.0.0.1:{llm_port}/v1/chat/completions", ours=False))
            time.sleep(1)
            cpu0 = cpu_seconds(server.proc.pid)
            ours = asyncio.run(_burst(f"{server.url}/api/chat", ours=True))
            cpu_s = cpu_seconds(server.proc.pid) - cpu0
            load1 = os.getloadavg()[0]
            time.sleep(1)
            after = memory(server.proc.pid)
            log_text = server.log_text()
        problems = _log_problems(log_text)
        return Run(store, workers, baseline, ours, idle, after, problems, (load0, load1), cpu_s, pass_no)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


async def _warm(url: str, n: int) -> list[str]:
    """A few turns first (with httpx), so each worker has its connections, caches and the embedder warm."""
    async with httpx.AsyncClient(timeout=60) as client:
        errors = []
        for i in range(n):
            sample, t0 = Sample(0.0), time.perf_counter()
            lines = lines_for(ours=True, sample=sample, t0=t0)
            await httpx_request(client, f"{url}/api/chat", _body(10_000 + i, ours=True), lines, sample, t0)
            if sample.error:
                errors.append(sample.error)
        return errors


# ---------------------------------------------------------------- report


def _mb(rows: list[Memory]) -> str:
    return " + ".join(f"{m.role} {m.rss_mb:.0f}" for m in rows)


def _report(runs: list[Run], loads: tuple[float, float, float]) -> list[str]:
    out = [
        f"## Concurrency: {REQUESTS} streaming chats connected within {SPREAD:.0f} s "
        f"(fake provider: {FIRST_TOKEN * 1000:.0f} ms first token, {INTER_CHUNK * 1000:.0f} ms between "
        f"chunks, guard N={GUARD}; machine: {os.cpu_count()} cores, load average before "
        f"{loads[0]:.2f} / {loads[1]:.2f} / {loads[2]:.2f})\n"
    ]
    rows = []
    for r in runs:
        o, b = r.ours, r.baseline
        rows.append(
            [
                r.store,
                r.workers,
                r.pass_no,
                f"{len(o.samples) - len(o.ok)} (baseline {len(b.samples) - len(b.ok)})",
                f"{pct(b.first(), 50):.0f} / {pct(b.first(), 99):.0f}",
                f"{pct(b.shown(), 50):.0f} / {pct(b.shown(), 99):.0f}",
                f"{pct(o.shown(), 50):.0f} / {pct(o.shown(), 99):.0f}",
                pct(o.shown(), 50) - pct(b.shown(), 50),
                pct(o.shown(), 99) - pct(b.shown(), 99),
                f"{o.rps:.1f} ({b.rps:.1f})",
                f"{r.load[0]:.2f} / {r.load[1]:.2f}",
                f"{r.cpu_s:.1f} ({1000 * r.cpu_s / max(1, len(o.ok)):.0f} ms a turn)",
            ]
        )
    out.append(
        table(
            [
                "store",
                "workers",
                "pass",
                "errors",
                "provider first token p50/p99 ms",
                f"provider text shown (chunk {GUARD}) p50/p99 ms",
                "through CareerWise first text p50/p99 ms",
                "added p50 ms",
                "added p99 ms",
                "completed req/s (baseline)",
                "load 1 min before/after",
                "server CPU s in the burst",
            ],
            rows,
        )
    )
    out.append("\nGoal: 0 errors and added p99 < 100 ms. Added pN = CareerWise pN - provider text-shown pN.")
    for r in runs:
        for label, burst in (("CareerWise", r.ours), ("baseline", r.baseline)):
            for text, n in sorted(burst.errors.items(), key=lambda kv: -kv[1]):
                out.append(f"- {r.label}, {label}: {n} x {text}")
        for text, n in sorted(r.log_problems.items(), key=lambda kv: -kv[1])[:12]:
            out.append(f"- {r.label}, server log: {n} x {text}")
    out += _spread(runs)
    out.append("\n## Memory of the serving process (no local model; VmRSS, MB)\n")
    mem_rows = []
    for r in runs:
        for label, rows_ in (("idle after start", r.idle), (f"after the {REQUESTS} chats", r.after)):
            mem_rows.append(
                [
                    r.store,
                    r.workers,
                    label,
                    _mb(rows_),
                    sum(m.rss_mb for m in rows_),
                    sum(m.pss_mb for m in rows_),
                ]
            )
    out.append(table(["store", "workers", "when", "per process RSS", "RSS sum", "PSS sum"], mem_rows))
    out.append(
        "\nGoal: a serving process < 300 MB. With the embedded local model: not measured here "
        "(loading it takes minutes)."
    )
    return out


def _spread(runs: list[Run]) -> list[str]:
    """Each configuration over its passes: one burst varies more than most changes move it, so a goal is
    judged on how many passes meet it, not on one."""
    if PASSES == 1:
        return []
    out = [f"\n## Added latency over {PASSES} interleaved passes (ms)\n"]
    rows = []
    for config in dict.fromkeys(r.config for r in runs):
        mine = [r for r in runs if r.config == config]
        p99 = [r.added[1] for r in mine]
        errors = sum(len(r.ours.samples) - len(r.ours.ok) for r in mine)
        rows.append(
            [
                config,
                " · ".join(f"{r.added[0]:.1f} / {r.added[1]:.1f}" for r in mine),
                sorted(p99)[len(p99) // 2],
                max(p99),
                f"{sum(v < 100 for v in p99)} of {len(p99)}",
                errors,
            ]
        )
    out.append(
        table(
            [
                "configuration",
                "added p50 / p99 by pass",
                "median p99",
                "worst p99",
                "passes with p99 < 100",
                "errors, all passes",
            ],
            rows,
        )
    )
    return out


def _representative(runs: list[Run]) -> list[Run]:
    """One run a configuration for the plots: the pass with the median added p99."""
    chosen = []
    for config in dict.fromkeys(r.config for r in runs):
        mine = sorted((r for r in runs if r.config == config), key=lambda r: r.added[1])
        chosen.append(mine[len(mine) // 2])
    return chosen


def run() -> list[str]:
    loads = os.getloadavg()
    llm_port = free_port()
    fake = fake_llm(llm_port, mode="text", first_token_delay=FIRST_TOKEN, delay=INTER_CHUNK, lean=True)
    runs: list[Run] = []
    logs = Path(tempfile.mkdtemp(prefix="cw-bench-logs-"))
    with process(fake, ready_url=f"http://127.0.0.1:{llm_port}/v1/models"), _postgres() as pg:
        for pass_no in range(1, PASSES + 1):
            if "sqlite" in STORES:
                for workers in WORKERS:
                    runs.append(_one_run(workers, llm_port, logs, pass_no=pass_no))
            if pg is not None:
                runs += [_one_run(workers, llm_port, logs, pg=pg, pass_no=pass_no) for workers in WORKERS]
    out = _report(runs, loads)
    out.append(f"\nServer logs kept in {logs}")
    every = {r.label: (r.baseline.shown(), r.ours.shown()) for r in runs}
    (logs / "samples.json").write_text(json.dumps(every))  # to redraw the plots without another burst
    series = {r.config: (r.baseline.shown(), r.ours.shown()) for r in _representative(runs)}
    written = _plots.concurrency(PLOTS, series, requests=REQUESTS, spread=SPREAD)
    out.append("\nPlots: " + ", ".join(str(p) for p in written))
    return out


@contextmanager
def _postgres() -> Iterator[tuple[str, str] | None]:
    """A throwaway PostgreSQL with the corpus ingested once as a template, or None without it in
    ``BENCH_CONCURRENCY_STORES``; every run copies the template."""
    if "postgresql" not in STORES:
        yield None
        return
    from tests.pg import start_postgres, stop_postgres

    tmp = Path(tempfile.mkdtemp(prefix="cw-bench-pg-"))
    tmp.chmod(0o755)  # the server may run as another user (tests/pg.py)
    server = start_postgres(tmp)
    try:
        yield server, pg_corpus(server)
    finally:
        stop_postgres(server)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    print("\n".join(run()), file=sys.stdout)
