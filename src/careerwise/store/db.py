"""The async database handle and migrations on start."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import DisconnectionError, OperationalError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

log = logging.getLogger(__name__)
_MIGRATIONS = Path(__file__).parent / "migrations"


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
    # other processes: writes queue in each process (SerialWriteSession), then meet here
    cursor.execute("PRAGMA busy_timeout=15000")
    # WAL + NORMAL: a commit is durable against a process crash; only an OS crash can lose the last one
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def as_utc(value: datetime) -> datetime:
    """Stored datetimes come back naive from SQLite and aware from PostgreSQL; both mean UTC."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def upgrade(url: str) -> None:
    # imported here: Alembic (about 10 MB resident) is needed only by a process that migrates
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(_MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", sync_url(url).replace("%", "%%"))
    command.upgrade(cfg, "head")


class _WriteLock:
    """An asyncio lock that the task holding it may take again (a write inside a write of the same
    task passes), and that gives up after ``timeout`` seconds instead of waiting forever."""

    def __init__(self, timeout: float) -> None:
        self._lock = asyncio.Lock()
        self._owner: asyncio.Task[Any] | None = None
        self._depth = 0
        self.timeout = timeout

    async def acquire(self) -> None:
        task = asyncio.current_task()
        if task is not None and self._owner is task:
            self._depth += 1
            return
        try:
            await asyncio.wait_for(self._lock.acquire(), self.timeout)
        except TimeoutError as exc:
            log.error("database: waited %.0f s for this process's write turn", self.timeout)
            raise OperationalError(
                "waiting for the write lock", None, TimeoutError("the database is busy")
            ) from exc
        self._owner, self._depth = task, 1

    def release(self) -> None:
        self._depth -= 1
        if self._depth == 0:
            self._owner = None
            self._lock.release()


class _SerialWrite:
    """``session.begin()`` behind the process's write lock (see :class:`SerialWriteSession`)."""

    def __init__(self, lock: _WriteLock, inner: Any) -> None:
        self._lock = lock
        self._inner = inner

    async def __aenter__(self) -> Any:
        await self._lock.acquire()
        try:
            return await self._inner.__aenter__()
        except BaseException:
            self._lock.release()
            raise

    async def __aexit__(self, *exc: Any) -> Any:
        try:
            return await self._inner.__aexit__(*exc)
        finally:
            self._lock.release()


class SerialWriteSession(AsyncSession):
    """SQLite has one writer. Two hundred concurrent turns each holding the write lock across event-loop
    turns made writers wait past ``busy_timeout`` ("database is locked": a 500, or a lost trace). On
    SQLite, every write transaction (``async with session.begin()``) of this process first takes an
    asyncio lock, so they queue in the event loop instead of inside SQLite; other processes still meet
    at SQLite's lock. Reads take no lock (WAL lets them run beside the writer)."""

    def begin(self) -> Any:
        inner = super().begin()
        locks: _LoopLocks | None = self.info.get("write_locks")
        return inner if locks is None else _SerialWrite(locks.current(), inner)


class _LoopLocks:
    """One lock per event loop: the same Database may be used from two loops (a server thread and a
    test's ``asyncio.run``), and an asyncio lock belongs to one loop."""

    def __init__(self) -> None:
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _WriteLock] = (
            weakref.WeakKeyDictionary()
        )
        self._guard = threading.Lock()

    def current(self) -> _WriteLock:
        loop = asyncio.get_running_loop()
        with self._guard:
            lock = self._locks.get(loop)
            if lock is None:
                lock = self._locks[loop] = _WriteLock(timeout=60.0)
            return lock


PING_AFTER_IDLE = 5.0  # seconds; see _ping_when_idle


def _ping_when_idle(engine: Engine, idle: float) -> None:
    """Ping a pooled connection at checkout only when it has been idle ``idle`` seconds or more.

    SQLAlchemy's ``pool_pre_ping`` pings at every checkout: on PostgreSQL one more round trip and about
    0.3 ms of event-loop CPU per session, four or five sessions a turn (docs/benchmarks.md, "The fixed
    work of a turn"). A server restart or an idle timeout drops connections that sat in the pool, and
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


class Database:
    def __init__(self, url: str, *, ping_after_idle: float = PING_AFTER_IDLE) -> None:
        url = async_url(url)
        self.url = url
        if url.startswith("sqlite"):
            path = make_url(url).database
            if path and path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.engine = create_async_engine(url)
        sync_engine: Engine = self.engine.sync_engine
        if url.startswith("sqlite"):
            event.listen(sync_engine, "connect", _sqlite_pragmas)
        else:  # an SQLite file cannot drop a connection: nothing to ping there
            _ping_when_idle(sync_engine, ping_after_idle)
        info = {"write_locks": _LoopLocks()} if url.startswith("sqlite") else {}
        self.sessions = async_sessionmaker(
            self.engine, class_=SerialWriteSession, expire_on_commit=False, info=info
        )
        # PostgreSQL: sessions whose statements each commit on their own (see ``session``); the same
        # pool, the driver's autocommit flag set on checkout and cleared on return (no round trip)
        self._autocommit_sessions = (
            self.sessions
            if url.startswith("sqlite")
            else async_sessionmaker(
                self.engine.execution_options(isolation_level="AUTOCOMMIT"),
                class_=SerialWriteSession,
                expire_on_commit=False,
                info=info,
            )
        )
        self._blocking_engine: Engine | None = None
        self._blocking_lock = threading.Lock()

    @property
    def is_postgresql(self) -> bool:
        return self.engine.dialect.name == "postgresql"

    def blocking_engine(self) -> Engine:
        """A synchronous engine on the same database, for code that runs in worker threads (the
        pgvector search index); created on first use, disposed with the database."""
        with self._blocking_lock:
            if self._blocking_engine is None:
                self._blocking_engine = create_engine(sync_url(self.url), pool_pre_ping=True)
            return self._blocking_engine

    def migrate(self) -> None:
        upgrade(self.url)

    @asynccontextmanager
    async def session(self, *, autocommit: bool = False) -> AsyncIterator[AsyncSession]:
        """A session. ``autocommit``: for reads, and for a single statement that is atomic by itself
        (an upsert): on PostgreSQL no BEGIN and no COMMIT/ROLLBACK, two round trips fewer through the
        event loop; each statement sees the data committed when it starts. SQLite's driver opens no
        transaction for a read anyway, so there it is an ordinary session (writes still queue for the
        process's write lock)."""
        async with (self._autocommit_sessions if autocommit else self.sessions)() as session:
            yield session

    async def dispose(self) -> None:
        await self.engine.dispose()
        with self._blocking_lock:
            blocking, self._blocking_engine = self._blocking_engine, None
        if blocking is not None:
            blocking.dispose()
