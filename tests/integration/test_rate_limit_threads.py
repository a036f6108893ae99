"""The shared rate limit's upsert runs off the event loop (ratelimit.SharedRateLimiter, Database.write_atomic).

On PostgreSQL it ran on the async session (one asyncpg upsert through the loop, 1.0–1.7 ms of the loop's
CPU a request, docs/benchmarks.md); it now runs on a reader thread's autocommit connection, and on SQLite
on the writer thread. The counting itself is unchanged: the same limit, refusal, ``Retry-After`` and
clean-up, on both stores, and concurrent hits still meet one limit."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import event, select
from sqlalchemy.engine import Engine

from careerwise.errors import RateLimitedError
from careerwise.ratelimit import SharedRateLimiter
from careerwise.store import Database, RateLimitWindow


@pytest.fixture
async def db(empty_db_url: str) -> AsyncIterator[Database]:
    database = Database(empty_db_url, writer_threads=2)
    yield database
    await database.dispose()


def _thread_engine(db: Database) -> Engine:
    """Where the limiter's statements must run: the reader threads' engine on PostgreSQL, the writer's
    on SQLite."""
    if db.is_postgresql:
        assert db.reader is not None
        return db.reader.engine
    return db.write_engine


async def _rows(db: Database) -> dict[tuple[str, str], int]:
    async with db.session() as s:
        rows = (
            await s.execute(select(RateLimitWindow.scope, RateLimitWindow.key, RateLimitWindow.hits))
        ).all()
    return {(scope, key): hits for scope, key, hits in rows}


async def test_the_upsert_runs_on_a_database_thread_not_on_the_event_loop(db: Database) -> None:
    seen: list[tuple[str, str]] = []

    def on_statement(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        seen.append((threading.current_thread().name, " ".join(statement.split()[:3]).upper()))

    on_loop: list[str] = []

    def on_async(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        if "rate_limit_windows" in statement:
            on_loop.append(statement)

    engine = _thread_engine(db)
    event.listen(engine, "before_cursor_execute", on_statement)
    event.listen(db.engine.sync_engine, "before_cursor_execute", on_async)
    limiter = SharedRateLimiter(db, scope="login", limit=5, clock=lambda: 1_000.0)
    try:
        await limiter.hit("1.2.3.4")
    finally:
        event.remove(engine, "before_cursor_execute", on_statement)
        event.remove(db.engine.sync_engine, "before_cursor_execute", on_async)
    upserts = [name for name, head in seen if head.startswith("INSERT INTO RATE_LIMIT_WINDOWS")]
    expected = "careerwise-reader" if db.is_postgresql else "careerwise-sqlite-writer"
    assert len(upserts) == 1 and upserts[0].startswith(expected), seen
    assert on_loop == []  # nothing of it on the async session
    assert await _rows(db) == {("login", "1.2.3.4"): 1}


async def test_the_limit_the_refusal_and_the_clean_up_are_unchanged(db: Database) -> None:
    now = [1_000.0]
    limiter = SharedRateLimiter(db, scope="login", limit=2, clock=lambda: now[0])
    await limiter.hit("a")
    now[0] += 10
    await limiter.hit("a")
    await limiter.hit("b")
    now[0] += 5
    with pytest.raises(RateLimitedError) as refused:
        await limiter.hit("a")
    assert refused.value.retry_after == 45  # the window opened at 1,000 s and ends at 1,060 s
    assert await _rows(db) == {("login", "a"): 3, ("login", "b"): 1}
    now[0] = 1_125.0  # both windows ended and the next clean-up is due
    await limiter.hit("c")
    assert await _rows(db) == {("login", "c"): 1}
    assert limiter.cleaned == 2


async def test_concurrent_hits_from_two_processes_meet_one_limit(db: Database) -> None:
    other = Database(db.url, writer_threads=2)
    try:
        limiters = [SharedRateLimiter(d, scope="user_chat", limit=20) for d in (db, other)]

        async def one(i: int) -> bool:
            try:
                await limiters[i % 2].hit("user-1")
            except RateLimitedError:
                return False
            return True

        results = await asyncio.gather(*(one(i) for i in range(25)))
        assert sum(results) == 20
        await limiters[0].hit("user-2")  # another user: unaffected
        rows = await _rows(db)
        assert rows[("user_chat", "user-1")] == 25  # refused hits are counted too
        assert rows[("user_chat", "user-2")] == 1
    finally:
        await other.dispose()


async def test_a_failed_upsert_is_counted_and_raised(db: Database) -> None:
    """A database failure is the caller's (a 500), and counted on the thread that ran it."""
    async with db.session() as s, s.begin():
        await s.run_sync(lambda sync: RateLimitWindow.__table__.drop(sync.connection()))
    limiter = SharedRateLimiter(db, scope="login", limit=2)
    with pytest.raises(Exception, match="rate_limit_windows"):
        await limiter.hit("a")
    threads = db.reader if db.is_postgresql else db.writer
    assert threads is not None and threads.counts()[1] == {"rate limit login": 1}
