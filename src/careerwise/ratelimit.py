"""Per-minute request limits (429 with ``Retry-After``), counted in the process or in the database.

- :class:`RateLimiter` keeps a sliding window of timestamps in the process: free, exact, but each process
  counts its own window, so ``serve --workers 2`` would let a user through twice.
- :class:`SharedRateLimiter` counts in the ``rate_limit_windows`` table, one row per limit and key, with
  one atomic upsert per request, so every process (and host) sees the same count; the upsert runs off
  the event loop (``Database.write_atomic``: a reader thread on PostgreSQL, the writer on SQLite). The
  window is fixed and anchored at the key's first request (not at the clock's minute), so 25 requests
  in less than a minute meet exactly one window; the price of a fixed window is that a client that
  waits for a window to end may send ``limit`` requests at its end and ``limit`` more at the start of
  the next one.

:func:`make_limiter` picks one from ``CAREERWISE_RATE_LIMIT_STORE`` (docs/security.md#abuse says why
the default is the process on a single SQLite process and the database otherwise).
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import Protocol, cast

from sqlalchemy import Executable, Float, Table, bindparam, case, delete
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from careerwise.config import Settings
from careerwise.errors import RateLimitedError
from careerwise.store import Database, as_utc
from careerwise.store.models_ratelimit import RateLimitWindow

log = logging.getLogger(__name__)


class Limiter(Protocol):
    limit: int

    async def hit(self, key: str, what: str = "requests") -> None:
        """Count one request for ``key``; raise RateLimitedError (429) when over the limit."""
        ...


def _refuse(limit: int, window: float, what: str, retry: int) -> RateLimitedError:
    return RateLimitedError(
        f"too many {what}: the limit is {limit} per {int(window)} s; try again in {retry} s",
        retry_after=retry,
    )


class RateLimiter:
    """A sliding window kept in this process (one worker, or a test)."""

    def __init__(self, limit: int, window: float = 60.0, *, clock: Callable[[], float] = time.monotonic):
        self.limit = limit
        self.window = window
        self._clock = clock
        self._hits: dict[str, deque[float]] = {}

    async def hit(self, key: str, what: str = "requests") -> None:
        if self.limit <= 0:
            return
        now = self._clock()
        hits = self._hits.setdefault(key, deque())
        while hits and hits[0] <= now - self.window:
            hits.popleft()
        if len(hits) >= self.limit:
            raise _refuse(self.limit, self.window, what, math.ceil(hits[0] + self.window - now))
        hits.append(now)
        if len(self._hits) > 10_000:  # forget idle keys so the table cannot grow without bound
            for k in [k for k, v in self._hits.items() if not v or v[-1] <= now - self.window]:
                del self._hits[k]


class SharedRateLimiter:
    """A fixed window per key in the database, shared by every process that uses the same database.

    ``clock`` is wall-clock time (Unix seconds): the processes compare each other's timestamps, which a
    per-process monotonic clock cannot do. Hosts are expected to keep their clocks in sync (NTP).
    """

    def __init__(
        self,
        db: Database,
        *,
        scope: str,
        limit: int,
        window: float = 60.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.db = db
        self.scope = scope
        self.limit = limit
        self.window = window
        self._clock = clock
        self._next_cleanup = 0.0
        self.cleaned = 0  # rows of ended windows this process deleted (visible in tests and logs)

    @cached_property
    def _upsert(self) -> Executable:
        """Count one request; start a new window when the stored one has ended. One statement, so two
        processes can never both read 19 and both write 20: the database serialises the row update.
        Built once per limiter with the key and times bound at execution (see :meth:`hit`): building
        and keying it anew cost about a millisecond of event-loop CPU a request."""
        dialect = postgresql if self.db.is_postgresql else sqlite
        table = RateLimitWindow.__table__
        now = bindparam("p_now", type_=Float())
        stmt = dialect.insert(table).values(
            scope=bindparam("p_scope"), key=bindparam("p_key"), window_start=now, hits=1
        )
        ended = table.c.window_start <= bindparam("p_ended", type_=Float())
        # SET expressions see the row as it was before the update (SQLite and PostgreSQL alike)
        stmt = stmt.on_conflict_do_update(
            index_elements=[table.c.scope, table.c.key],
            set_={
                "hits": case((ended, 1), else_=table.c.hits + 1),
                "window_start": case((ended, now), else_=table.c.window_start),
            },
        )
        counted: Executable = stmt.returning(table.c.hits, table.c.window_start)
        return counted

    @cached_property
    def _delete_ended(self) -> Executable:
        """This limit's ended windows (see :meth:`hit`), the scope and the cut-off bound at execution."""
        table = cast(Table, RateLimitWindow.__table__)
        ended: Executable = delete(table).where(
            table.c.scope == bindparam("p_scope"), table.c.window_start <= bindparam("p_ended", type_=Float())
        )
        return ended

    async def hit(self, key: str, what: str = "requests") -> None:
        if self.limit <= 0:
            return
        now = self._clock()
        params = {"p_scope": self.scope, "p_key": key, "p_now": now, "p_ended": now - self.window}
        # the ended windows are deleted at most once per window per process: a key that comes back after
        # its window ended starts a fresh row anyway, so old rows are only dead weight
        clean = now >= self._next_cleanup
        if clean:
            self._next_cleanup = now + self.window
        ended = {"p_scope": self.scope, "p_ended": now - self.window}
        upsert, delete_ended = self._upsert, self._delete_ended

        def count(connection: Connection) -> tuple[int, float, int]:
            hits, started = connection.execute(upsert, params).one()
            removed = int(connection.execute(delete_ended, ended).rowcount or 0) if clean else 0
            return int(hits), float(started), removed

        # off the event loop, so counting a request never stalls the streams it serves: on PostgreSQL the
        # reader threads' autocommit connections, each statement atomic on its own; on SQLite the writer
        # thread, in one transaction (SQLite has one writer)
        hits, started, removed = await self.db.write_atomic(count, name=f"rate limit {self.scope}")
        if removed:
            self.cleaned += removed
            log.info("rate limits: deleted %d ended %s windows", removed, self.scope)
        if hits > self.limit:
            # refused requests are counted too; they cannot extend the window, whose end is fixed
            raise _refuse(self.limit, self.window, what, max(1, math.ceil(started + self.window - now)))


def shared_store(settings: Settings, db: Database) -> bool:
    """True when the limits must count in the database: asked for, or several processes may serve."""
    if settings.rate_limit_store != "auto":
        return settings.rate_limit_store == "database"
    return db.is_postgresql or settings.serve_workers > 1


def make_limiter(scope: str, limit: int, *, settings: Settings, db: Database) -> Limiter:
    if shared_store(settings, db):
        return SharedRateLimiter(db, scope=scope, limit=limit)
    return RateLimiter(limit)


def is_young(created_at: datetime, *, hours: float, now: datetime | None = None) -> bool:
    """Whether an account made at ``created_at`` is under ``hours`` old (0: no account is). Young
    accounts of one IP share that IP's ceilings, so that signing up again does not buy more turns or
    tokens (docs/security.md, "Limits")."""
    if hours <= 0:
        return False
    return as_utc(created_at) > (now or datetime.now(UTC)) - timedelta(hours=hours)
