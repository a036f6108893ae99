"""On PostgreSQL, ``Database.write`` jobs (a turn's opening and closing) run on a few writer threads,
each job on a synchronous psycopg connection in a transaction of its own (``PostgresWriter``,
store/db.py): one hand-off to a thread and one back instead of one event-loop hop per statement. The
guarantees are SQLite's writer's: a caller gone before its job starts skips it, one gone while it runs
has it committed and then undone, a failure is counted and raised and the next job runs, and the
threads end with the Database. Real PostgreSQL (tests/pg.py)."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlalchemy import Connection, text, update

from careerwise.errors import ConversationBusyError
from careerwise.services import Services
from careerwise.store import Conversation, Database
from careerwise.store.db import PostgresWriter
from tests.integration.conftest import admin_connection
from tests.integration.test_sqlite_writer import _insert_conversation, _titles

CONVERSATIONS = Conversation.__table__
WRITER = "careerwise-pg-writer"
THREADS = 3


def _writer(db: Database) -> PostgresWriter:
    assert isinstance(db.writer, PostgresWriter)
    return db.writer


def _writer_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(WRITER)]


@pytest.fixture
def migrated(pg_empty_database: str) -> Iterator[str]:
    Database(pg_empty_database).migrate()
    yield pg_empty_database


@pytest.fixture
async def db(migrated: str) -> Any:
    database = Database(migrated, writer_threads=THREADS)
    yield database
    await database.dispose()


async def _block_every_thread(db: Database) -> tuple[list[asyncio.Future[None]], threading.Event]:
    """Occupy all writer threads with jobs that wait for the returned event."""
    started = threading.Semaphore(0)
    release = threading.Event()

    def blocking(connection: Connection) -> None:
        started.release()
        release.wait(30)

    blockers = [asyncio.ensure_future(db.write(blocking, name="blocking")) for _ in range(THREADS)]
    for _ in range(THREADS):
        assert await asyncio.to_thread(started.acquire, True, 30)
    return blockers, release


async def test_each_job_is_one_transaction_on_a_writer_thread_with_psycopg(db: Database) -> None:
    seen: list[tuple[str, bool, str]] = []

    def job(i: int) -> Callable[[Connection], int]:
        def run(connection: Connection) -> int:
            seen.append(
                (threading.current_thread().name, connection.in_transaction(), connection.dialect.driver)
            )
            _insert_conversation(f"c{i:02}")(connection)
            return i

        return run

    results = await asyncio.gather(*(db.write(job(i), name="test") for i in range(30)))
    assert results == list(range(30))
    assert {name for name, _, _ in seen} <= {f"{WRITER}-{i}" for i in range(1, THREADS + 1)}
    assert all(in_tx and driver == "psycopg" for _, in_tx, driver in seen) and len(seen) == 30
    assert await _titles(db) == [f"c{i:02}" for i in range(30)]
    writer = _writer(db)
    assert writer.done == 30 and not writer.failures
    assert db.write_engine is writer.engine  # what tests that watch the turn's statements listen to


async def test_the_threads_run_jobs_side_by_side(db: Database) -> None:
    """Each of the N jobs waits at a barrier for the other N-1: they all pass only if N threads run
    them at once (with fewer, the barrier breaks and the jobs fail)."""
    barrier = threading.Barrier(THREADS, timeout=30)
    names: list[str] = []

    def meet(connection: Connection) -> str:
        names.append(threading.current_thread().name)
        barrier.wait()
        return _insert_conversation(threading.current_thread().name)(connection)

    await asyncio.gather(*(db.write(meet, name="meet") for _ in range(THREADS)))
    assert sorted(names) == [f"{WRITER}-{i}" for i in range(1, THREADS + 1)]
    assert _writer(db).running_threads == THREADS and not _writer(db).failures


async def test_a_failing_job_is_counted_raised_and_the_next_jobs_commit(db: Database) -> None:
    class Boom(RuntimeError):
        pass

    def failing(connection: Connection) -> None:
        _insert_conversation("rolled back")(connection)
        raise Boom("the job's own failure")

    with pytest.raises(Boom):
        await db.write(failing, name="failing")
    await db.write(_insert_conversation("after"), name="test")
    assert await _titles(db) == ["after"]  # the failed job's row was rolled back
    assert _writer(db).failures == {"failing": 1} and _writer(db).done == 1


async def test_a_refusal_is_raised_but_not_counted_as_a_failure(
    db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    def refused(connection: Connection) -> None:
        _insert_conversation("refused")(connection)
        raise ConversationBusyError("a reply is still being written")

    with (
        caplog.at_level(logging.INFO, logger="careerwise.store.threads"),
        pytest.raises(ConversationBusyError),
    ):
        await db.write(refused, name="turn opening")
    assert await _titles(db) == []
    assert not _writer(db).failures
    assert any("was refused and rolled back" in r.getMessage() for r in caplog.records)


async def test_a_database_error_rolls_back_and_the_connection_serves_the_next_job(db: Database) -> None:
    """A statement PostgreSQL rejects aborts the transaction; the writer rolls it back and its
    connection goes on serving jobs."""

    def bad(connection: Connection) -> None:
        connection.execute(text("SELECT * FROM no_such_table"))

    for _ in range(THREADS + 1):
        with pytest.raises(Exception, match="no_such_table"):
            await db.write(bad, name="bad sql")
    await asyncio.gather(*(db.write(_insert_conversation(f"ok{i}"), name="test") for i in range(THREADS * 2)))
    assert len(await _titles(db)) == THREADS * 2
    assert _writer(db).failures == {"bad sql": THREADS + 1}


async def test_a_job_whose_caller_left_before_it_started_is_not_run(db: Database) -> None:
    blockers, release = await _block_every_thread(db)
    waiting = asyncio.ensure_future(db.write(_insert_conversation("never"), name="test"))
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    release.set()
    await asyncio.gather(*blockers)
    # once each thread has taken one more job, "never" (queued before them) is past
    await asyncio.gather(*(db.write(_insert_conversation(f"later{i}"), name="test") for i in range(THREADS)))
    assert await _titles(db) == [f"later{i}" for i in range(THREADS)]
    assert _writer(db).done == 2 * THREADS and not _writer(db).failures


async def test_a_job_that_committed_after_its_caller_left_is_undone(db: Database) -> None:
    started, release = threading.Event(), threading.Event()

    def slow(connection: Connection) -> str:
        conv_id = _insert_conversation("opened")(connection)
        started.set()
        release.wait(30)
        return conv_id

    def undo(connection: Connection, conv_id: str) -> None:
        connection.execute(update(CONVERSATIONS).where(CONVERSATIONS.c.id == conv_id).values(title="undone"))

    caller = asyncio.ensure_future(db.write(slow, name="slow", undo=undo))
    await asyncio.to_thread(started.wait, 30)
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    release.set()
    for _ in range(500):  # the undo is queued when the commit's outcome reaches this loop
        if _writer(db).done >= 2:
            break
        await asyncio.sleep(0.01)
    assert await _titles(db) == ["undone"]
    assert _writer(db).done == 2 and not _writer(db).failures


def test_a_job_that_ends_after_its_loop_closed_is_logged(
    migrated: str, caplog: pytest.LogCaptureFixture
) -> None:
    db = Database(migrated, writer_threads=1)
    started, release = threading.Event(), threading.Event()

    def slow(connection: Connection) -> str:
        started.set()
        release.wait(30)
        return _insert_conversation("late")(connection)

    async def leave_early() -> None:
        job = asyncio.ensure_future(db.write(slow, name="late"))
        await asyncio.to_thread(started.wait, 30)
        job.cancel()

    with caplog.at_level(logging.ERROR, logger="careerwise.store.threads"):
        asyncio.run(leave_early())  # the loop is closed when this returns
        release.set()
        _writer(db).stop()  # waits for the job
    assert any("after its event loop closed" in r.getMessage() for r in caplog.records)
    assert _writer(db).done == 1


async def test_an_idle_writer_connection_the_server_dropped_is_replaced(migrated: str) -> None:
    db = Database(migrated, writer_threads=1, ping_after_idle=0.2)

    def pid(connection: Connection) -> int:
        return int(connection.execute(text("SELECT pg_backend_pid()")).scalar_one())

    try:
        first = await db.write(pid, name="pid")
        with admin_connection(migrated) as admin:  # what a server restart does to the pool
            admin.execute("SELECT pg_terminate_backend(%s)", (first,))
        await asyncio.sleep(0.4)
        second = await db.write(pid, name="pid")  # no error: the ping found the dead connection
        assert second != first and not _writer(db).failures
    finally:
        await db.dispose()


def _connections_to(url: str, database: str) -> int:
    with admin_connection(url) as admin:
        row = admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (database,),
        ).fetchone()
    return int(row[0]) if row else 0


async def test_dispose_ends_the_threads_and_closes_their_connections(migrated: str) -> None:
    db = Database(migrated, writer_threads=THREADS)
    name = db.engine.url.database
    assert name is not None
    barrier = threading.Barrier(THREADS, timeout=30)

    def meet(connection: Connection) -> None:
        barrier.wait()  # every thread checks out its own connection
        _insert_conversation("x")(connection)

    await asyncio.gather(*(db.write(meet, name="meet") for _ in range(THREADS)))
    assert sorted(_writer_threads()) == [f"{WRITER}-{i}" for i in range(1, THREADS + 1)]
    assert await asyncio.to_thread(_connections_to, migrated, name) >= THREADS
    await db.dispose()
    assert not _writer(db).running and _writer_threads() == []
    for _ in range(200):  # a backend leaves pg_stat_activity a moment after its client closed
        if await asyncio.to_thread(_connections_to, migrated, name) == 0:
            break
        await asyncio.sleep(0.02)
    assert await asyncio.to_thread(_connections_to, migrated, name) == 0
    # for good: a write after dispose is refused, and starts no thread (store/db.py ``_submit``)
    with pytest.raises(RuntimeError, match="after the database was closed"):
        await db.write(_insert_conversation("again"), name="test")
    assert not _writer(db).running and _writer_threads() == []


async def test_without_writer_threads_a_job_runs_on_the_async_session(migrated: str) -> None:
    db = Database(migrated, writer_thread=False)
    threads: list[str] = []

    def job(connection: Connection) -> str:
        threads.append(threading.current_thread().name)
        return _insert_conversation("on the session")(connection)

    try:
        assert db.writer is None
        await db.write(job, name="test")
        assert await _titles(db) == ["on the session"]
    finally:
        await db.dispose()
    assert threads and not threads[0].startswith(WRITER)


async def test_the_setting_sizes_the_writer_of_the_app(
    make_services: Callable[..., Services], migrated: str
) -> None:
    services = make_services(database_url=migrated, database_writer_threads=2)
    writer = _writer(services.db)
    assert writer.threads == 2
    barrier = threading.Barrier(2, timeout=30)

    def meet(connection: Connection) -> str:
        barrier.wait()
        return threading.current_thread().name

    names = await asyncio.gather(*(services.db.write(meet, name="meet") for _ in range(2)))
    assert sorted(names) == [f"{WRITER}-1", f"{WRITER}-2"]
