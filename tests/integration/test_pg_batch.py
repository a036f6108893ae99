"""PostgreSQL's writer threads send a batched job's statements together (``PostgresWriter(batch=True)``,
``store/direct.py``'s ``batched``): a statement whose answer nobody waits for is kept, its values bound
into its text by psycopg, and travels with the next statement that needs an answer, or with the COMMIT,
as one query of several statements. What must not change: the values stored exactly as given, the row
counts the turn checks, the 404 and 409 it gives, an error raised and the whole job rolled back, the
next job served, and every committed row durable when the job returns. With batch off
(``CAREERWISE_DATABASE_WRITER_BATCH=false``) the same statements go one by one, with the same rows and
refusals. Real PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
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
    database = Database(pg_empty_database, writer_threads=1, writer_batch=True)
    yield database
    await database.dispose()


@pytest.fixture
async def one_by_one(pg_empty_database: str) -> AsyncIterator[Database]:
    Database(pg_empty_database).migrate()
    database = Database(pg_empty_database, writer_threads=1, writer_batch=False)
    yield database
    await database.dispose()


@contextmanager
def _sent(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Each query the batched connections send to the server, as sent."""
    queries: list[str] = []
    execute = psycopg.ClientCursor.execute

    def recording(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        queries.append(str(query))
        return execute(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.ClientCursor, "execute", recording)
    yield queries
    monkeypatch.undo()


@contextmanager
def _statements(engine: Engine) -> Iterator[list[str]]:
    """Each statement the engine's connections run, as the writer runs it: ``before_cursor_execute`` is
    called once a statement, batched or not, before it is kept or sent (so a batch's COMMIT is seen,
    psycopg's own COMMIT, one by one, is not)."""
    statements: list[str] = []

    def on_statement(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", on_statement)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", on_statement)


def _conversation(title: str, conv_id: str | None = None) -> dict[str, Any]:
    now = datetime.now(UTC)
    return {"id": conv_id or new_id(), "title": title, "channel": "web", "created_at": now, "updated_at": now}


async def _titles(db: Database) -> list[str]:
    async with db.session() as s:
        return sorted((await s.scalars(select(Conversation.title))).all())


async def test_a_batched_job_is_one_query_and_its_rows_are_committed(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    def store(connection: Connection) -> None:
        INSERT.send(connection, _conversation("a"))
        INSERT.send(connection, [_conversation("b"), _conversation("c")])

    with _sent(monkeypatch) as queries:
        await db.write(store, name="batched", direct_only=True)
    assert len(queries) == 1
    assert queries[0].startswith("BEGIN; INSERT INTO conversations") and queries[0].endswith("; COMMIT")
    assert await _titles(db) == ["a", "b", "c"]  # committed when the job returned, seen elsewhere

    with _sent(monkeypatch) as queries:  # a job that does not say it may be: as before
        await db.write(lambda c: INSERT.execute(c, _conversation("d")), name="plain")
    assert queries == []
    assert await _titles(db) == ["a", "b", "c", "d"]


async def test_values_are_stored_exactly_as_given(db: Database) -> None:
    """Bound in the client: quotes, percent signs, backslashes, a NUL-free control character, Chinese,
    an emoji, JSON and a time with microseconds come back as they went in."""
    tricky = "O'Brien; DROP TABLE x; -- 50% \\n \\' %s %(x)s \t 面試 🙂 \"q\""
    conv = _conversation(tricky)
    conv["created_at"] = datetime(2026, 11, 30, 21, 0, 0, 123456, tzinfo=UTC)
    message = {
        "id": new_id(),
        "conversation_id": conv["id"],
        "role": "user",
        "content": tricky,
        "status": "ok",
        "created_at": conv["created_at"],
    }
    insert_message = DirectStatement(insert(Message.__table__))

    def store(connection: Connection) -> None:
        INSERT.send(connection, conv)
        insert_message.send(connection, message)

    await db.write(store, name="tricky", direct_only=True)
    async with db.session() as s:
        stored = (await s.execute(select(Conversation).where(Conversation.id == conv["id"]))).scalar_one()
        content = await s.scalar(select(Message.content).where(Message.id == message["id"]))
    assert stored.title == tricky and content == tricky
    assert stored.created_at == conv["created_at"]


async def test_execute_returns_the_true_row_count_of_its_own_statement(db: Database) -> None:
    known = new_id()

    def store(connection: Connection) -> tuple[int, int]:
        INSERT.send(connection, _conversation("old", known))
        # the answer is needed: the kept INSERT travels with it, so the UPDATE sees its row
        found = RETITLE.execute(connection, {"conv": known, "title": "new"})
        missing = RETITLE.execute(connection, {"conv": new_id(), "title": "nobody"})
        return found, missing

    assert await db.write(store, name="counts", direct_only=True) == (1, 0)
    assert await _titles(db) == ["new"]


@pytest.mark.parametrize("batch", [True, False], ids=["batch", "one by one"])
async def test_a_statement_that_fails_rolls_the_job_back_and_the_next_job_commits(
    pg_empty_database: str, batch: bool
) -> None:
    """Batched, the failing statement is kept and fails in the server at the COMMIT; one by one, its own
    ``send`` raises. Either way: the whole job rolled back, the failure counted, the next job served."""
    Database(pg_empty_database).migrate()
    db = Database(pg_empty_database, writer_threads=1, writer_batch=batch)
    twice = new_id()
    raised_at: list[str] = []

    def store(connection: Connection) -> None:
        INSERT.send(connection, _conversation("first", twice))
        try:
            INSERT.send(connection, _conversation("duplicate", twice))
        except IntegrityError:
            raised_at.append("send")
            raise
        INSERT.send(connection, _conversation("after it"))

    try:
        with pytest.raises(IntegrityError):
            await db.write(store, name="duplicate", direct_only=True)
        assert raised_at == ([] if batch else ["send"])
        assert await _titles(db) == []  # all of the job or none of it
        assert isinstance(db.writer, PostgresWriter) and db.writer.counts()[1] == {"duplicate": 1}
        await db.write(lambda c: INSERT.send(c, _conversation("next")), name="next", direct_only=True)
        assert await _titles(db) == ["next"]
    finally:
        await db.dispose()


async def test_a_kept_failure_is_raised_by_the_next_statement_that_waits(db: Database) -> None:
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
        await db.write(store, name="duplicate", direct_only=True)
    assert raised_at == ["execute"]
    assert await _titles(db) == []


async def test_a_job_that_raises_before_sending_anything_writes_nothing(db: Database) -> None:
    def store(connection: Connection) -> None:
        INSERT.send(connection, _conversation("kept, never sent"))
        raise LookupError("the job changed its mind")

    with pytest.raises(LookupError):
        await db.write(store, name="changed its mind", direct_only=True)
    assert await _titles(db) == []
    await db.write(lambda c: INSERT.send(c, _conversation("next")), name="next", direct_only=True)
    assert await _titles(db) == ["next"]


async def test_with_batch_off_each_statement_is_sent_on_its_own(
    one_by_one: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same job as batched above: its statements one by one (``send`` is ``execute``), the same
    rows and the same row counts (a failure: the parametrized test above)."""
    known = new_id()

    def store(connection: Connection) -> tuple[int, int]:
        INSERT.send(connection, _conversation("a"))
        INSERT.send(connection, [_conversation("b"), _conversation("old", known)])
        found = RETITLE.execute(connection, {"conv": known, "title": "new"})
        missing = RETITLE.execute(connection, {"conv": new_id(), "title": "nobody"})
        return found, missing

    with _sent(monkeypatch) as queries, _statements(one_by_one.write_engine) as statements:
        assert await one_by_one.write(store, name="one by one", direct_only=True) == (1, 0)
    assert queries == []  # nothing kept, nothing bound in the client
    assert [s.split()[0] for s in statements] == ["BEGIN", "INSERT", "INSERT", "UPDATE", "UPDATE"]
    assert await _titles(one_by_one) == ["a", "b", "new"]


async def test_batch_is_on_unless_the_setting_turns_it_off(
    make_services: Callable[..., Services], pg_empty_database: str
) -> None:
    shipped = make_services(with_corpus=False, database_url=pg_empty_database)
    assert isinstance(shipped.db.writer, PostgresWriter) and shipped.db.writer.batch is True
    off = make_services(with_corpus=False, database_url=pg_empty_database, database_writer_batch=False)
    assert isinstance(off.db.writer, PostgresWriter) and off.db.writer.batch is False


async def _drain(services: Services, req: TurnRequest) -> list[Event]:
    return [e async for e in services.engine.run(req)]


async def _count(services: Services, table: Any, **where: Any) -> int:
    async with services.db.session() as s:
        stmt = select(func.count()).select_from(table).where(*(table.c[k] == v for k, v in where.items()))
        return int(await s.scalar(stmt) or 0)


@pytest.mark.parametrize("batch", [True, False], ids=["batch", "one by one"])
async def test_a_turn_stores_the_same_rows_and_gives_the_same_refusals(
    make_services: Callable[..., Services],
    fake_llm: FakeLLM,
    pg_empty_database: str,
    monkeypatch: pytest.MonkeyPatch,
    batch: bool,
) -> None:
    """A new conversation, a second turn in it, an unknown conversation (404), and a conversation whose
    reply is still pending (409), with the writer batching (in fewer queries) or not."""
    services = await ready(
        make_services(daily_token_budget=100_000, database_url=pg_empty_database, database_writer_batch=batch)
    )
    assert isinstance(services.db.writer, PostgresWriter) and services.db.writer.batch is batch
    fake_llm.script(text("好的。"), text("好。"))
    with _sent(monkeypatch) as queries:
        first = (await _drain(services, TurnRequest(message="面試怎麼準備", budget_key="ip:10.0.0.1")))[-1]
    assert isinstance(first, DoneEvent) and first.status == "ok"
    if batch:
        # the opening of a new conversation: one query; the closing: the reply's UPDATE (its row count
        # is checked), then the rest with the COMMIT
        assert len(queries) == 3, queries
        assert queries[0].startswith("BEGIN; INSERT INTO conversations") and queries[0].endswith("COMMIT")
        assert queries[1].startswith("BEGIN; UPDATE messages")
        assert queries[2].startswith("UPDATE traces") and queries[2].endswith("COMMIT")
    else:
        assert queries == []  # nothing kept, nothing bound in the client
    conv = first.conversation_id
    second = (
        await _drain(
            services, TurnRequest(message="再多說一點", conversation_id=conv, budget_key="ip:10.0.0.1")
        )
    )[-1]
    assert isinstance(second, DoneEvent) and second.status == "ok"
    with pytest.raises(NotFoundError):
        await _drain(services, TurnRequest(message="有人嗎", conversation_id=new_id()))
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


async def test_batch_changes_how_a_turns_statements_travel_not_which(
    make_services: Callable[..., Services],
    fake_llm: FakeLLM,
    pg_empty_database: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A new conversation's turn with batch off, then on: the writer runs the same statements in the same
    order (a batch adds its COMMIT as a statement of its own), in fewer round trips."""
    seen: dict[bool, list[str]] = {}
    round_trips: dict[bool, int] = {}
    for batch in (False, True):
        services = await ready(
            make_services(
                daily_token_budget=100_000, database_url=pg_empty_database, database_writer_batch=batch
            )
        )
        fake_llm.script(text("好的。"))
        with _sent(monkeypatch) as queries, _statements(services.db.write_engine) as statements:
            done = (await _drain(services, TurnRequest(message="面試怎麼準備", budget_key="ip:10.0.0.1")))[-1]
        assert isinstance(done, DoneEvent) and done.status == "ok"
        seen[batch] = [s for s in statements if s != "COMMIT"]
        # one by one: a round trip a statement, and psycopg's COMMIT for each of the two jobs
        round_trips[batch] = len(queries) if batch else len(statements) + 2
    assert seen[True] == seen[False] and seen[False][0] == "BEGIN"
    assert round_trips[True] == 3 and round_trips[False] > round_trips[True]
