"""On SQLite, a turn's opening and closing transactions run as one job each on the writer thread
(``Database.write``, store/db.py): one hand-off per transaction instead of one per statement, so
SQLite's write lock is held only for the SQL. Each job is its own transaction; a failing job is raised
to its caller and the next one still commits; the thread ends with the Database."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, func, insert, select, update

from careerwise.engine import TurnRequest
from careerwise.errors import ConversationBusyError, KnowledgeUnavailableError, NotFoundError
from careerwise.events import DoneEvent
from careerwise.services import Services
from careerwise.store import Conversation, Database, Message, Trace
from careerwise.store.db import PostgresWriter
from careerwise.store.models import new_id
from tests.conftest import ready
from tests.fakes.fake_llm import FakeLLM, text

CONVERSATIONS = Conversation.__table__
WRITER = "careerwise-sqlite-writer"


def _insert_conversation(title: str) -> Callable[[Connection], str]:
    def job(connection: Connection) -> str:
        conv_id: str = new_id()
        now = datetime.now(UTC)
        connection.execute(
            insert(CONVERSATIONS),
            {"id": conv_id, "title": title, "channel": "web", "created_at": now, "updated_at": now},
        )
        return conv_id

    return job


async def _titles(db: Database) -> list[str]:
    async with db.session() as s:
        return sorted((await s.scalars(select(Conversation.title))).all())


@pytest.fixture
async def db(tmp_path: Path) -> Any:
    database = Database(f"sqlite+aiosqlite:///{tmp_path / 'w.db'}")
    database.migrate()
    yield database
    await database.dispose()


async def test_each_job_is_one_transaction_on_the_one_writer_thread(db: Database) -> None:
    seen: list[tuple[str, bool]] = []

    def job(i: int) -> Callable[[Connection], int]:
        def run(connection: Connection) -> int:
            seen.append((threading.current_thread().name, connection.in_transaction()))
            _insert_conversation(f"c{i:02}")(connection)
            return i

        return run

    results = await asyncio.gather(*(db.write(job(i), name="test") for i in range(30)))
    assert results == list(range(30))
    assert seen == [(WRITER, True)] * 30
    assert await _titles(db) == [f"c{i:02}" for i in range(30)]
    assert db.writer is not None and db.writer.done == 30 and not db.writer.failures


async def test_a_failing_job_is_raised_to_its_caller_and_the_next_jobs_commit(db: Database) -> None:
    class Boom(RuntimeError):
        pass

    def failing(connection: Connection) -> None:
        _insert_conversation("rolled back")(connection)
        raise Boom("the job's own failure")

    outcomes = await asyncio.gather(
        db.write(_insert_conversation("before"), name="test"),
        db.write(failing, name="failing"),
        db.write(_insert_conversation("after"), name="test"),
        return_exceptions=True,
    )
    assert isinstance(outcomes[1], Boom)
    assert isinstance(outcomes[0], str) and isinstance(outcomes[2], str)
    assert await _titles(db) == ["after", "before"]  # the failed job's row was rolled back
    assert db.writer is not None and db.writer.failures == {"failing": 1}


async def test_a_failure_of_ours_is_counted_even_when_it_is_one_of_our_errors(db: Database) -> None:
    """Only the caller's answers (404, 409, 400) are refusals; a 5xx-class error of ours raised inside a
    job is a failure like any other: raised, rolled back, counted."""

    def refused(connection: Connection) -> None:
        raise ConversationBusyError("busy")

    def broken(connection: Connection) -> None:
        _insert_conversation("rolled back")(connection)
        raise KnowledgeUnavailableError("the index could not be read")

    with pytest.raises(ConversationBusyError):
        await db.write(refused, name="refused")
    with pytest.raises(KnowledgeUnavailableError):
        await db.write(broken, name="broken")
    assert await _titles(db) == []
    assert db.writer is not None and db.writer.failures == {"broken": 1}


async def test_a_job_whose_caller_left_before_it_started_is_not_run(db: Database) -> None:
    release = threading.Event()

    def blocking(connection: Connection) -> None:
        release.wait(30)

    first = asyncio.ensure_future(db.write(blocking, name="blocking"))
    second = asyncio.ensure_future(db.write(_insert_conversation("never"), name="test"))
    await asyncio.sleep(0)
    second.cancel()
    with pytest.raises(asyncio.CancelledError):
        await second
    release.set()
    await first
    await db.write(_insert_conversation("later"), name="test")  # the queue is in order: "never" is past
    assert await _titles(db) == ["later"]


async def test_a_job_that_committed_after_its_caller_left_is_undone(db: Database) -> None:
    started, release = threading.Event(), threading.Event()

    def slow(connection: Connection) -> str:
        started.set()
        release.wait(30)
        return _insert_conversation("opened")(connection)

    def undo(connection: Connection, conv_id: str) -> None:
        connection.execute(update(CONVERSATIONS).where(CONVERSATIONS.c.id == conv_id).values(title="undone"))

    caller = asyncio.ensure_future(db.write(slow, name="slow", undo=undo))
    await asyncio.to_thread(started.wait, 30)
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    release.set()
    for _ in range(500):  # the undo is queued when the commit's outcome reaches this loop
        if db.writer is not None and db.writer.done >= 2:
            break
        await asyncio.sleep(0.01)
    assert await _titles(db) == ["undone"]


async def test_the_writer_and_the_async_sessions_meet_at_sqlite_lock(db: Database) -> None:
    """Other writes of the process (the async session, behind its asyncio lock) still work beside the
    writer thread: they wait for each other at SQLite's lock (busy_timeout), as two processes do."""

    async def session_write(i: int) -> None:
        async with db.session() as s, s.begin():
            s.add(Conversation(title=f"s{i:02}"))
            await s.flush()
            await asyncio.sleep(0.001)

    await asyncio.gather(
        *(session_write(i) for i in range(20)),
        *(db.write(_insert_conversation(f"w{i:02}"), name="test") for i in range(20)),
    )
    async with db.session() as s:
        assert await s.scalar(select(func.count()).select_from(Conversation)) == 40


async def test_the_thread_ends_with_the_database(tmp_path: Path) -> None:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'w.db'}")
    db.migrate()
    await db.write(_insert_conversation("one"), name="test")
    assert db.writer is not None and db.writer.running
    assert WRITER in [t.name for t in threading.enumerate()]
    await db.dispose()
    assert not db.writer.running
    assert WRITER not in [t.name for t in threading.enumerate()]
    # for good: a write after dispose is refused, and starts no thread (store/db.py ``_submit``)
    with pytest.raises(RuntimeError, match="after the database was closed"):
        await db.write(_insert_conversation("two"), name="test")
    assert WRITER not in [t.name for t in threading.enumerate()]
    with pytest.raises(RuntimeError, match="threads were stopped"):  # nor does reading its engine make one
        _ = db.writer.engine
    assert db.writer._engine is None
    assert await _titles(db) == ["one"]
    await db.dispose()


async def test_a_memory_database_has_no_writer_thread_and_postgresql_has_its_own() -> None:
    """An in-memory SQLite database is private to its connection, so its writes stay on the async
    session; PostgreSQL gets its writer threads (tests/integration/test_pg_writer.py). No thread runs
    before the first write, so neither needs a reachable server here."""
    memory = Database("sqlite+aiosqlite:///:memory:")
    pg = Database("postgresql://u:p@127.0.0.1:1/none", writer_threads=3)
    try:
        assert memory.writer is None
        assert isinstance(pg.writer, PostgresWriter) and pg.writer.threads == 3 and not pg.writer.running
    finally:
        await memory.dispose()
        await pg.dispose()


async def test_without_the_writer_thread_a_job_runs_on_the_async_session(tmp_path: Path) -> None:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'w.db'}", writer_thread=False)
    db.migrate()
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
    assert threads and WRITER not in threads


async def test_turns_keep_the_busy_refusal_and_the_ownership_check(
    make_services: Callable[..., Services], fake_llm: FakeLLM, db_overrides: dict[str, Any]
) -> None:
    """Through the writer (SQLite) and the async session (PostgreSQL): a second pending reply in a
    conversation is refused (409), someone else's conversation is not found (404), and a turn's
    answer and trace are stored."""
    services = await ready(make_services(**db_overrides))
    fake_llm.responder = lambda body: text("先研究公司，再準備三個實例。")
    events = [e async for e in services.engine.run(TurnRequest(message="面試怎麼準備", user_id="u1"))]
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.status == "ok"
    conv_id = done.conversation_id
    async with services.db.session() as s:
        reply = await s.get(Message, done.message_id)
        trace = await s.get(Trace, done.trace_id)
    assert reply is not None and reply.status == "ok" and reply.content == "先研究公司，再準備三個實例。"
    assert trace is not None and trace.status == "ok"

    with pytest.raises(NotFoundError):
        [
            e
            async for e in services.engine.run(
                TurnRequest(message="再一題", conversation_id=conv_id, user_id="u2")
            )
        ]

    async with services.db.session() as s, s.begin():  # a reply being written (another process's turn)
        now = datetime.now(UTC)
        s.add(
            Message(conversation_id=conv_id, role="assistant", content="", status="pending", created_at=now)
        )
    with pytest.raises(ConversationBusyError):
        [
            e
            async for e in services.engine.run(
                TurnRequest(message="再一題", conversation_id=conv_id, user_id="u1")
            )
        ]
    if services.db.writer is not None:  # refusals are the caller's answers, not failures of ours
        assert services.db.writer.done >= 2 and not services.db.writer.failures
