"""A daily token budget per user (per IP for visitors without an account), counted in the database so
every app process sees the same total. The day is Taipei's: a budget resets at midnight there."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import cached_property
from zoneinfo import ZoneInfo

from sqlalchemy import Connection, Executable, bindparam, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from careerwise.errors import RateLimitedError
from careerwise.store import Database
from careerwise.store.direct import DirectStatement
from careerwise.store.models_budget import TokenUsage

TAIPEI = ZoneInfo("Asia/Taipei")
_USAGE = TokenUsage.__table__
_USED = select(_USAGE.c.tokens).where(_USAGE.c.owner == bindparam("owner"), _USAGE.c.day == bindparam("day"))
_USED_DIRECT = DirectStatement(_USED)


def today(now: datetime | None = None) -> date:
    return (now or datetime.now(TAIPEI)).astimezone(TAIPEI).date()


@dataclass
class TokenBudget:
    db: Database
    daily_tokens: int  # 0 = no budget
    # the day's ceiling of a group key (TurnRequest.budget_group: the young accounts of one IP); 0 = none
    group_tokens: int = 0

    async def used(self, key: str, day: date | None = None, *, session: AsyncSession | None = None) -> int:
        """Tokens counted for ``key`` on ``day`` (today), read on ``session`` when given."""
        if session is None:
            async with self.db.session() as s:
                return await self.used(key, day, session=s)
        value = await session.scalar(_USED, {"owner": key, "day": day or today()})
        return int(value or 0)

    def used_on(self, connection: Connection, key: str) -> int:
        """:meth:`used` for today on a synchronous connection: the engine reads it with the assistant's
        settings in one job on the database's reader thread (``Database.read``)."""
        rows = _USED_DIRECT.fetch(connection, {"owner": key, "day": today()})
        return int(rows[0][0] or 0) if rows else 0

    @property
    def applies(self) -> bool:
        """Whether there is a budget to enforce at all (0 = none: nothing is read before a turn)."""
        return self.daily_tokens > 0 or self.group_tokens > 0

    async def check(self, key: str, *, session: AsyncSession | None = None) -> None:
        """RateLimitedError (429, Retry-After until midnight in Taipei) when the day's budget is spent."""
        if self.daily_tokens <= 0:
            return
        self.refuse_when_spent(await self.used(key, session=session))

    def refuse_when_spent(self, used: int) -> None:
        """:meth:`check` once ``used``, today's count, has been read."""
        if self.daily_tokens > 0 and used >= self.daily_tokens:
            raise RateLimitedError(
                f"today's budget of {self.daily_tokens:,} tokens is used up; it renews at midnight Taipei time",
                retry_after=_until_midnight(),
            )

    def refuse_when_group_spent(self, used: int) -> None:
        """The group's ceiling (``group_tokens``): new accounts from one network share one day's budget,
        so signing up again does not buy another."""
        if self.group_tokens > 0 and used >= self.group_tokens:
            raise RateLimitedError(
                f"new accounts on this network have used today's shared budget of {self.group_tokens:,} "
                "tokens; it renews at midnight Taipei time",
                retry_after=_until_midnight(),
            )

    async def add(self, key: str, tokens: int) -> None:
        """Count ``tokens`` in a transaction of its own (the engine counts inside the turn's closing
        transaction instead: :meth:`add_in`)."""
        if tokens <= 0:
            return
        async with self.db.session() as s, s.begin():
            await self.add_in(s, key, tokens)

    async def add_in(self, session: AsyncSession, key: str, tokens: int) -> None:
        """Count ``tokens`` inside the caller's open transaction: one upsert, never a conflict (ON
        CONFLICT adds to the day's row), so it fails only when the whole transaction would."""
        if tokens <= 0:
            return
        await session.execute(self._upsert, {"owner": key, "day": today(), "tokens": tokens})

    def add_on(self, connection: Connection, key: str, tokens: int) -> None:
        """:meth:`add_in` on a synchronous connection inside the caller's open transaction: the turn's
        closing transaction runs as one job (``Database.write``), on SQLite in the writer thread."""
        if tokens <= 0:
            return
        # ``send``: batched on PostgreSQL's writer, it travels with the COMMIT (store/direct.py)
        self._upsert_direct.send(connection, {"owner": key, "day": today(), "tokens": tokens})

    @cached_property
    def _upsert_direct(self) -> DirectStatement:
        """:attr:`_upsert` run on the driver's cursor (store/direct.py): the writer thread's job."""
        return DirectStatement(self._upsert)

    @cached_property
    def _upsert(self) -> Executable:
        """The counting statement, built once: a Core insert on the table (the ORM's bulk path costs
        about a millisecond of event-loop CPU a turn), the values bound at execution."""
        dialect = postgresql if self.db.is_postgresql else sqlite
        table = TokenUsage.__table__
        stmt = dialect.insert(table).values(
            owner=bindparam("owner"), day=bindparam("day"), tokens=bindparam("tokens")
        )
        upsert: Executable = stmt.on_conflict_do_update(
            index_elements=[table.c.owner, table.c.day],
            set_={"tokens": table.c.tokens + stmt.excluded.tokens},
        )
        return upsert


def _until_midnight() -> int:
    now = datetime.now(TAIPEI)
    midnight = datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), TAIPEI)
    return math.ceil((midnight - now).total_seconds())
