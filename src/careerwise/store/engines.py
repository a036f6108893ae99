"""How this process's connections to the database are made, whichever engine holds them: the URL each
driver gets (async for the app, synchronous for Alembic and the worker threads), SQLite's pragmas on
every new connection (foreign keys, WAL, a busy timeout, durable commits), an SQLite file readable by
its owner only, and a ping of a pooled connection only after it sat idle (a dropped connection is
replaced at checkout, not failed on). Every engine the store makes goes through these, so the async
session, the writer and reader threads and the search engine behave alike."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import DisconnectionError

log = logging.getLogger(__name__)

PING_AFTER_IDLE = 5.0  # seconds; see _ping_when_idle

# PostgreSQL URLs without an async driver get asyncpg (``postgres://`` is what many hosts hand out)
_ASYNC_DRIVERS = {
    "postgres": "postgresql+asyncpg",
    "postgresql": "postgresql+asyncpg",
    "postgresql+psycopg2": "postgresql+asyncpg",
}
_SYNC_DRIVERS = {
    "sqlite+aiosqlite": "sqlite",
    "postgresql+asyncpg": "postgresql+psycopg",
    "postgresql+psycopg_async": "postgresql+psycopg",
}


def async_url(url: str) -> str:
    """The URL the app's async engine uses: PostgreSQL through asyncpg unless an async driver is named."""
    u = make_url(url)
    driver = _ASYNC_DRIVERS.get(u.drivername)
    return u.set(drivername=driver).render_as_string(hide_password=False) if driver else url


def sync_url(url: str) -> str:
    """The URL Alembic (and the pgvector index, from worker threads) uses: the same database through a
    synchronous driver (PostgreSQL: psycopg 3)."""
    u = make_url(async_url(url))
    driver = _SYNC_DRIVERS.get(u.drivername)
    return u.set(drivername=driver).render_as_string(hide_password=False) if driver else url


def _sqlite_pragmas(dbapi_connection: object, _record: object) -> None:
    cursor = dbapi_connection.cursor()  # type: ignore[attr-defined]
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    # other processes, and this process's writer thread and async writers: they meet here
    cursor.execute("PRAGMA busy_timeout=15000")
    # WAL + NORMAL: a commit is durable against a process crash; only an OS crash can lose the last one
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")


def owner_only(path: Path) -> None:
    """The SQLite file holds password hashes and resumes: it is created 0600 before SQLite first opens
    it, and SQLite gives the -wal, -shm and -journal files it creates the database file's mode. A file
    (or companion) found with group or other bits, made before this rule, is narrowed to 0600."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)  # the umask can only narrow 0600
    os.close(fd)
    for file in (path, *(path.with_name(path.name + suffix) for suffix in SQLITE_COMPANIONS)):
        try:
            mode = file.stat().st_mode & 0o777
        except FileNotFoundError:
            continue
        if mode & 0o077:
            os.chmod(file, 0o600)
            log.warning("database: %s was readable by others (mode %o); now 0600", file, mode)


def _ping_when_idle(engine: Engine, idle: float) -> None:
    """Ping a pooled connection at checkout only when it has been idle ``idle`` seconds or more.

    SQLAlchemy's ``pool_pre_ping`` pings at every checkout: on PostgreSQL one more round trip and more
    event-loop CPU per session, several sessions a turn. A server restart or an idle timeout drops connections that sat in the pool, and
    those are pinged here; a connection handed back moments ago is not. A failed ping is logged and
    raised as ``DisconnectionError``, on which the pool throws the connection away and checks out
    another (a fresh one when the server is back). A connection that breaks mid-use is caught by
    SQLAlchemy's disconnect detection, which invalidates the whole pool: the request fails, the next
    ones reconnect."""

    @event.listens_for(engine, "connect")
    def _connected(dbapi_connection: Any, record: Any) -> None:
        record.info["cw_idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkin")
    def _returned(dbapi_connection: Any, record: Any) -> None:
        record.info["cw_idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _checkout(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        since = record.info.get("cw_idle_since")
        if since is not None and time.monotonic() - since < idle:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:
            log.warning(
                "database: a pooled connection that sat idle did not answer a ping (%s); reconnecting", exc
            )
            raise DisconnectionError("the pooled connection did not answer a ping") from exc
