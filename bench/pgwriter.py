"""PostgreSQL's turn writes on a busy event loop: the async session against writer threads.

A focused harness, not the whole app (the 200-stream burst is ``bench/concurrency.py``): one process, a
throwaway PostgreSQL 16 (tests/pg.py) with the schema migrated, ``BENCH_PGWRITER_BUSY`` background tasks
that each burn 0.1 ms of CPU every 20 ms to keep the event loop as busy as 200 open streams keep it, and
``BENCH_PGWRITER_TURNS`` (200) turns arriving evenly over 2 s. Each turn runs ``Database.write`` twice,
with jobs shaped like a turn's: the opening (a conversation, two messages in one INSERT, a trace) and,
0.5 s later (the streamed answer), the closing (the reply, the trace with its timings, six event rows,
the day's token count upserted on one shared owner, as the burst's anonymous turns from one address do).

Variants, round robin so the shared machine's noise hits all alike: ``session`` is the job on the async
session (``Database(writer_thread=False)``: asyncpg, one event-loop hop per statement, a pooled
connection held across them) and ``threads=N`` is ``PostgresWriter`` with N threads (psycopg 3).
"Wait" is from the call of ``Database.write`` to its result on the loop; "held" is the job's own time,
from its first statement to its return, while it holds its connection (on the session every statement's
hop through the loop is in it). Twenty turns warm each variant up first (connections, prepared statements).

``python -m bench.pgwriter`` (``BENCH_PGWRITER_ROUNDS``, 3; ``BENCH_PGWRITER_THREADS``, ``1,2,4,8``;
``BENCH_PGWRITER_BUSY``, ``100,180``). Not registered in ``make bench``: it answers one design question.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from sqlalchemy import Connection, bindparam, insert, update
from sqlalchemy.dialects import postgresql

from bench.common import pct, table
from careerwise.store import Conversation, Database, Message, Trace
from careerwise.store.db import WriteJob
from careerwise.store.models import TraceEvent, new_id
from careerwise.store.models_budget import TokenUsage

ROUNDS = int(os.environ.get("BENCH_PGWRITER_ROUNDS", "3"))
THREADS = tuple(int(n) for n in os.environ.get("BENCH_PGWRITER_THREADS", "1,2,4,8").split(","))
BUSY = tuple(int(n) for n in os.environ.get("BENCH_PGWRITER_BUSY", "100,180").split(","))
TURNS = int(os.environ.get("BENCH_PGWRITER_TURNS", "200"))
ARRIVALS_S = 2.0
STREAM_S = 0.5
WARMUP = 20

_CONV, _MSG, _TRACE = Conversation.__table__, Message.__table__, Trace.__table__
_FINISH_REPLY = (
    update(_MSG)
    .where(_MSG.c.id == bindparam("reply"))
    .values(content=bindparam("content"), status=bindparam("status"))
)
_FINISH_TRACE = (
    update(_TRACE)
    .where(_TRACE.c.id == bindparam("trace"))
    .values(status=bindparam("status"), duration_ms=bindparam("duration_ms"), timings=bindparam("timings"))
)
_TOKENS = postgresql.insert(TokenUsage.__table__).values(
    owner=bindparam("owner"), day=bindparam("day"), tokens=bindparam("tokens")
)
_UPSERT_TOKENS = _TOKENS.on_conflict_do_update(
    index_elements=["owner", "day"], set_={"tokens": TokenUsage.__table__.c.tokens + _TOKENS.excluded.tokens}
)


@dataclass
class Sample:
    opening_wait: list[float] = field(default_factory=list)
    closing_wait: list[float] = field(default_factory=list)
    sql: list[float] = field(default_factory=list)
    burst_s: list[float] = field(default_factory=list)


def _timed(job: Callable[[Connection], object], sql: list[float]) -> WriteJob[object]:
    def run(connection: Connection) -> object:
        t0 = time.perf_counter()
        try:
            return job(connection)
        finally:
            sql.append((time.perf_counter() - t0) * 1000)

    return run


def _opening(ids: dict[str, str]) -> Callable[[Connection], object]:
    def job(connection: Connection) -> None:
        now = datetime.now(UTC)
        conv, trace = ids["conv"], ids["trace"]
        connection.execute(
            insert(_CONV),
            {"id": conv, "title": "面試怎麼準備", "channel": "web", "created_at": now, "updated_at": now},
        )
        common = {"conversation_id": conv, "trace_id": trace}
        connection.execute(
            insert(_MSG),
            [
                common
                | {"id": ids["user"], "role": "user", "content": "面試怎麼準備", "status": "ok"}
                | {"created_at": now},
                common
                | {"id": ids["reply"], "role": "assistant", "content": "", "status": "pending"}
                | {"created_at": now + timedelta(microseconds=1)},
            ],
        )
        connection.execute(
            insert(_TRACE),
            {
                "id": trace,
                "conversation_id": conv,
                "user_message_id": ids["user"],
                "assistant_message_id": ids["reply"],
                "channel": "web",
                "model": "fake",
                "started_at": now,
                "timings": {},
                "usage": {},
            },
        )

    return job


def _closing(ids: dict[str, str]) -> Callable[[Connection], object]:
    def job(connection: Connection) -> None:
        connection.execute(
            _FINISH_REPLY, {"reply": ids["reply"], "content": "先研究公司。" * 20, "status": "ok"}
        )
        timings = {"routing_ms": 0.4, "store_turn_ms": 3.1, "first_token_ms": 501.0}
        connection.execute(
            _FINISH_TRACE, {"trace": ids["trace"], "status": "ok", "duration_ms": 1500.0, "timings": timings}
        )
        events = [
            {"trace_id": ids["trace"], "seq": i, "t_ms": float(i), "type": "status", "payload": {"i": i}}
            for i in range(6)
        ]
        connection.execute(insert(TraceEvent.__table__), events)
        connection.execute(_UPSERT_TOKENS, {"owner": "ip:127.0.0.1", "day": date.today(), "tokens": 40})

    return job


async def _busy(stop: asyncio.Event) -> None:
    while not stop.is_set():
        await asyncio.sleep(0.02)
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 0.0001:
            pass


async def _turn(db: Database, delay: float, sample: Sample | None, sql: list[float]) -> None:
    await asyncio.sleep(delay)
    ids = {k: new_id() for k in ("conv", "user", "reply", "trace")}
    t0 = time.perf_counter()
    await db.write(_timed(_opening(ids), sql), name="turn opening")
    t1 = time.perf_counter()
    await asyncio.sleep(STREAM_S)
    t2 = time.perf_counter()
    await db.write(_timed(_closing(ids), sql), name="turn closing")
    t3 = time.perf_counter()
    if sample is not None:
        sample.opening_wait.append((t1 - t0) * 1000)
        sample.closing_wait.append((t3 - t2) * 1000)


async def _burst(url: str, threads: int, busy: int, sample: Sample) -> None:
    db = Database(url, writer_thread=threads > 0, writer_threads=max(threads, 1))
    stop = asyncio.Event()
    busy_tasks = [asyncio.create_task(_busy(stop)) for _ in range(busy)]
    try:
        warm: list[float] = []
        await asyncio.gather(*(_turn(db, i * 0.01, None, warm) for i in range(WARMUP)))
        t0 = time.perf_counter()
        await asyncio.gather(*(_turn(db, i * ARRIVALS_S / TURNS, sample, sample.sql) for i in range(TURNS)))
        sample.burst_s.append(time.perf_counter() - t0)
    finally:
        stop.set()
        await asyncio.gather(*busy_tasks)
        await db.dispose()


def _variant(threads: int) -> str:
    return "session (asyncpg)" if threads == 0 else f"threads={threads} (psycopg)"


def run() -> list[str]:
    from tests.pg import start_postgres, stop_postgres

    variants = (0, *THREADS)
    samples = {(busy, v): Sample() for busy in BUSY for v in variants}
    with tempfile.TemporaryDirectory(prefix="bench-pgwriter-") as tmp:
        url = start_postgres(tmp)
        try:
            Database(url).migrate()
            for _ in range(ROUNDS):
                for busy in BUSY:
                    for v in variants:
                        asyncio.run(_burst(url, v, busy, samples[(busy, v)]))
        finally:
            stop_postgres(url)
    load = os.getloadavg()
    rows = []
    for (busy, v), s in samples.items():
        rows.append(
            [
                busy,
                _variant(v),
                f"{pct(s.opening_wait, 50):.1f} / {pct(s.opening_wait, 99):.1f}",
                f"{pct(s.closing_wait, 50):.1f} / {pct(s.closing_wait, 99):.1f}",
                f"{pct(s.sql, 50):.2f} / {pct(s.sql, 99):.2f}",
                ", ".join(f"{b:.2f}" for b in s.burst_s),
                f"{statistics.median(s.opening_wait) / max(pct(samples[(busy, 0)].opening_wait, 50), 1e-9):.2f}",
            ]
        )
    return [
        f"## PostgreSQL's turn writes on a busy loop ({TURNS} turns in {ARRIVALS_S:.0f} s, {ROUNDS} rounds, "
        f"load average after {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f})",
        table(
            [
                "busy tasks",
                "variant",
                "opening wait p50 / p99 ms",
                "closing wait p50 / p99 ms",
                "job held its connection p50 / p99 ms",
                "burst s per round",
                "opening p50 / session's",
            ],
            rows,
        ),
    ]


if __name__ == "__main__":
    print("\n".join(run()))
