"""PostgreSQL's share of the 200-stream burst: its own CPU, its statements a turn, and the writer threads'
waits (docs/benchmarks.md, "PostgreSQL's share of the burst").

``python -m bench._pgturn`` (not in ``make bench``; about 1.5 min a variant after a minute of ingest):
one throwaway PostgreSQL (tests/pg.py), the corpus ingested once, then ``bench/concurrency.py``'s burst
(PostgreSQL, one worker) once per variant, round robin over ``BENCH_PGTURN_ROUNDS`` rounds, so a noisy
minute lands on one run of each. A variant is a set of settings given to the server through its
environment: ``BENCH_PGTURN_VARIANTS`` is ``;``-separated, each ``name:KEY=VALUE,KEY=VALUE`` (default: the
writer's statements one by one, then batched as shipped).

What each run adds to the burst's own report:

- *PostgreSQL's CPU*: the postmaster and every backend (other processes than the server's, so not in
  its "server CPU"), from ``/proc`` over the CareerWise burst only.
- *Statements a turn*: with ``BENCH_PGTURN_STATEMENTS=1`` the server logs every statement
  (``log_statement=all``, which costs PostgreSQL some CPU of its own: keep it off when comparing CPU);
  the lines the burst made are counted by kind and divided by the completed turns. One logged line is
  one round trip: a batched query of several statements is logged as one line, counted under its first
  statement's kind.
- *The threads' jobs*: a probe in the serving process (a ``sitecustomize`` on its ``PYTHONPATH``,
  measurement only, :func:`install`) times each :class:`~careerwise.store.db.ThreadWriter` job: queued
  (handed over → a thread takes it), checkout (→ the connection is ours), SQL (→ COMMIT is sent; a
  reader's job has none), commit, the thread's own CPU over all of it, and on the loop the whole wait
  (the call → the result back on the loop). Wall minus CPU on the thread is time off the CPU: the
  server's answer and the GIL.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

from bench.common import ROOT, pct, table

OUT_ENV = "BENCH_PGTURN_OUT"  # set for the serving process: where the probe writes its records
_RECORDS: list[dict[str, Any]] = []
_RECORDS_LOCK = threading.Lock()
_LOCAL = threading.local()


# ---------------------------------------------------------------- the probe, inside the serving process


def install() -> None:
    """Wrap ThreadWriter's jobs with clocks and write the records to ``$BENCH_PGTURN_OUT`` every second.
    Measurement only: started from a generated ``sitecustomize``, never by the app."""
    out = os.environ.get(OUT_ENV)
    if not out:
        return
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    from careerwise.store import db as store_db

    writer_cls = store_db.ThreadWriter
    original_run = writer_cls.run
    original_job = writer_cls._run

    async def run(self: Any, job: Any, *, name: str, **options: Any) -> Any:
        t0 = time.perf_counter()
        stamp = {"name": name, "role": type(self).__name__, "t_wall": time.time(), "t_call": t0}

        def timed(connection: Any) -> Any:
            stamp["t_sql"] = time.perf_counter()
            return job(connection)

        try:
            return await original_run(self, timed, name=name, **options)
        finally:
            stamp["t_back"] = time.perf_counter()
            _keep(stamp)

    def run_job(self: Any, engine: Any, item: Any) -> None:
        stamp = {"t_start": time.perf_counter(), "cpu0": time.thread_time()}
        _LOCAL.stamp = stamp
        try:
            original_job(self, engine, item)
        finally:
            _LOCAL.stamp = None
            stamp["t_end"] = time.perf_counter()
            stamp["cpu"] = time.thread_time() - stamp["cpu0"]
            # the job's own closure holds the loop-side stamp (see ``run``): join them there
            closure = getattr(item.run, "__closure__", None) or ()
            for cell in closure:
                value = cell.cell_contents
                if isinstance(value, dict) and "t_call" in value:
                    value.update(stamp)

    def committing(_connection: Any) -> None:
        stamp = getattr(_LOCAL, "stamp", None)
        if stamp is not None:
            stamp["t_commit"] = time.perf_counter()

    event.listen(Engine, "commit", committing)
    writer_cls.run = run
    writer_cls._run = run_job
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    threading.Thread(target=_dump, args=(folder / f"{os.getpid()}.jsonl",), daemon=True).start()


def _keep(stamp: dict[str, Any]) -> None:
    with _RECORDS_LOCK:
        _RECORDS.append(stamp)


def _dump(path: Path) -> None:
    while True:
        time.sleep(1.0)
        with _RECORDS_LOCK:
            batch, _RECORDS[:] = list(_RECORDS), []
        if batch:
            with path.open("a") as fh:
                for stamp in batch:
                    fh.write(json.dumps(stamp) + "\n")


# ---------------------------------------------------------------- the harness


def _variants() -> list[tuple[str, dict[str, str]]]:
    spec = os.environ.get(
        "BENCH_PGTURN_VARIANTS",
        "one by one:CAREERWISE_DATABASE_WRITER_BATCH=false;batch:CAREERWISE_DATABASE_WRITER_BATCH=true",
    )
    out = []
    for part in filter(None, (p.strip() for p in spec.split(";"))):
        name, _, pairs = part.partition(":")
        env = dict(pair.split("=", 1) for pair in pairs.split(",") if pair)
        out.append((name, env))
    return out


def _statement_kind(line: str) -> str | None:
    """``LOG:  statement: BEGIN`` / ``LOG:  execute <unnamed>: INSERT INTO traces ...`` → a short kind."""
    for marker in ("statement: ", "execute "):
        at = line.find(marker)
        if at < 0 or "LOG:" not in line[:at]:
            continue
        sql = line[at + len(marker) :]
        if marker == "execute ":
            sql = sql.split(": ", 1)[-1]
        words = sql.split()
        if not words:
            return None
        head = words[0].upper().rstrip(";")  # a batch's first statement: "BEGIN; INSERT ..."
        if head in ("INSERT", "DELETE") and len(words) > 2:
            return f"{head} {words[2]}"
        if head == "UPDATE" and len(words) > 1:
            return f"UPDATE {words[1]}"
        if head == "SELECT":
            low = sql.lower()
            at_from = low.find(" from ")
            return "SELECT " + (low[at_from + 6 :].split()[0] if at_from >= 0 else words[1][:20])
        return head
    return None


def _statements(log: Path, start: int) -> Counter[str]:
    counts: Counter[str] = Counter()
    with log.open("rb") as fh:
        fh.seek(start)
        for raw in fh:
            kind = _statement_kind(raw.decode(errors="replace"))
            if kind is not None:
                counts[kind] += 1
    return counts


def _jobs(folder: Path, since: float, until: float) -> list[dict[str, Any]]:
    out = []
    for path in folder.glob("*.jsonl"):
        for line in path.read_text().splitlines():
            stamp = json.loads(line)
            if since <= stamp.get("t_wall", 0) <= until and "t_start" in stamp:
                out.append(stamp)
    return out


def _ms(values: list[float]) -> str:
    return f"{pct(values, 50):.1f} / {pct(values, 99):.1f}" if values else "–"


def _job_rows(label: str, jobs: list[dict[str, Any]]) -> list[list[object]]:
    rows: list[list[object]] = []
    for name in sorted({j["name"] for j in jobs}):
        mine = [j for j in jobs if j["name"] == name]

        def span(a: str, b: str, mine: list[dict[str, Any]] = mine) -> list[float]:
            return [1000 * (j[b] - j[a]) for j in mine if a in j and b in j]

        rows.append(
            [
                label,
                name,
                len(mine),
                _ms(span("t_call", "t_start")),
                _ms(span("t_start", "t_sql")),
                _ms(span("t_sql", "t_commit") or span("t_sql", "t_end")),
                _ms(span("t_commit", "t_end")),
                _ms([1000 * j["cpu"] for j in mine]),
                _ms([1000 * (j["t_end"] - j["t_start"]) - 1000 * j["cpu"] for j in mine]),
                _ms(span("t_end", "t_back")),
                _ms(span("t_call", "t_back")),
            ]
        )
    return rows


def run() -> list[str]:
    from bench import _serve, concurrency
    from bench._serve import cpu_seconds, pg_corpus
    from bench.common import fake_llm, free_port, lean_fake, process
    from tests.pg import server_for, start_postgres, stop_postgres

    variants = _variants()
    rounds = int(os.environ.get("BENCH_PGTURN_ROUNDS", "1"))
    log_statements = os.environ.get("BENCH_PGTURN_STATEMENTS", "0") == "1"
    probe_dir = Path(tempfile.mkdtemp(prefix="cw-pgturn-"))
    (probe_dir / "sitecustomize.py").write_text(
        "import os\nif os.environ.get('BENCH_PGTURN_OUT'):\n    import bench._pgturn as _p\n    _p.install()\n"
    )
    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", OUT_ENV)}
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(probe_dir), str(ROOT), os.environ.get("PYTHONPATH")])
    )
    logs = Path(tempfile.mkdtemp(prefix="cw-pgturn-logs-"))
    tmp = Path(tempfile.mkdtemp(prefix="cw-pgturn-pg-"))
    tmp.chmod(0o755)  # the server may run as another user (tests/pg.py)
    llm_port = free_port()
    maker = lean_fake if concurrency.PROVIDER == "lean" else partial(fake_llm, mode="text")
    fake = maker(llm_port, first_token_delay=concurrency.FIRST_TOKEN, delay=concurrency.INTER_CHUNK)
    results: list[dict[str, Any]] = []
    server = start_postgres(tmp)
    pg = server_for(server)
    assert pg.process is not None
    postmaster = pg.process.pid
    original_burst = concurrency._burst
    original_env = _serve.server_env
    try:
        if log_statements:
            _admin(server, "ALTER SYSTEM SET log_statement = 'all'", "SELECT pg_reload_conf()")
        template = pg_corpus(server)
        with process(fake, ready_url=f"http://127.0.0.1:{llm_port}/v1/models") as provider:
            for round_no in range(1, rounds + 1):
                for name, env in variants:
                    seen: dict[str, Any] = {}

                    async def burst(
                        url: str, *, ours: bool, client: str | None = None, seen: dict[str, Any] = seen
                    ) -> Any:
                        if not ours:
                            return await original_burst(url, ours=ours, client=client)
                        seen["cpu0"], seen["log0"] = cpu_seconds(postmaster), pg.log_file.stat().st_size
                        seen["t0"] = time.time()
                        result = await original_burst(url, ours=ours, client=client)
                        seen["t1"] = time.time()
                        seen["cpu"] = cpu_seconds(postmaster) - seen["cpu0"]
                        seen["statements"] = _statements(pg.log_file, seen["log0"]) if log_statements else {}
                        await asyncio.sleep(2.5)  # the probe writes its records every second
                        return result

                    out_dir = probe_dir / f"jobs-{round_no}-{len(results)}"
                    os.environ[OUT_ENV] = str(out_dir)
                    for key, value in env.items():
                        os.environ[key] = value
                    concurrency._burst = burst
                    # the variant's settings on top of the burst's own (server_env sets some of them)
                    _serve.server_env = partial(_with_variant, original_env, env)
                    try:
                        r = concurrency._one_run(
                            1, llm_port, provider.pid, logs, pg=(server, template), pass_no=len(results) + 1
                        )
                    finally:
                        concurrency._burst = original_burst
                        _serve.server_env = original_env
                        for key in env:
                            os.environ.pop(key, None)
                    jobs = _jobs(out_dir, seen["t0"], seen["t1"] + 30)
                    results.append({"name": name, "round": round_no, "run": r, "seen": seen, "jobs": jobs})
                    print(
                        f"{name}, round {round_no}: added p50/p99 {r.added[0]:.1f} / {r.added[1]:.1f}",
                        flush=True,
                    )
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old
        stop_postgres(server)
        shutil.rmtree(tmp, ignore_errors=True)
    return [*_report(results, log_statements), f"\nServer logs kept in {logs}; probe records in {probe_dir}"]


def _with_variant(original: Any, variant: dict[str, str], data_dir: Path, llm_port: int) -> dict[str, str]:
    env: dict[str, str] = original(data_dir, llm_port)
    return env | variant


def _admin(server_url: str, *statements: str) -> None:
    import psycopg
    from sqlalchemy.engine import make_url

    u = make_url(server_url)
    with psycopg.connect(
        host=u.host, port=u.port, user=u.username, dbname="postgres", autocommit=True
    ) as conn:
        for statement in statements:
            conn.execute(statement)  # our own fixed statements  # type: ignore[arg-type]


def _report(results: list[dict[str, Any]], log_statements: bool) -> list[str]:
    out = [
        "## PostgreSQL's share of the burst (PostgreSQL, one worker; bench/_pgturn.py)\n",
    ]
    rows = []
    for res in results:
        r, seen = res["run"], res["seen"]
        turns = max(1, len(r.ours.ok))
        stores = [t.store_turn_ms for t in r.turns.values()]
        rows.append(
            [
                res["name"],
                res["round"],
                f"{len(r.ours.samples) - len(r.ours.ok)}",
                f"{r.added[0]:.1f} / {r.added[1]:.1f}",
                _ms(stores),
                f"{1000 * r.cpu_s / turns:.1f}",
                f"{1000 * seen['cpu'] / turns:.1f}",
                f"{r.load[0]:.2f} / {r.load[1]:.2f}",
            ]
        )
    out.append(
        table(
            [
                "variant",
                "round",
                "errors",
                "added p50 / p99 ms",
                "storing the turn p50 / p99 ms",
                "server CPU ms a turn",
                "PostgreSQL CPU ms a turn",
                "load before / after",
            ],
            rows,
        )
    )
    job_rows: list[list[object]] = []
    for res in results:
        job_rows += _job_rows(f"{res['name']} r{res['round']}", res["jobs"])
    out.append("\n### The threads' jobs during the burst, p50 / p99 ms\n")
    out.append(
        table(
            [
                "run",
                "job",
                "n",
                "queued",
                "checkout",
                "SQL",
                "commit",
                "thread CPU",
                "thread off-CPU",
                "back to the loop",
                "whole wait on the loop",
            ],
            job_rows,
        )
    )
    if log_statements:
        out.append("\n### Statements the server logged during the burst, a completed turn\n")
        kinds = sorted({k for res in results for k in res["seen"]["statements"]})
        srows = []
        for kind in kinds:
            srows.append(
                [kind]
                + [
                    f"{res['seen']['statements'].get(kind, 0) / max(1, len(res['run'].ours.ok)):.2f}"
                    for res in results
                ]
            )
        srows.append(
            ["all"]
            + [
                f"{sum(res['seen']['statements'].values()) / max(1, len(res['run'].ours.ok)):.2f}"
                for res in results
            ]
        )
        out.append(table(["statement", *[f"{r['name']} r{r['round']}" for r in results]], srows))
    return out


# ---------------------------------------------------------------- the writer's jobs on a busy loop, alone

JOB_TURNS = int(os.environ.get("BENCH_PGTURN_JOB_TURNS", "200"))
JOB_BUSY = int(os.environ.get("BENCH_PGTURN_JOB_BUSY", "150"))  # tasks burning 0.1 ms every 20 ms
JOB_ROUNDS = int(os.environ.get("BENCH_PGTURN_JOB_ROUNDS", "3"))
HITS = 300


def _turn_jobs(budget: Any) -> tuple[Any, Any]:
    """The engine's opening (a new conversation) and closing jobs, statement for statement
    (engine.py's ``_insert_turn`` and ``_close``, on its own DirectStatements), with a trace's six
    events and two spans and the day's token count."""
    from datetime import UTC, datetime, timedelta

    from careerwise import engine as e
    from careerwise.store import TraceEvent
    from careerwise.store.models_observability import TraceSpan

    events_table, spans_table = TraceEvent.__table__, TraceSpan.__table__

    def opening(ids: dict[str, str]) -> Any:
        now = datetime.now(UTC)
        conv = {
            "id": ids["conv"],
            "title": "面試怎麼準備",
            "channel": "web",
            "created_at": now,
            "updated_at": now,
        }
        common = {"conversation_id": ids["conv"], "trace_id": ids["trace"]}
        messages = [
            common
            | {
                "id": ids["user"],
                "role": "user",
                "content": "面試怎麼準備",
                "status": "ok",
                "created_at": now,
            },
            common
            | {"id": ids["reply"], "role": "assistant", "content": "", "status": "pending"}
            | {"created_at": now + timedelta(microseconds=1)},
        ]
        trace = {
            "id": ids["trace"],
            "conversation_id": ids["conv"],
            "user_message_id": ids["user"],
            "assistant_message_id": ids["reply"],
            "channel": "web",
            "assistant_id": "summer",
            "model": "fake",
            "started_at": now,
        }

        def job(connection: Any) -> None:
            e._INSERT_CONVERSATION.send(connection, conv)
            e._INSERT_MESSAGE.send(connection, messages)
            e._INSERT_TRACE.send(connection, trace)

        return job

    def closing(ids: dict[str, str]) -> Any:
        reply = {"reply": ids["reply"], "content": "先研究公司。" * 20, "status": "ok"}
        values = {"trace": ids["trace"], "status": "ok", "flow": "career", "duration_ms": 1500.0}
        values |= {"timings": {"routing_ms": 0.4, "store_turn_ms": 3.1}, "usage": {"prompt_tokens": 30}}
        events = [
            {"trace_id": ids["trace"], "seq": i, "t_ms": float(i), "type": "status", "payload": {"i": i}}
            for i in range(6)
        ]
        spans = [
            {"trace_id": ids["trace"], "seq": i, "kind": k, "name": k, "start_ms": 1.0, "attributes": {}}
            for i, k in enumerate(("route", "llm"))
        ]

        def job(connection: Any) -> None:
            if e._FINISH_REPLY.execute(connection, reply) != 1:
                raise LookupError("the pending reply is gone")
            e._FINISH_TRACE.send(connection, values)
            e._insert_rows(events_table).send(connection, events)
            e._insert_rows(spans_table).send(connection, spans)
            budget.add_on(connection, "ip:127.0.0.1", 40)

        return job

    return opening, closing


def _timed_job(job: Any, kind: str, local: threading.local) -> Any:
    """``job`` that notes when its thread took it; :func:`_on_checkin` closes the clock when the
    connection goes back to the pool, after the COMMIT."""

    def run(connection: Any) -> Any:
        local.start = (kind, time.perf_counter(), time.thread_time())
        return job(connection)

    return run


def _on_checkin(local: threading.local, out: dict[str, list[float]]) -> Any:
    def checkin(_dbapi_connection: Any, _record: Any) -> None:
        start = getattr(local, "start", None)
        if start is None:
            return
        kind, w0, c0 = start
        local.start = None
        out[f"{kind} on the thread"].append(1000 * (time.perf_counter() - w0))
        out[f"{kind} thread CPU"].append(1000 * (time.thread_time() - c0))

    return checkin


async def _busy(stop: asyncio.Event, lag: list[float]) -> None:
    while not stop.is_set():
        t0 = time.perf_counter()
        await asyncio.sleep(0.02)
        lag.append(1000 * (time.perf_counter() - t0 - 0.02))
        t1 = time.perf_counter()
        while time.perf_counter() - t1 < 0.0001:
            pass


async def _jobs_burst(url: str, batch: bool, out: dict[str, list[float]]) -> None:
    from sqlalchemy import event

    from careerwise.budget import TokenBudget
    from careerwise.store import Database
    from careerwise.store.models import new_id

    db = Database(url, writer_batch=batch)
    opening, closing = _turn_jobs(TokenBudget(db, 0))
    stop = asyncio.Event()
    lag: list[float] = []
    busy = [asyncio.create_task(_busy(stop, lag)) for _ in range(JOB_BUSY)]
    local = threading.local()
    mine: dict[str, list[float]] = {k: [] for k in _JOB_KEYS}
    event.listen(db.write_engine, "checkin", _on_checkin(local, mine))

    async def turn(delay: float) -> None:
        await asyncio.sleep(delay)
        ids = {k: new_id() for k in ("conv", "user", "reply", "trace")}
        t0 = time.perf_counter()
        await db.write(_timed_job(opening(ids), "opening", local), name="turn opening", direct_only=True)
        t1 = time.perf_counter()
        await asyncio.sleep(0.5)
        t2 = time.perf_counter()
        await db.write(_timed_job(closing(ids), "closing", local), name="turn closing", direct_only=True)
        t3 = time.perf_counter()
        mine["opening wait"].append(1000 * (t1 - t0))
        mine["closing wait"].append(1000 * (t3 - t2))

    try:
        await asyncio.gather(*(turn(i * 0.01) for i in range(20)))
        lag.clear()
        for values in mine.values():
            values.clear()
        await asyncio.gather(*(turn(i * 2.0 / JOB_TURNS) for i in range(JOB_TURNS)))
        mine["loop lag"] += lag
        for key, values in mine.items():
            out[key] += values
    finally:
        stop.set()
        await asyncio.gather(*busy)
        await db.dispose()


async def _round_trips(url: str, batch: bool, folder: Path) -> tuple[float, float]:
    """Round trips a job: libpq's protocol trace of the writer's one connection, its ReadyForQuery
    messages counted (one per query: per statement one by one, per answer waited for batched)."""
    from psycopg import pq
    from sqlalchemy import event

    from careerwise.budget import TokenBudget
    from careerwise.store import Database
    from careerwise.store.models import new_id

    db = Database(url, writer_batch=batch, writer_threads=1)
    opening, closing = _turn_jobs(TokenBudget(db, 0))
    trace_path = folder / f"trace-{batch}.txt"
    fh = trace_path.open("w")

    def traced(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.pgconn.trace(fh.fileno())
        dbapi_connection.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)

    event.listen(db.write_engine, "connect", traced)
    counts = []
    try:
        for job_of in (opening, closing):
            ids = {k: new_id() for k in ("conv", "user", "reply", "trace")}
            if job_of is closing:
                await db.write(opening(ids), name="turn opening", direct_only=True)
            fh.flush()
            before = trace_path.read_text().count("ReadyForQuery")
            for _ in range(10):  # the closing's UPDATEs match by id alone: it can be repeated
                job = closing(ids) if job_of is closing else opening({k: new_id() for k in ids})
                await db.write(job, name="job", direct_only=True)
            fh.flush()
            total = trace_path.read_text().count("ReadyForQuery") - before
            counts.append(total / 10)
    finally:
        await db.dispose()
        fh.close()
    return counts[0], counts[1]


async def _limit_cpu(url: str, old: bool) -> tuple[float, float]:
    """Loop-thread CPU and wall ms a hit of the shared rate limit, ``HITS`` hits one after another:
    ``old`` is the upsert on the async session's autocommit connection (asyncpg) as it was, otherwise
    :class:`~careerwise.ratelimit.SharedRateLimiter` as it is (a reader thread)."""
    from careerwise.ratelimit import SharedRateLimiter
    from careerwise.store import Database

    db = Database(url)
    limiter = SharedRateLimiter(db, scope="anonymous_chat", limit=10**9)
    try:

        async def hit(i: int) -> None:
            if not old:
                await limiter.hit(f"10.0.0.{i % 50}")
                return
            now = time.time()
            params = {
                "p_scope": "anonymous_chat",
                "p_key": f"10.0.0.{i % 50}",
                "p_now": now,
                "p_ended": now - 60,
            }
            async with db.session(autocommit=True) as s, s.begin():
                (await s.execute(limiter._upsert, params)).one()

        for i in range(30):
            await hit(i)
        c0, w0 = time.thread_time(), time.perf_counter()
        for i in range(HITS):
            await hit(i)
        return 1000 * (time.thread_time() - c0) / HITS, 1000 * (time.perf_counter() - w0) / HITS
    finally:
        await db.dispose()


def jobs() -> list[str]:
    from careerwise.store import Database
    from tests.pg import start_postgres, stop_postgres

    # CPython hands the GIL to a waiting thread only after the holder ran this long (5 ms by default):
    # a writer thread that let go of it for a round trip waits up to that to get it back from a busy loop
    switch = float(os.environ.get("BENCH_PGTURN_SWITCH_INTERVAL", "0") or 0)
    if switch > 0:
        sys.setswitchinterval(switch)

    folder = Path(tempfile.mkdtemp(prefix="cw-pgturn-jobs-"))
    folder.chmod(0o755)
    url = start_postgres(folder)
    results: dict[bool, dict[str, list[float]]] = {p: {k: [] for k in _JOB_KEYS} for p in (False, True)}
    limits: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    loads = []
    try:
        Database(url).migrate()
        trips = {p: asyncio.run(_round_trips(url, p, folder)) for p in (False, True)}
        for _ in range(JOB_ROUNDS):
            for batch in (False, True):
                loads.append(os.getloadavg()[0])
                asyncio.run(_jobs_burst(url, batch, results[batch]))
            for old in (True, False):
                limits[old].append(asyncio.run(_limit_cpu(url, old)))
    finally:
        stop_postgres(url)
        shutil.rmtree(folder, ignore_errors=True)
    rows = [[key, *[_ms(results[p][key]) for p in (False, True)]] for key in _JOB_KEYS]
    rows.append(
        ["round trips: opening / closing", *[f"{trips[p][0]:.1f} / {trips[p][1]:.1f}" for p in (False, True)]]
    )
    lim_rows = [
        [
            "before (async session, asyncpg)" if old else "after (reader thread)",
            " · ".join(f"{c:.3f}" for c, _w in limits[old]),
            " · ".join(f"{w:.3f}" for _c, w in limits[old]),
        ]
        for old in (True, False)
    ]
    return [
        f"## The turn's writes on a busy loop, one by one / batched ({JOB_TURNS} turns in 2 s, {JOB_BUSY} busy "
        f"tasks, {JOB_ROUNDS} rounds interleaved, switch interval {sys.getswitchinterval() * 1000:.1f} ms; "
        f"load average at each run {', '.join(f'{x:.1f}' for x in loads)})\n",
        table(["p50 / p99 ms", "one by one", "batch"], rows),
        f"\n## The shared rate limit, {HITS} hits one after another (ms a hit, one figure a round)\n",
        table(["variant", "event-loop thread CPU", "wall"], lim_rows),
    ]


_JOB_KEYS = (
    "opening wait",
    "closing wait",
    "opening on the thread",
    "closing on the thread",
    "opening thread CPU",
    "closing thread CPU",
    "loop lag",
)


if __name__ == "__main__":
    print("\n".join(jobs() if sys.argv[1:] == ["jobs"] else run()), file=sys.stdout)
