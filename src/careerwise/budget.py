"""A daily token budget per user (per IP for visitors without an account), counted in the database so
every app process sees the same total. The day is Taipei's: a budget resets at midnight there."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import cached_property
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from careerwise.errors import RateLimitedError
from careerwise.store import Database
from careerwise.store.budget import TokenUsageStore

if TYPE_CHECKING:  # annotations only: the statements are store/budget.py's
    from sqlalchemy import Connection
    from sqlalchemy.ext.asyncio import AsyncSession

TAIPEI = ZoneInfo("Asia/Taipei")


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
        return await self._usage.used(key, day or today(), session=session)

    def used_on(self, connection: Connection, key: str) -> int:
        """:meth:`used` for today on a synchronous connection: the engine reads it with the assistant's
        settings in one job on the database's reader thread (``Database.read``)."""
        return self._usage.used_on(connection, key, today())

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
        await self._usage.add(key, today(), tokens)

    async def add_in(self, session: AsyncSession, key: str, tokens: int) -> None:
        """Count ``tokens`` inside the caller's open transaction: one upsert, never a conflict (ON
        CONFLICT adds to the day's row), so it fails only when the whole transaction would."""
        if tokens <= 0:
            return
        await self._usage.add_in(session, key, today(), tokens)

    def add_on(self, connection: Connection, key: str, tokens: int) -> None:
        """:meth:`add_in` on a synchronous connection inside the caller's open transaction: the turn's
        closing transaction runs as one job (``Database.write``), on SQLite in the writer thread."""
        if tokens <= 0:
            return
        self._usage.add_on(connection, key, today(), tokens)

    @cached_property
    def _usage(self) -> TokenUsageStore:
        """The counts' rows (store/budget.py), on this budget's database."""
        return TokenUsageStore(self.db)


def _until_midnight() -> int:
    now = datetime.now(TAIPEI)
    midnight = datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), TAIPEI)
    return math.ceil((midnight - now).total_seconds())
