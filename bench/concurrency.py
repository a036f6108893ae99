"""200 streaming chats connected within 2 s, with one worker and with two; and the serving memory.

The provider is the fake OpenAI-compatible server in its own process (500 ms to the first token, 20 ms
between chunks), `careerwise serve --workers N` another, the load generator this one: everything shares
the machine's cores, so the numbers include the fake's and the client's own slowdown under load. The
baseline, measured in the same run just before each CareerWise burst, is the same 200 requests sent
straight to the fake's /v1/chat/completions with the same client.

Added latency compares distributions, not pairs (a request to the fake and one to CareerWise have
nothing to pair on): added pN = (time to first visible text through CareerWise) pN - (the moment the
provider's own stream allows text to be shown) pN, the latter being its GUARD-th non-blank chunk, as in
bench/ttft.py (the buffer guard's window counts as the provider's share).

Where the time goes comes from the stored traces (the turn's clock starts after the turn is stored):
routing and LLM spans, the LLM call's time to first chunk as the app saw it, the trace's first-text mark;
and from the CPU seconds the serving processes used during the burst.

Both stores: SQLite (a copy of the ingested corpus database) and PostgreSQL (a throwaway server from
tests/pg.py, the corpus ingested once and copied per run as a template). ``BENCH_CONCURRENCY_STORES``
(``sqlite,postgresql`` by default) picks them; ``BENCH_CONCURRENCY_WORKERS`` (``1,2``) the worker counts.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench import _plots
from bench._serve import Memory, cpu_seconds, data_dir_with_corpus, memory, pg_copy, pg_corpus, serve
from bench.common import fake_llm, free_port, pct, process, table

FIRST_TOKEN = 0.50
INTER_CHUNK = 0.02
GUARD = 3
REQUESTS = 200
SPREAD = 2.0  # seconds over which the connections are opened, evenly
WORKERS = tuple(int(w) for w in os.environ.get("BENCH_CONCURRENCY_WORKERS", "1,2").split(","))
STORES = tuple(os.environ.get("BENCH_CONCURRENCY_STORES", "sqlite,postgresql").split(","))
MESSAGE = (
    "面試怎麼準備 {i}"  # routes to career/simple (path B with the text-mode fake); numbered: no two alike
)
PLOTS = Path(__file__).resolve().parent.parent / "docs" / "benchmarks"


@dataclass
class Sample:
    start_s: float  # when the request was sent, from the burst's start
    headers_ms: float | None = None
    first_ms: float | None = None  # provider: first non-blank token; ours: first delta
    shown_ms: float | None = None  # provider: GUARD-th non-blank token; ours: first delta
    end_ms: float | None = None
    error: str | None = None
    trace_id: str | None = None


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


async def _provider(client: httpx.AsyncClient, url: str, i: int, sample: Sample, t0: float) -> None:
    body = {
        "model": "fake",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": MESSAGE.format(i=i)}],
    }
    counted = 0
    finished = False
    async with client.stream("POST", url, json=body) as r:
        sample.headers_ms = 1000 * (time.perf_counter() - t0)
        if r.status_code != 200:
            sample.error = f"HTTP {r.status_code}: {(await r.aread())[:200]!r}"
            return
        async for line in r.aiter_lines():
            if line == "data: [DONE]":
                finished = True
            elif line.startswith("data: "):
                for choice in json.loads(line[6:]).get("choices", []):
                    content = (choice.get("delta") or {}).get("content")
                    if content and content.strip():
                        counted += 1
                        now = 1000 * (time.perf_counter() - t0)
                        if counted == 1:
                            sample.first_ms = now
                        if counted == GUARD:
                            sample.shown_ms = now
    if not finished:
        sample.error = "stream ended without [DONE]"


async def _ours(client: httpx.AsyncClient, url: str, i: int, sample: Sample, t0: float) -> None:
    event = ""
    done: dict[str, object] | None = None
    async with client.stream("POST", url, json={"message": MESSAGE.format(i=i)}) as r:
        sample.headers_ms = 1000 * (time.perf_counter() - t0)
        if r.status_code != 200:
            sample.error = f"HTTP {r.status_code}: {(await r.aread())[:200]!r}"
            return
        async for line in r.aiter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                if event == "delta" and sample.first_ms is None:
                    sample.first_ms = sample.shown_ms = 1000 * (time.perf_counter() - t0)
                elif event == "error" and sample.error is None:
                    sample.error = f"error event {json.loads(line[6:]).get('code')}"
                elif event == "done":
                    done = json.loads(line[6:])
    if done is None:
        sample.error = sample.error or "stream ended without a done event"
        return
    sample.trace_id = str(done.get("trace_id"))
    if done.get("status") != "ok":
        sample.error = sample.error or f"done status {done.get('status')}"
    elif sample.first_ms is None:
        sample.error = "no text"


async def _burst(url: str, *, ours: bool) -> Burst:
    # a connection per stream and none kept afterwards: 200 clients, not one multiplexing client
    limits = httpx.Limits(max_connections=REQUESTS + 10, max_keepalive_connections=0)
    timeout = httpx.Timeout(120, connect=30)
    one = _ours if ours else _provider
    async with httpx.AsyncClient(limits=limits, timeout=timeout) as client:
        origin = time.perf_counter()
        samples = [Sample(start_s=i * SPREAD / REQUESTS) for i in range(REQUESTS)]

        async def run(i: int) -> None:
            sample = samples[i]
            await asyncio.sleep(max(0.0, origin + sample.start_s - time.perf_counter()))
            t0 = time.perf_counter()
            sample.start_s = t0 - origin  # the loop may be late: record when it really went
            try:
                await one(client, url, i, sample, t0)
            except httpx.HTTPError as exc:
                sample.error = f"{type(exc).__name__}: {exc}"[:200]
            sample.end_ms = 1000 * (time.perf_counter() - t0)

        await asyncio.gather(*(run(i) for i in range(REQUESTS)))
        return Burst(samples, time.perf_counter() - origin)


# ---------------------------------------------------------------- where the time goes (stored traces)


@dataclass
class TurnTimes:
    """One turn's timeline from its trace, in ms on the turn's clock (0 = the turn stored, routing starts)."""

    route_ms: float
    route_end_ms: float
    llm_start_ms: float
    llm_ttft_ms: float
    first_text_ms: float
    duration_ms: float
    status: str
    store_turn_ms: float  # storing the turn's start, waits included (before the clock: part of "pre")


def _traces(db_url: str, ids: list[str]) -> dict[str, TurnTimes]:
    from sqlalchemy import bindparam, create_engine, text

    from careerwise.store.db import sync_url

    engine = create_engine(sync_url(db_url))
    traces = text(
        "SELECT id, first_text_ms, duration_ms, status, timings FROM traces WHERE id IN :ids"
    ).bindparams(bindparam("ids", expanding=True))
    spans_q = text(
        "SELECT kind, start_ms, duration_ms, attributes FROM trace_spans WHERE trace_id = :t ORDER BY seq"
    )
    try:
        out: dict[str, TurnTimes] = {}
        with engine.connect() as con:
            for tid, first, duration, status, timings in con.execute(traces, {"ids": ids}):
                spans = con.execute(spans_q, {"t": tid}).all()
                route = next((sp for sp in spans if sp[0] == "route"), None)
                llm = next((sp for sp in spans if sp[0] == "llm"), None)
                if route is None or llm is None or first is None:
                    continue
                attrs = llm[3] if isinstance(llm[3], dict) else json.loads(llm[3] or "{}")
                ttft = attrs.get("ttft_ms")
                out[tid] = TurnTimes(
                    route[2],
                    route[1] + route[2],
                    llm[1],
                    float(ttft or "nan"),
                    first,
                    duration or 0.0,
                    status,
                    float(_json(timings).get("store_turn_ms", "nan")),
                )
        return out
    finally:
        engine.dispose()


def _json(value: object) -> dict[str, Any]:
    """A JSON column as read through the plain driver: a dict (psycopg) or its text (sqlite3)."""
    if isinstance(value, dict):
        return value
    return json.loads(value) if isinstance(value, str | bytes) else {}


@dataclass
class Run:
    store: str  # "SQLite" or "PostgreSQL"
    workers: int
    baseline: Burst
    ours: Burst
    idle: list[Memory]
    after: list[Memory]
    turns: dict[str, TurnTimes] = field(default_factory=dict)
    log_problems: dict[str, int] = field(default_factory=dict)
    load: tuple[float, float] = (0.0, 0.0)
    cpu_s: float = 0.0  # CPU seconds the serving processes used during the CareerWise burst

    @property
    def label(self) -> str:
        return f"{self.store}, --workers {self.workers}"


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


def _one_run(workers: int, llm_port: int, logs: Path, pg: tuple[str, str] | None = None) -> Run:
    """``pg``: (server URL, template database) to run on a fresh PostgreSQL copy; None: SQLite."""
    data_dir = data_dir_with_corpus() if pg is None else Path(tempfile.mkdtemp(prefix="cw-bench-"))
    store = "SQLite" if pg is None else "PostgreSQL"
    db_url = (
        f"sqlite+aiosqlite:///{data_dir / 'careerwise.db'}"
        if pg is None
        else pg_copy(pg[0], pg[1], f"bench_run_w{workers}")
    )
    env = {} if pg is None else {"CAREERWISE_DATABASE_URL": db_url}
    try:
        port = free_port()
        log = logs / f"serve-{store.lower()}-workers{workers}.log"
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
        ids = [s.trace_id for s in ours.samples if s.trace_id]
        turns = _traces(db_url, ids) if ids else {}
        return Run(
            store, workers, baseline, ours, idle, after, turns, _log_problems(log_text), (load0, load1), cpu_s
        )
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


async def _warm(url: str, n: int) -> list[str]:
    """A few turns first, so each worker has its connections, caches and the embedder warm."""
    async with httpx.AsyncClient(timeout=60) as client:
        errors = []
        for i in range(n):
            sample = Sample(0.0)
            await _ours(client, f"{url}/api/chat", 10_000 + i, sample, time.perf_counter())
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
    out += _breakdown(runs)
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


def _breakdown(runs: list[Run]) -> list[str]:
    out = ["\n## Where the time goes (p50 / p99 ms, from the stored traces of the CareerWise requests)\n"]
    rows = []
    for r in runs:
        pairs = [(s, r.turns[s.trace_id]) for s in r.ours.ok if s.trace_id in r.turns]
        if not pairs:
            continue

        def cell(values: list[float]) -> str:
            if not values:
                return "-"
            return f"{pct(values, 50):.0f} / {pct(values, 99):.0f}"

        # client clock: 0 = request sent, pre = the turn's work before its clock starts (session, settings
        # read, storing the conversation, messages and trace); the response headers leave with the route
        # event, at pre + routing end. The turn's duration is taken when it starts storing its trace.
        pre = {id(s): s.headers_ms - t.route_end_ms for s, t in pairs if s.headers_ms is not None}
        complete = [(s, t, pre[id(s)]) for s, t in pairs if id(s) in pre and s.shown_ms and s.end_ms]
        rows.append(
            [
                r.store,
                r.workers,
                len(complete),
                cell([p for _, _, p in complete]),
                cell([t.store_turn_ms for _, t, _ in complete if t.store_turn_ms == t.store_turn_ms]),
                cell([t.route_ms for _, t, _ in complete]),
                cell([t.llm_start_ms - t.route_end_ms for _, t, _ in complete]),
                cell([t.llm_ttft_ms for _, t, _ in complete]),
                cell([t.first_text_ms - t.llm_start_ms - t.llm_ttft_ms for _, t, _ in complete]),
                cell([s.shown_ms - p - t.first_text_ms for s, t, p in complete if s.shown_ms]),
                cell([s.end_ms - p - t.duration_ms for s, t, p in complete if s.end_ms]),
            ]
        )
    out.append(
        table(
            [
                "store",
                "workers",
                "turns",
                "before the turn: session, settings, storing the turn",
                "of which storing the turn",
                "routing",
                "routing end to LLM request",
                "provider first chunk, as the app saw it",
                f"guard window (chunks 1-{GUARD}) + forwarding",
                "first text to the client",
                "after done: storing the trace, closing",
            ],
            rows,
        )
    )
    out.append(
        "\nThe turn clock starts after the turn is stored; routing is the router's embedding of the "
        "question; 'provider first chunk, as the app saw it' includes the fake's own slowdown under load."
    )
    return out


def run() -> list[str]:
    loads = os.getloadavg()
    llm_port = free_port()
    fake = fake_llm(llm_port, mode="text", first_token_delay=FIRST_TOKEN, delay=INTER_CHUNK)
    runs: list[Run] = []
    logs = Path(tempfile.mkdtemp(prefix="cw-bench-logs-"))
    with process(fake, ready_url=f"http://127.0.0.1:{llm_port}/v1/models"):
        if "sqlite" in STORES:
            for workers in WORKERS:
                runs.append(_one_run(workers, llm_port, logs))
        if "postgresql" in STORES:
            runs += _pg_runs(llm_port, logs)
    out = _report(runs, loads)
    out.append(f"\nServer logs kept in {logs}")
    series = {r.label: (r.baseline.shown(), r.ours.shown()) for r in runs}
    (logs / "samples.json").write_text(json.dumps(series))  # to redraw the plots without another burst
    written = _plots.concurrency(PLOTS, series)
    out.append("\nPlots: " + ", ".join(str(p.relative_to(PLOTS.parent.parent)) for p in written))
    return out


def _pg_runs(llm_port: int, logs: Path) -> list[Run]:
    from tests.pg import start_postgres, stop_postgres

    tmp = Path(tempfile.mkdtemp(prefix="cw-bench-pg-"))
    tmp.chmod(0o755)  # the server may run as another user (tests/pg.py)
    server = start_postgres(tmp)
    try:
        template = pg_corpus(server)
        return [_one_run(workers, llm_port, logs, pg=(server, template)) for workers in WORKERS]
    finally:
        stop_postgres(server)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    print("\n".join(run()), file=sys.stdout)
