"""PostgreSQL connections in the pool are pinged at checkout only after sitting idle (store/db.py,
``_ping_when_idle``): one the server dropped while it sat in the pool is replaced, not handed out, and a
connection used moments ago is handed out without a ping."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from sqlalchemy import text

from careerwise.services import Services
from careerwise.store import Database
from tests.integration.conftest import admin_connection


async def _backend_pid(db: Database) -> int:
    async with db.session() as s:
        return int(await s.scalar(text("SELECT pg_backend_pid()")) or 0)


async def test_a_connection_dropped_while_idle_is_replaced(pg_empty_database: str) -> None:
    db = Database(pg_empty_database, ping_after_idle=0.2)
    try:
        first = await _backend_pid(db)
        with admin_connection(pg_empty_database) as admin:  # what a server restart does to the pool
            admin.execute("SELECT pg_terminate_backend(%s)", (first,))
        await asyncio.sleep(0.4)
        second = await _backend_pid(db)  # no error: the ping found the dead connection
        assert second != first
    finally:
        await db.dispose()


async def test_a_connection_used_just_now_is_not_pinged(pg_empty_database: str) -> None:
    db = Database(pg_empty_database, ping_after_idle=60.0)
    pings: list[object] = []
    dialect = db.engine.sync_engine.dialect
    real_ping = dialect.do_ping

    def counting_ping(dbapi_connection: object) -> bool:
        pings.append(dbapi_connection)
        return bool(real_ping(dbapi_connection))

    dialect.do_ping = counting_ping
    try:
        for _ in range(5):
            await _backend_pid(db)
        assert pings == []  # a new connection counts as just used; the next four checkouts follow it
    finally:
        await db.dispose()


async def test_the_postgresql_pool_follows_the_settings(
    pg_database: str, make_services: Callable[..., Services]
) -> None:
    services = make_services(
        database_url=pg_database,
        database_pool_size=7,
        database_max_overflow=3,
        database_search_connections=2,
    )
    pool: Any = services.db.engine.pool
    assert (pool.size(), pool._max_overflow) == (7, 3)
    search: Any = services.db.blocking_engine().pool
    assert (search.size(), search._max_overflow) == (2, 0)
    plain = Database(pg_database)
    try:
        default: Any = plain.engine.pool
        assert (default.size(), default._max_overflow) == (5, 10)
        default_search: Any = plain.blocking_engine().pool
        assert (default_search.size(), default_search._max_overflow) == (4, 0)
    finally:
        await plain.dispose()
