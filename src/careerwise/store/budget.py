"""The daily token counts (budget.py decides what a budget allows): one row per owner and day, read by
owner and day, and counted up by an upsert that never conflicts (ON CONFLICT adds to the day's row), so
counting fails only when the transaction around it would. Each read and count runs on an async
session, or on a synchronous connection inside a job of ``Database.read``/``Database.write``."""

from __future__ import annotations

from datetime import date
from functools import cached_property

from sqlalchemy import Connection, Executable, bindparam, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from careerwise.store.db import Database
from careerwise.store.direct import DirectStatement
from careerwise.store.models_budget import TokenUsage

__all__ = ["TokenUsageStore"]

_USAGE = TokenUsage.__table__
_USED = select(_USAGE.c.tokens).where(_USAGE.c.owner == bindparam("owner"), _USAGE.c.day == bindparam("day"))
_USED_DIRECT = DirectStatement(_USED)


class TokenUsageStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def used(self, owner: str, day: date, *, session: AsyncSession | None = None) -> int:
        """Tokens counted for ``owner`` on ``day``, read on ``session`` when given."""
        if session is None:
            async with self.db.session() as s:
                return await self.used(owner, day, session=s)
        value = await session.scalar(_USED, {"owner": owner, "day": day})
        return int(value or 0)

    def used_on(self, connection: Connection, owner: str, day: date) -> int:
        """:meth:`used` on a synchronous connection (a job on the database's reader thread)."""
        rows = _USED_DIRECT.fetch(connection, {"owner": owner, "day": day})
        return int(rows[0][0] or 0) if rows else 0

    async def add(self, owner: str, day: date, tokens: int) -> None:
        """Counts ``tokens`` in a transaction of its own."""
        async with self.db.session() as s, s.begin():
            await self.add_in(s, owner, day, tokens)

    async def add_in(self, session: AsyncSession, owner: str, day: date, tokens: int) -> None:
        """Counts ``tokens`` inside the caller's open transaction."""
        await session.execute(self._upsert, {"owner": owner, "day": day, "tokens": tokens})

    def add_on(self, connection: Connection, owner: str, day: date, tokens: int) -> None:
        """:meth:`add_in` on a synchronous connection inside the caller's open transaction (the turn's
        closing job, ``Database.write``)."""
        # ``send``: batched on PostgreSQL's writer, it travels with the COMMIT (store/direct.py)
        self._upsert_direct.send(connection, {"owner": owner, "day": day, "tokens": tokens})

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
