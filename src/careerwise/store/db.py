"""The async database handle: one :class:`Database` per process, holding the async engine and its
sessions, the writer and reader threads (store/threads.py) and the synchronous engine for searches, and
closing all of them once (``dispose``). How connections are made is store/engines.py, SQLite's write
lock store/serial.py, migrations store/migrate.py; their names are re-exported here for callers."""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TypeVar

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

from careerwise.store.engines import PING_AFTER_IDLE as PING_AFTER_IDLE
from careerwise.store.engines import SQLITE_COMPANIONS as SQLITE_COMPANIONS
from careerwise.store.engines import _ping_when_idle as _ping_when_idle
from careerwise.store.engines import _sqlite_pragmas
from careerwise.store.engines import async_url as async_url
from careerwise.store.engines import owner_only as owner_only
from careerwise.store.engines import sync_url as sync_url
from careerwise.store.migrate import _MIGRATIONS as _MIGRATIONS
from careerwise.store.migrate import upgrade as upgrade
from careerwise.store.serial import SerialWriteSession as SerialWriteSession
from careerwise.store.serial import _LoopLocks
from careerwise.store.threads import READER_THREADS as READER_THREADS
from careerwise.store.threads import THREADS_STOP_TIMEOUT as THREADS_STOP_TIMEOUT
from careerwise.store.threads import WRITER_THREADS as WRITER_THREADS
from careerwise.store.threads import PostgresWriter as PostgresWriter
from careerwise.store.threads import SQLiteWriter as SQLiteWriter
from careerwise.store.threads import ThreadReader as ThreadReader
from careerwise.store.threads import ThreadWriter as ThreadWriter
from careerwise.store.threads import WriteJob as WriteJob
from careerwise.store.threads import _Job as _Job

log = logging.getLogger(__name__)
T = TypeVar("T")

SEARCH_CONNECTIONS = (
    4  # PostgreSQL connections for the knowledge searches a process runs; see blocking_engine
)


def as_utc(value: datetime) -> datetime:
    """Stored datetimes come back naive from SQLite and aware from PostgreSQL; both mean UTC."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Database:
    def __init__(
        self,
        url: str,
        *,
        ping_after_idle: float = PING_AFTER_IDLE,
        writer_thread: bool = True,
        writer_threads: int = WRITER_THREADS,
        writer_batch: bool = False,
        reader_threads: int = READER_THREADS,
        pool_size: int = 5,
        max_overflow: int = 10,
        search_connections: int = SEARCH_CONNECTIONS,
    ) -> None:
        """``writer_thread``: run :meth:`write`'s jobs on writer threads, :class:`SQLiteWriter` on an
        SQLite file, :class:`PostgresWriter` with ``writer_threads`` threads on PostgreSQL (False: on the
        async session, behind the process's write lock on SQLite). ``pool_size``/``max_overflow``:
        PostgreSQL's async connection pool per process (SQLAlchemy's defaults); a burst of turns waits
        for a connection beyond them (docs/deployment.md). The writer threads' connections come on top,
        and so do the reader threads' (``reader_threads``, :meth:`read`), which run wherever the writer
        threads do. ``writer_batch``: PostgreSQL's writer threads send a ``direct_only`` job's
        statements together (:meth:`PostgresWriter._transaction`). ``search_connections``: the
        size of :meth:`blocking_engine`'s pool on PostgreSQL (no overflow)."""
        url = async_url(url)
        self.url = url
        if url.startswith("sqlite"):
            parsed = make_url(url)
            path = parsed.database
            if path and path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
                if "uri" not in parsed.query:  # a file: URI names its file its own way; left to SQLite
                    owner_only(Path(path))
        pool = {} if url.startswith("sqlite") else {"pool_size": pool_size, "max_overflow": max_overflow}
        self.engine = create_async_engine(url, **pool)
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
        self._search_connections = search_connections
        self._ping_after_idle = ping_after_idle  # the blocking engine's pool pings as the async one
        # the turn's writes run on writer threads (see ``write``): one on an SQLite file, several on
        # PostgreSQL; an in-memory SQLite database is private to its connection, so there every write
        # stays on the async session
        self.writer: ThreadWriter | None = None
        if writer_thread and url.startswith("sqlite"):
            path = make_url(url).database
            if path and path != ":memory:":
                self.writer = SQLiteWriter(sync_url(url))
        elif writer_thread:
            self.writer = PostgresWriter(
                sync_url(url),
                threads=writer_threads,
                ping_after_idle=ping_after_idle,
                batch=writer_batch,
            )
        if self.writer is not None:
            weakref.finalize(self, self.writer.stop)
        # the turn's reads before it starts (see ``read``): on a thread wherever the writes are
        self.reader: ThreadReader | None = None
        if self.writer is not None:
            self.reader = ThreadReader(sync_url(url), threads=reader_threads, ping_after_idle=ping_after_idle)
            weakref.finalize(self, self.reader.stop)

    @property
    def is_postgresql(self) -> bool:
        return self.engine.dialect.name == "postgresql"

    def blocking_engine(self) -> Engine:
        """A synchronous engine on the same database, for code that runs in worker threads (the
        pgvector search index); created on first use, disposed with the database.

        On PostgreSQL its pool holds ``search_connections`` and never more: SQLAlchemy's default (5, and
        10 more at a peak) let one process open 15 for searches alone, on top of its other 23, a number
        nobody could set when sizing ``max_connections`` (docs/deployment.md adds them up). A
        search holds its connection for one statement; one beyond the pool waits for the next to come
        back (up to the pool's 30 s timeout, then it fails as a retrieval failure, logged and counted)."""
        with self._blocking_lock:
            if self._blocking_engine is None:
                if self.url.startswith("sqlite"):
                    engine = create_engine(sync_url(self.url))
                else:  # a ping per checkout was a round trip per search
                    engine = create_engine(
                        sync_url(self.url), pool_size=self._search_connections, max_overflow=0
                    )
                    _ping_when_idle(engine, self._ping_after_idle)
                self._blocking_engine = engine
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

    async def write(
        self,
        job: WriteJob[T],
        *,
        name: str,
        undo: Callable[[Connection, T], None] | None = None,
        direct_only: bool = False,
    ) -> T:
        """``job(connection)`` in one write transaction, committed when it returns, rolled back when it
        raises (the exception is the caller's). On a writer thread (:class:`SQLiteWriter`,
        :class:`PostgresWriter`): one hand-off each way instead of one event-loop hop per statement.
        Without writer threads (an in-memory SQLite database, ``writer_thread=False``): on the async
        session. ``undo``: see :meth:`ThreadWriter.run` (writer threads only). ``direct_only``: the job
        runs only :class:`~careerwise.store.direct.DirectStatement`, whose statements PostgreSQL's
        writer may then batch (``writer_batch``; :meth:`ThreadWriter.run` says why the caller must say
        so)."""
        if self.writer is not None:
            return await self.writer.run(job, name=name, undo=undo, direct_only=direct_only)
        async with self.session() as s, s.begin():
            return await s.run_sync(lambda sync: job(sync.connection()))

    async def read(self, job: WriteJob[T], *, name: str) -> T:
        """``job(connection)``, a read, on a reader thread (:class:`ThreadReader`): one hand-off each
        way; without one (an in-memory SQLite database, ``writer_thread=False``) on an autocommit async
        session. Either way each statement sees what was committed when it starts."""
        if self.reader is not None:
            return await self.reader.run(job, name=name)
        async with self.session(autocommit=True) as s:
            return await s.run_sync(lambda sync: job(sync.connection()))

    async def write_atomic(self, job: WriteJob[T], *, name: str) -> T:
        """``job(connection)`` whose statements are each atomic on their own (a counter's upsert), off
        the event loop. PostgreSQL: on a reader thread, whose connection is in autocommit: each
        statement commits by itself, one round trip, no BEGIN or COMMIT, and no queueing behind the
        turns' writes. SQLite: on the writer thread, in one transaction (SQLite has one writer, and
        the reader's connections are for reads). Without threads: an autocommit session on
        PostgreSQL, a transaction on the async session on SQLite."""
        if self.is_postgresql:
            return await self.read(job, name=name)
        return await self.write(job, name=name)

    @property
    def write_engine(self) -> Engine:
        """The engine whose connections run :meth:`write`'s jobs (for tests that watch the statements)."""
        return self.writer.engine if self.writer is not None else self.engine.sync_engine

    async def dispose(self) -> None:
        """Every step runs whatever an earlier one raised (threads, the async engine, the blocking
        engine); the first failure is raised at the end, after all of them. The threads are stopped for
        good: a :meth:`write` or :meth:`read` after it is refused (``ThreadWriter._submit``) rather than
        starting threads that nothing would stop."""
        steps: list[Callable[[], Awaitable[None]]] = []
        for threads in (self.writer, self.reader):
            if threads is not None:
                steps.append(partial(asyncio.to_thread, threads.stop, THREADS_STOP_TIMEOUT))
        steps.append(self.engine.dispose)
        steps.append(partial(asyncio.to_thread, self._dispose_blocking))
        failure: BaseException | None = None
        for step in steps:
            try:
                await step()
            except Exception as exc:  # logged here, the first one raised below
                log.error("database: a step of closing the database failed: %r", exc, exc_info=exc)
                failure = failure or exc
        if failure is not None:
            raise failure

    def _dispose_blocking(self) -> None:
        with self._blocking_lock:
            blocking, self._blocking_engine = self._blocking_engine, None
        if blocking is not None:
            blocking.dispose()
