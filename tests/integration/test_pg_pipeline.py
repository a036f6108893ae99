"""PostgreSQL's writer threads send a pipelined job's statements in psycopg's pipeline mode
(``PostgresWriter``, ``store/direct.py``'s ``send`` and ``pipelined``): a statement whose answer nobody
waits for travels with the next one that needs an answer, or with the COMMIT. What must not change: the
row counts the turn checks, the 404 and 409 it gives, an error raised and the whole job rolled back,
the next job served, and every committed row durable when the job returns. Real PostgreSQL; the turn's
own tests run on both stores (on SQLite ``send`` is ``execute``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import pytest
from psycopg import pq
from sqlalchemy import Connection, bindparam, event, func, insert, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from careerwise.engine import TurnRequest
from careerwise.errors import ConversationBusyError, NotFoundError
from careerwise.events import DoneEvent, Event
from careerwise.services import Services
from careerwise.store import Conversation, Database, Message, Trace, TraceEvent
from careerwise.store.db import PostgresWriter
from careerwise.store.direct import DirectStatement
from careerwise.store.models import new_id
from careerwise.store.models_budget import TokenUsage
from tests.conftest import ready
from tests.fakes.fake_llm import FakeLLM, text

CONVERSATIONS = Conversation.__table__
INSERT = DirectStatement(insert(CONVERSATIONS))
RETITLE = DirectStatement(update(CONVERSATIONS).where(CONVERSATIONS.c.id == bindparam("conv")))


@pytest.fixture
async def db(pg_empty_database: str) -> AsyncIterator[Database]:
    Database(pg_empty_database).migrate()
    # one connection: the next job reuses it
    database = Database(pg_empty_database, writer_threads=1, writer_pipeline=True)
    yield database
    await database.dispose()


def _conversation(title: str, conv_id: str | None = None) -> dict[str, Any]:
    now = datetime.now(UTC)
    return {"id": conv_id or new_id(), "title": title, "channel": "web", "created_at": now, "updated_at": now}


@contextmanager
def _pipeline_states(engine: Engine) -> Iterator[list[tuple[str, bool]]]:
    """For each statement the engine's connections send: its first word, and whether the connection
    was in pipeline mode."""
    states: list[tuple[str, bool]] = []

    def on_statement(_conn: object, cursor: Any, statement: str, *_args: object) -> None:
        states.append(
            (statement.split()[0], cursor.connection.pgconn.pipeline_status != pq.PipelineStatus.OFF)
        )

    event.listen(engine, "before_cursor_execute", on_statement)
    try:
        yield states
    finally:
        event.remove(engine, "before_cursor_execute", on_statement)


async def _titles(db: Database) -> list[str]:
    async with db.session() as s:
        return sorted((await s.scalars(select(Conversation.title))).all())


async def test_a_pipelined_job_sends_in_pipeline_mode_and_its_rows_are_committed(db: Database) -> None:
    def store(connection: Connection) -> None:
        INSERT.send(connection, _conversation("a"))
        INSERT.send(connection, [_conversation("b"), _conversation("c")])

    with _pipeline_states(db.write_engine) as states:
        await db.write(store, name="pipelined", pipelined=True)
    assert states == [("BEGIN", True), ("INSERT", True), ("INSERT", True)]  # our BEGIN: queued too
    assert await _titles(db) == ["a", "b", "c"]  # committed when the job returned, seen elsewhere

    with _pipeline_states(db.write_engine) as states:  # a job that does not say it may be: as before
        await db.write(lambda c: INSERT.execute(c, _conversation("d")), name="plain")
    assert states == [("BEGIN", False), ("INSERT", False)]
    assert await _titles(db) == ["a", "b", "c", "d"]


async def test_execute_inside_the_pipeline_returns_the_true_row_count(db: Database) -> None:
    known = new_id()

    def store(connection: Connection) -> tuple[int, int]:
        INSERT.send(connection, _conversation("old", known))
        # the answer is needed: the queued INSERT travels with it, so the UPDATE sees its row
        found = RETITLE.execute(connection, {"conv": known, "title": "new"})
        missing = RETITLE.execute(connection, {"conv": new_id(), "title": "nobody"})
        return found, missing

    assert await db.write(store, name="counts", pipelined=True) == (1, 0)
    assert await _titles(db) == ["new"]


async def test_a_queued_statement_that_fails_rolls_the_job_back_and_the_next_job_commits(
    db: Database,
) -> None:
    twice = new_id()

    def store(connection: Connection) -> None:
        INSERT.send(connection, _conversation("first", twice))
        INSERT.send(connection, _conversation("duplicate", twice))  # fails in the server, at the COMMIT
        INSERT.send(connection, _conversation("after it"))

    with pytest.raises(IntegrityError):
        await db.write(store, name="duplicate", pipelined=True)
    assert await _titles(db) == []  # all of the job or none of it
    assert isinstance(db.writer, PostgresWriter) and db.writer.counts()[1] == {"duplicate": 1}
    await db.write(lambda c: INSERT.send(c, _conversation("next")), name="next", pipelined=True)
    assert await _titles(db) == ["next"]


async def test_a_queued_failure_is_raised_by_the_next_statement_that_waits(db: Database) -> None:
    twice = new_id()
    raised_at: list[str] = []

    def store(connection: Connection) -> None:
        INSERT.send(connection, _conversation("first", twice))
        INSERT.send(connection, _conversation("duplicate", twice))
        try:
            RETITLE.execute(connection, {"conv": twice, "title": "x"})
        except IntegrityError:
            raised_at.append("execute")
            raise

    with pytest.raises(IntegrityError):
        await db.write(store, name="duplicate", pipelined=True)
    assert raised_at == ["execute"]
    assert await _titles(db) == []


async def test_the_pipeline_is_off_unless_the_setting_turns_it_on(
    make_services: Callable[..., Services], pg_empty_database: str
) -> None:
    services = make_services(with_corpus=False, database_url=pg_empty_database, database_writer_batch=False)
    assert isinstance(services.db.writer, PostgresWriter) and services.db.writer.pipeline is False
    with _pipeline_states(services.db.write_engine) as states:
        await services.db.write(lambda c: INSERT.send(c, _conversation("a")), name="t", pipelined=True)
    assert states == [("BEGIN", False), ("INSERT", False)]


async def _drain(services: Services, req: TurnRequest) -> list[Event]:
    return [e async for e in services.engine.run(req)]


async def _count(services: Services, table: Any, **where: Any) -> int:
    async with services.db.session() as s:
        stmt = select(func.count()).select_from(table).where(*(table.c[k] == v for k, v in where.items()))
        return int(await s.scalar(stmt) or 0)


async def test_a_turn_stores_the_same_rows_and_gives_the_same_refusals(
    make_services: Callable[..., Services], fake_llm: FakeLLM, db_overrides: dict[str, Any]
) -> None:
    """On both stores: a new conversation, a second turn in it, an unknown conversation (404), and a
    conversation whose reply is still pending (409); on PostgreSQL every statement pipelined."""
    services = await ready(
        make_services(
            daily_token_budget=100_000,
            database_writer_pipeline=True,
            database_writer_batch=False,
            **db_overrides,
        )
    )
    postgres = services.db.is_postgresql
    fake_llm.script(text("好的。"), text("好。"))
    with _pipeline_states(services.db.write_engine) if postgres else _no_states() as states:
        first = (await _drain(services, TurnRequest(message="面試怎麼準備", budget_key="ip:10.0.0.1")))[-1]
        assert isinstance(first, DoneEvent) and first.status == "ok"
        conv = first.conversation_id
        second = (
            await _drain(
                services, TurnRequest(message="再多說一點", conversation_id=conv, budget_key="ip:10.0.0.1")
            )
        )[-1]
        assert isinstance(second, DoneEvent) and second.status == "ok"
        with pytest.raises(NotFoundError):
            await _drain(services, TurnRequest(message="有人嗎", conversation_id=new_id()))
    if postgres:
        assert states and all(pipelined for _word, pipelined in states)
    messages = Message.__table__
    assert await _count(services, messages, conversation_id=conv, status="ok") == 4
    trace = Trace.__table__
    assert await _count(services, trace, conversation_id=conv, status="ok") == 2
    assert await _count(services, TraceEvent.__table__, trace_id=first.trace_id) > 0
    async with services.db.session() as s:  # the closing's token count, sent with its COMMIT
        counted = await s.scalar(select(func.sum(TokenUsage.tokens)))
    assert counted is not None and counted > 0

    async with services.db.session() as s, s.begin():  # another process is writing a reply here
        s.add(Message(conversation_id=conv, role="assistant", content="", status="pending"))
    with pytest.raises(ConversationBusyError):
        await _drain(services, TurnRequest(message="還有嗎", conversation_id=conv))
    assert await _count(services, messages, conversation_id=conv) == 5  # the refused turn stored nothing


@contextmanager
def _no_states() -> Iterator[list[tuple[str, bool]]]:
    yield []
