"""The database's worker threads: writer threads that run this process's hot-path write transactions
(a turn's opening and closing), one job in one transaction each, and reader threads for the reads a
turn makes before it starts. A job hands off to a thread and back once instead of hopping through the
event loop per statement. Each job's outcome reaches its caller on the caller's loop: its result, or its
exception after a rollback (logged and counted by job name in ``failures``); a caller that left while
its job committed has the job's ``undo`` run. After ``stop`` no job is accepted and no thread starts."""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine

from careerwise.errors import NotFoundError, UserInputError
from careerwise.store.direct import batched, execute_driver_sql, flush_batch
from careerwise.store.engines import _ping_when_idle, _sqlite_pragmas

log = logging.getLogger(__name__)
T = TypeVar("T")

WRITER_THREADS = 6  # PostgreSQL's writer threads a process runs by default; see PostgresWriter
READER_THREADS = 2  # the reader threads a process runs by default, either store; see ThreadReader

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
    (:class:`SerialWriteSession`) or a pooled PostgreSQL connection all along, so a short transaction
    stretched to many loop passes and the turns queued behind it (decision 0007). Here a transaction costs one hand-off to a thread and one
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
    or protocol (asyncpg), SQLAlchemy's async adaptation and greenlet hops, all on the loop's CPU;
    here they are one hand-off to a thread and one back (decision 0007). Two threads by default, so a burst's reads do not queue behind one (SQLite's WAL
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
