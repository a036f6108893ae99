"""SQLite's one writer, met in the event loop: on SQLite every write transaction this process opens
on the async session (``async with session.begin()``) first takes one asyncio lock per event loop, so
the process's writers queue in the loop instead of inside SQLite's busy timeout. The lock may be taken
again by the task that holds it, and a wait for it gives up after a timeout as an ``OperationalError``
(the API's 503 for a busy database), never hanging. Reads and PostgreSQL sessions take no lock."""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from typing import Any

from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncSession

log = logging.getLogger(__name__)


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
