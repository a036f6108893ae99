"""The async database handle and migrations on start."""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import threading
import time
import weakref
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractContextManager, ExitStack, asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import DisconnectionError, OperationalError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

from careerwise.errors import NotFoundError, UserInputError
from careerwise.store.direct import batched, execute_driver_sql, flush_batch

log = logging.getLogger(__name__)
T = TypeVar("T")
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
    at SQLite's lock. Reads take no lock (WAL lets them run beside the writer). The turn's own writes
    (opening and closing) do not come here: they run on :class:`SQLiteWriter`'s thread, because holding
    this lock across the statements' hops through a busy event loop was what made turns wait."""

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


WriteJob = Callable[[Connection], T]


@dataclass(eq=False)
class _Job:
    """A write transaction waiting for a writer thread, and where its outcome goes."""

    run: Callable[[Connection], Any]
    name: str
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]
    # run after the commit, in a transaction of its own, when the caller stopped waiting meanwhile
    undo: Callable[[Connection, Any], None] | None = None
    gone: threading.Event = field(default_factory=threading.Event)
    direct_only: bool = False  # the job runs DirectStatements only (see ``ThreadWriter.run``)


_STOP = object()
THREADS_STOP_TIMEOUT = 30.0  # seconds Database.dispose waits for its writer/reader threads' jobs


class ThreadWriter:
    """Threads that own synchronous connections and run this process's hot-path write transactions (a
    turn's opening and closing), one job each, in a transaction of its own.

    On the async session every statement of a transaction is a hop through the event loop, and with 200
    streams on the loop each hop waits a loop pass, while the transaction holds SQLite's process lock
    (:class:`SerialWriteSession`) or a pooled PostgreSQL connection all along: a 1.5 ms transaction took
    tens of ms and the turns queued behind it (docs/benchmarks.md, "SQLite's writes on one thread" and
    "PostgreSQL's writes on writer threads"). Here a transaction costs one hand-off to a thread and one
    back. The threads share one queue; each job checks out a connection from the writer's own engine,
    whose pool holds one connection per thread, so a thread never waits for one. A job's exception rolls
    its transaction back, is logged, counted in :attr:`failures` and raised to the awaiting caller; the
    next job runs as usual. Subclasses say how the engine is made (:meth:`_make_engine`)."""

    thread_name = "careerwise-writer"

    def __init__(self, url: str, *, threads: int = 1) -> None:
        if threads < 1:
            raise ValueError("a writer needs at least one thread")
        self._url = url
        self.threads = threads
        self._queue: queue.SimpleQueue[_Job | object] = queue.SimpleQueue()
        self._workers: list[threading.Thread] = []
        self._engine: Engine | None = None
        self._guard = threading.Lock()
        self._stopped = False  # for good: see ``_submit``
        self._counts = threading.Lock()  # ``done`` and ``failures`` are updated from several threads
        self.done = 0  # jobs committed
        self.failures: Counter[str] = Counter()  # failed jobs by job name

    def counts(self) -> tuple[int, dict[str, int]]:
        """Jobs committed and failed jobs by name, read together (``/metrics`` reads them when scraped)."""
        with self._counts:
            return self.done, dict(self.failures)

    def _make_engine(self) -> Engine:
        raise NotImplementedError

    def _engine_locked(self) -> Engine:
        if self._engine is None:
            self._engine = self._make_engine()
        return self._engine

    @property
    def engine(self) -> Engine:
        """The writer's synchronous engine (one connection per thread), made on first use. After
        :meth:`stop` there is none: a RuntimeError, rather than a new engine that nothing would dispose."""
        with self._guard:
            if self._stopped:
                raise RuntimeError(f"the {self.thread_name} threads were stopped; their engine is disposed")
            return self._engine_locked()

    def _name(self, index: int) -> str:
        return self.thread_name if self.threads == 1 else f"{self.thread_name}-{index}"

    def _submit(self, item: _Job) -> None:
        """Queue ``item``, starting the threads that do not run. Under the guard, so no job can land in
        the queue of threads that :meth:`stop` has already told to end.

        After :meth:`stop` the job is refused instead (:meth:`_refuse`): an undo whose commit reached the
        caller's loop after the stop (:meth:`_deliver`), or a write on a disposed database, would
        otherwise make a new engine and start new threads that nothing stops any more."""
        with self._guard:
            if self._stopped:
                self._refuse(item)
                return
            engine = self._engine_locked()
            alive = [t for t in self._workers if t.is_alive()]
            if not alive:  # a queue per generation of threads: stopped ones drain only their own
                self._queue = queue.SimpleQueue()
            if len(alive) < self.threads:
                taken = {t.name for t in alive}
                for index in range(1, self.threads + 1):
                    if self._name(index) in taken:
                        continue
                    worker = threading.Thread(
                        target=self._serve, args=(engine, self._queue), name=self._name(index), daemon=True
                    )
                    worker.start()
                    alive.append(worker)
            self._workers = alive
            self._queue.put(item)

    def _refuse(self, item: _Job) -> None:
        """A job that came after :meth:`stop`: logged, counted in :attr:`failures` under its name, and
        raised to its caller (on the caller's loop: :meth:`run` and :meth:`_deliver` call from there)."""
        with self._counts:
            self.failures[item.name] += 1
        log.error(
            "database: the %s write came after the %s threads were stopped; refused",
            item.name,
            self.thread_name,
        )
        if not item.future.done():
            item.future.set_exception(
                RuntimeError(f"the {item.name} write came after the database was closed")
            )

    @property
    def running(self) -> bool:
        return any(t.is_alive() for t in self._workers)

    @property
    def running_threads(self) -> int:
        return sum(t.is_alive() for t in self._workers)

    async def run(
        self,
        job: WriteJob[T],
        *,
        name: str,
        undo: Callable[[Connection, T], None] | None = None,
        direct_only: bool = False,
    ) -> T:
        """``job(connection)`` in a transaction of its own on a writer thread; its result, or its
        exception. A caller cancelled before the job starts skips it; one cancelled while it runs still
        has it committed, and then ``undo(connection, result)`` runs in a transaction of its own.
        ``direct_only``: the caller promises that every statement of the job goes through
        :class:`~careerwise.store.direct.DirectStatement` (or ``execute_driver_sql``), so a writer that
        batches (:class:`PostgresWriter`) may keep its statements and send them together. The promise is
        the caller's because it cannot be checked: a ``connection.execute`` inside a batch would reach
        the server at once, ahead of the kept BEGIN, outside the transaction."""
        loop = asyncio.get_running_loop()
        item = _Job(job, name, loop, loop.create_future(), undo, direct_only=direct_only)
        item.future.add_done_callback(lambda f: item.gone.set() if f.cancelled() else None)
        self._submit(item)
        result: T = await item.future
        return result

    def _serve(self, engine: Engine, jobs: queue.SimpleQueue[_Job | object]) -> None:
        while True:
            item = jobs.get()
            if item is _STOP:
                return
            assert isinstance(item, _Job)
            if item.gone.is_set():
                continue  # nobody waits for it any more and nothing of it was written
            self._run(engine, item)

    def _transaction(self, connection: Connection, item: _Job) -> AbstractContextManager[Any]:
        """The transaction ``item`` runs in (a subclass may wrap it)."""
        return connection.begin()

    def _run(self, engine: Engine, item: _Job) -> None:
        try:
            with engine.connect() as connection, self._transaction(connection, item):
                result = item.run(connection)
        # the caller's answer (a busy conversation: 409, not ours: 404), not a failure of ours; any
        # other CareerWiseError (a 5xx one: the knowledge base, the provider) is counted below
        except (UserInputError, NotFoundError) as exc:
            log.info("database: the %s write was refused and rolled back: %s", item.name, exc)
            self._settle(item, None, exc)
            return
        except BaseException as exc:  # logged, counted, and raised to the caller
            with self._counts:
                self.failures[item.name] += 1
            log.warning("database: the %s write failed and was rolled back: %r", item.name, exc, exc_info=exc)
            if not isinstance(exc, Exception):
                # CancelledError, GeneratorExit...: handed to the caller's task as an Exception, which
                # a BaseException would break, so that it does not wait forever either
                interrupted = RuntimeError(f"the {item.name} write was interrupted: {exc!r}")
                interrupted.__cause__ = exc
                exc = interrupted
            self._settle(item, None, exc)
            return
        with self._counts:
            self.done += 1
        self._settle(item, result, None)

    def _settle(self, item: _Job, result: Any, exc: BaseException | None) -> None:
        try:
            item.loop.call_soon_threadsafe(self._deliver, item, result, exc)
        except RuntimeError:  # the caller's loop is closed: nobody is left to tell
            log.error("database: the %s write finished after its event loop closed (%r)", item.name, exc)

    def _deliver(self, item: _Job, result: Any, exc: BaseException | None) -> None:
        """On the caller's loop, so it cannot race the caller's cancellation."""
        if not item.future.cancelled():
            if exc is None:
                item.future.set_result(result)
            else:
                item.future.set_exception(exc)
            return
        if exc is None and item.undo is not None:
            undo = item.undo
            log.info("database: the %s write committed after its caller left; undoing it", item.name)
            undone = item.loop.create_future()
            # its failure is logged and counted in the thread; nobody awaits it, so take it here
            undone.add_done_callback(lambda f: f.cancelled() or f.exception())
            self._submit(_Job(lambda c: undo(c, result), f"{item.name} undo", item.loop, undone))

    def stop(self, timeout: float | None = None) -> None:
        """Let the queued jobs finish, then end the threads and close their connections (blocks).
        ``timeout``: how long to wait for all of them in total; a job stuck on a lock or on a server
        that does not answer must not hang the shutdown, so threads still running then are left (they
        are daemons), and named in an error."""
        with self._guard:
            self._stopped = True
            workers, self._workers = self._workers, []
            engine, self._engine = self._engine, None
            for _ in workers:
                self._queue.put(_STOP)
        deadline = None if timeout is None else time.monotonic() + timeout
        for worker in workers:
            worker.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        stuck = [w.name for w in workers if w.is_alive()]
        if stuck:
            log.error(
                "database: %s still running %.0f s after the stop; left behind with their jobs",
                ", ".join(stuck),
                timeout,
            )
        if engine is not None:
            engine.dispose()  # the stuck threads' checked-out connections close when they end


class SQLiteWriter(ThreadWriter):
    """SQLite's writer: one thread (SQLite has one writer), each job in ``BEGIN IMMEDIATE``, which
    takes SQLite's write lock first and waits up to busy_timeout for another process or this process's
    async writers, which meet it there. The lock is held only while the SQL runs."""

    thread_name = "careerwise-sqlite-writer"

    def __init__(self, url: str) -> None:
        super().__init__(url, threads=1)

    def _make_engine(self) -> Engine:
        engine = create_engine(self._url, pool_size=1, max_overflow=0)
        event.listen(engine, "connect", _sqlite_pragmas)

        @event.listens_for(engine, "connect")
        def _manual_transactions(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.isolation_level = None  # the driver opens nothing itself: BEGIN is ours

        @event.listens_for(engine, "begin")
        def _begin_immediate(connection: Connection) -> None:
            # on the driver's cursor: ``exec_driver_sql`` was a sixth of a job's CPU (store/direct.py)
            execute_driver_sql(connection, "BEGIN IMMEDIATE")

        return engine


class PostgresWriter(ThreadWriter):
    """PostgreSQL's writers: ``threads`` threads, each job on a synchronous psycopg 3 connection in an
    ordinary transaction; PostgreSQL takes many writers at once, so the threads run side by side and
    conflicting rows wait in the server, as two processes' do. The connections are this process's in
    addition to the async pool (keep workers × (pool + overflow + writer threads) under the server's
    ``max_connections``). A connection that sat idle is pinged at checkout, as the async pool's are.

    Each transaction's BEGIN is the writer's own (psycopg in autocommit underneath; see
    :meth:`_make_engine`). A job whose caller says it runs only DirectStatements (``direct_only``) is
    batched with ``batch`` (``CAREERWISE_DATABASE_WRITER_BATCH``, on in the app; ``store/direct.py``'s
    :func:`batched`, :meth:`_transaction`); every other job, and every job with ``batch`` off, sends its
    statements one by one."""

    thread_name = "careerwise-pg-writer"

    def __init__(self, url: str, *, threads: int, ping_after_idle: float, batch: bool = False) -> None:
        super().__init__(url, threads=threads)
        self._ping_after_idle = ping_after_idle
        self.batch = batch

    def _make_engine(self) -> Engine:
        # psycopg in autocommit, the BEGIN sent by us: psycopg's own BEGIN waits for its answer (a round
        # trip of its own); ours is kept in a batch and travels with the statements. COMMIT and ROLLBACK
        # stay psycopg's (it sends them whenever a transaction is open, autocommit or not)
        engine = create_engine(
            self._url, pool_size=self.threads, max_overflow=0, isolation_level="AUTOCOMMIT"
        )
        _ping_when_idle(engine, self._ping_after_idle)

        @event.listens_for(engine, "begin")
        def _begin(connection: Connection) -> None:
            execute_driver_sql(connection, "BEGIN", wait=False)

        @event.listens_for(engine, "commit")
        def _commit(connection: Connection) -> None:
            # a batched job's kept statements travel with the COMMIT; psycopg then finds no transaction
            # open and sends nothing more
            flush_batch(connection, "COMMIT")

        return engine

    def _transaction(self, connection: Connection, item: _Job) -> AbstractContextManager[Any]:
        """A batched job (``batch`` on and the job's caller says it runs only DirectStatements) in
        :func:`batched`, entered before its BEGIN and left after its COMMIT: its statements travel
        together, a round trip per answer it needs instead of one per statement. Each round trip lets go
        of the GIL and must take it back from a busy event loop (up to a switch interval, 5 ms, each
        time), so the round trips cost the burst more than the server's time (docs/benchmarks.md,
        "PostgreSQL's share of the burst")."""
        if not (self.batch and item.direct_only):
            return connection.begin()
        with ExitStack() as stack:  # a BEGIN that fails leaves the batch too
            stack.enter_context(batched(connection))
            stack.enter_context(connection.begin())
            return stack.pop_all()


class ThreadReader(ThreadWriter):
    """Threads for the reads a turn makes before it starts (the token budget, the assistant and its
    settings: ``Database.read``), one job each on a connection of their own, without a transaction
    around it: each statement sees what was committed when it starts, as the async session's
    autocommit reads did, so a change made by another process is seen from the next turn on.

    On the async session those two reads were two statements through the driver's thread (aiosqlite)
    or protocol (asyncpg), SQLAlchemy's async adaptation and greenlet hops, about 1 ms of the loop's CPU
    a turn; here they are one hand-off to a thread and one back (docs/benchmarks.md, "The database's
    share of a turn"). Two threads by default, so a burst's reads do not queue behind one (SQLite's WAL
    lets them read beside each other and the writer; sqlite3 and psycopg let go of the GIL while they
    wait); PostgreSQL's in autocommit, their connections pinged after idling as the writer's are. On
    PostgreSQL they also run the shared rate limit's upsert (:meth:`Database.write_atomic`), atomic on
    its own in autocommit. Failures are the writer's: logged, counted in :attr:`failures` by job,
    raised to the caller."""

    thread_name = "careerwise-reader"

    def __init__(self, url: str, *, threads: int, ping_after_idle: float) -> None:
        super().__init__(url, threads=threads)
        self._ping_after_idle = ping_after_idle

    def _make_engine(self) -> Engine:
        if self._url.startswith("sqlite"):
            engine = create_engine(self._url, pool_size=self.threads, max_overflow=0)
            event.listen(engine, "connect", _sqlite_pragmas)

            @event.listens_for(engine, "connect")
            def _no_implicit_transactions(dbapi_connection: Any, _record: Any) -> None:
                dbapi_connection.isolation_level = None  # reads only: nothing to BEGIN

            return engine
        engine = create_engine(
            self._url, pool_size=self.threads, max_overflow=0, isolation_level="AUTOCOMMIT"
        )
        _ping_when_idle(engine, self._ping_after_idle)
        return engine


PING_AFTER_IDLE = 5.0  # seconds; see _ping_when_idle
WRITER_THREADS = 6  # PostgreSQL's writer threads a process runs by default; see PostgresWriter
READER_THREADS = 2  # the reader threads a process runs by default, either store; see ThreadReader
SEARCH_CONNECTIONS = (
    4  # PostgreSQL connections for the knowledge searches a process runs; see blocking_engine
)


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
