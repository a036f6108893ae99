"""The turn's hot-path statements run on the driver's cursor (``DirectStatement``, store/direct.py) and
its pre-turn reads on a reader thread (``Database.read``, ``ThreadReader``). Both are CPU cuts (issue
#10, docs/benchmarks.md "The database's share of a turn"), so what is checked here is that nothing
else changed: the rows stored are the rows SQLAlchemy's ``connection.execute`` stores (defaults, JSON,
datetimes, booleans), reads come back as SQLAlchemy's result gives them, driver errors arrive as
SQLAlchemy's, statement listeners still see the statements, a read sees what another connection
committed just before, and a failed read is counted and raised. Real SQLite files and real PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, bindparam, event, insert, select, text, update
from sqlalchemy.exc import IntegrityError

from careerwise.budget import TokenBudget
from careerwise.engine import TurnRequest
from careerwise.errors import RateLimitedError
from careerwise.services import Services
from careerwise.store import Conversation, Database, Trace, TraceEvent
from careerwise.store.db import ThreadReader
from careerwise.store.direct import DirectStatement
from careerwise.store.models import new_id
from tests.conftest import ready
from tests.fakes.fake_llm import FakeLLM
from tests.fakes.fake_llm import text as answer_text

CONVERSATIONS = Conversation.__table__
TRACES = Trace.__table__
EVENTS = TraceEvent.__table__


@pytest.fixture
async def db(empty_db_url: str) -> AsyncIterator[Database]:
    database = Database(empty_db_url, writer_threads=2)
    yield database
    await database.dispose()


def _conversation(connection: Connection) -> str:
    conv_id: str = new_id()
    now = datetime.now(UTC)
    connection.execute(
        insert(CONVERSATIONS),
        {"id": conv_id, "title": "t", "channel": "web", "created_at": now, "updated_at": now},
    )
    return conv_id


def _trace_values(conv_id: str) -> dict[str, Any]:
    """A trace as the turn's opening stores it: the rest of its columns come from Python defaults."""
    return {
        "id": new_id(),
        "conversation_id": conv_id,
        "user_message_id": new_id(),
        "assistant_message_id": new_id(),
        "channel": "web",
        "assistant_id": "summer",
        "model": "m",
        "started_at": datetime(2026, 11, 30, 13, 0, 1, 234567, tzinfo=UTC),
    }


async def _rows(db: Database, table: Any, **where: Any) -> list[dict[str, Any]]:
    async with db.session() as s:
        stmt = select(table).where(*(table.c[k] == v for k, v in where.items()))
        return [dict(r._mapping) for r in (await s.execute(stmt)).all()]


async def test_rows_stored_are_the_rows_sqlalchemy_stores(db: Database) -> None:
    """Defaults filled per row, JSON, datetimes and booleans as ``connection.execute`` stores them, an
    UPDATE's row count, and several rows in one call (PostgreSQL: one multi-row VALUES)."""
    direct_insert = DirectStatement(insert(TRACES))
    direct_update = DirectStatement(update(TRACES).where(TRACES.c.id == bindparam("trace")))
    conv_id = await db.write(_conversation, name="test")
    via_sa, via_direct = _trace_values(conv_id), _trace_values(conv_id)
    done = {"status": "ok", "degraded": True, "timings": {"a": 1.5, "b": [1, None]}, "usage": {"x": "值"}}

    def store(connection: Connection) -> tuple[int, int]:
        connection.execute(insert(TRACES), via_sa)
        direct_insert.execute(connection, via_direct)
        connection.execute(update(TRACES).where(TRACES.c.id == via_sa["id"]), done)
        count = direct_update.execute(connection, done | {"trace": via_direct["id"]})
        return count, direct_update.execute(connection, done | {"trace": "no such trace"})

    assert await db.write(store, name="test") == (1, 0)
    [a] = await _rows(db, TRACES, id=via_sa["id"])
    [b] = await _rows(db, TRACES, id=via_direct["id"])
    assert {k: v for k, v in a.items() if k not in ("id", "user_message_id", "assistant_message_id")} == {
        k: v for k, v in b.items() if k not in ("id", "user_message_id", "assistant_message_id")
    }
    assert b["timings"] == {"a": 1.5, "b": [1, None]} and b["degraded"] is True and b["usage"] == {"x": "值"}

    rows = [
        {"trace_id": via_direct["id"], "seq": n, "t_ms": n / 3, "type": "delta", "payload": {"n": n}}
        for n in range(5)
    ]
    stored = await db.write(lambda c: DirectStatement(insert(EVENTS)).execute(c, rows), name="test")
    assert stored == 5
    got = sorted(
        (r["seq"], r["t_ms"], r["payload"]) for r in await _rows(db, EVENTS, trace_id=via_direct["id"])
    )
    assert got == [(n, n / 3, {"n": n}) for n in range(5)]


async def test_a_select_comes_back_as_sqlalchemy_gives_it(db: Database) -> None:
    conv_id = await db.write(_conversation, name="test")
    values = _trace_values(conv_id) | {"timings": {"k": [1, 2]}, "degraded": True}
    await db.write(lambda c: c.execute(insert(TRACES), values), name="test")
    query = select(TRACES.c.degraded, TRACES.c.timings, TRACES.c.started_at, TRACES.c.status).where(
        TRACES.c.id == values["id"]
    )

    def both(connection: Connection) -> tuple[Any, Any]:
        return [tuple(r) for r in connection.execute(query)], DirectStatement(query).fetch(connection, {})

    expected, got = await db.read(both, name="test")
    assert got == expected and got[0][0] is True and got[0][1] == {"k": [1, 2]}


async def test_driver_errors_arrive_as_sqlalchemy_errors_and_roll_back(db: Database) -> None:
    conv_id = await db.write(_conversation, name="test")
    values = _trace_values(conv_id)
    direct = DirectStatement(insert(TRACES))

    def twice(connection: Connection) -> None:
        direct.execute(connection, values)
        direct.execute(connection, values)  # the same primary key

    with pytest.raises(IntegrityError):
        await db.write(twice, name="duplicate")
    assert await _rows(db, TRACES, id=values["id"]) == []  # the first insert was rolled back too
    assert db.writer is not None and db.writer.counts()[1] == {"duplicate": 1}
    await db.write(lambda c: direct.execute(c, values), name="test")  # the connection serves the next job
    assert len(await _rows(db, TRACES, id=values["id"])) == 1


async def test_statement_listeners_still_see_the_statements(db: Database) -> None:
    seen: list[str] = []

    def on_statement(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        seen.append(statement.split()[0].upper())

    engine = db.write_engine
    event.listen(engine, "before_cursor_execute", on_statement)
    try:
        conv_id = await db.write(_conversation, name="test")
        await db.write(lambda c: DirectStatement(insert(TRACES)).execute(c, _trace_values(conv_id)), name="t")
    finally:
        event.remove(engine, "before_cursor_execute", on_statement)
    assert seen.count("INSERT") == 2


def test_statements_it_cannot_run_as_they_stand_are_refused() -> None:
    from sqlalchemy.dialects import sqlite

    returning = DirectStatement(insert(TRACES).returning(TRACES.c.id))
    with pytest.raises(NotImplementedError):
        returning._for(sqlite.dialect(), ("id",))
    with pytest.raises(TypeError):
        DirectStatement(object())


async def test_reads_run_on_the_reader_thread_and_see_the_latest_commit(db: Database) -> None:
    """A change committed by another connection (another process's, here the async session's) is seen
    by the very next read: no transaction is held open between reads."""
    assert isinstance(db.reader, ThreadReader)
    names: list[str] = []
    query = select(CONVERSATIONS.c.title)

    def titles(connection: Connection) -> list[str]:
        names.append(threading.current_thread().name)
        return sorted(r[0] for r in DirectStatement(query).fetch(connection, {}))

    assert await db.read(titles, name="titles") == []
    for n in range(3):
        async with db.session() as s, s.begin():
            now = datetime.now(UTC)
            await s.execute(
                insert(CONVERSATIONS),
                {"id": new_id(), "title": f"c{n}", "channel": "web", "created_at": now, "updated_at": now},
            )
        assert await db.read(titles, name="titles") == [f"c{i}" for i in range(n + 1)]
    assert all(name.startswith("careerwise-reader") for name in names)


async def test_a_failed_read_is_counted_and_raised(db: Database) -> None:
    def broken(connection: Connection) -> None:
        connection.execute(text("select * from no_such_table"))

    with pytest.raises(Exception, match="no_such_table"):
        await db.read(broken, name="broken read")
    assert db.reader is not None and db.reader.counts()[1] == {"broken read": 1}
    assert await db.read(lambda c: c.execute(text("select 1")).scalar(), name="next") == 1


async def test_without_threads_reads_run_on_an_autocommit_session(tmp_path: Path) -> None:
    memory = Database("sqlite+aiosqlite:///:memory:")
    assert memory.reader is None
    try:
        assert await memory.read(lambda c: DirectStatement(select(text("1"))).fetch(c, {}), name="t") == [
            (1,)
        ]
    finally:
        await memory.dispose()


async def test_the_turn_reads_its_budget_only_when_one_applies(
    make_services: Callable[..., Services], fake_llm: FakeLLM
) -> None:
    """Anonymous turns read the day's count (and are refused once it is spent); with no budget nothing is
    read from token_usage before a turn. The settings are read every turn either way."""
    fake_llm.default = answer_text("好的。")
    services = await ready(make_services(daily_token_budget=1000))
    assert services.db.reader is not None and services.engine.budget is not None
    counted = services.engine.budget
    seen: list[str] = []

    def on_statement(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        seen.append(statement)

    async def turn() -> None:
        [e async for e in services.engine.run(TurnRequest(message="你好", budget_key="ip:9.9.9.9"))]

    engine = services.db.reader.engine
    event.listen(engine, "before_cursor_execute", on_statement)
    try:
        for budget, expect_reads in ((TokenBudget(services.db, 0), 0), (counted, 2)):
            services.engine.budget = budget  # another object, as a configuration without a budget builds
            seen.clear()
            for _ in range(2):
                await turn()
            assert sum("token_usage" in s for s in seen) == expect_reads
            assert sum("assistants" in s for s in seen) == 2
    finally:
        event.remove(engine, "before_cursor_execute", on_statement)
    await counted.add("ip:9.9.9.9", 1000)
    with pytest.raises(RateLimitedError):
        await turn()
