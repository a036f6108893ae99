"""The assistants' setting overrides (assistant_settings.py validates them and decides precedence):
a turn's one read of its assistant (the profile joined with its overrides, one row per override, or one
row with the key NULL when there is none; no row: no such assistant), and each change of an override
written in one transaction with its audit row, so the audit log never misses a change."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from careerwise.store.db import Database
from careerwise.store.direct import DirectStatement
from careerwise.store.models import Assistant, AssistantSetting, SettingsAudit

__all__ = ["SettingOverrides"]

_ASSISTANTS = Assistant.__table__
_OVERRIDES = AssistantSetting.__table__
# a turn's one read: (enabled, persona, domains, key, value) per override
_TURN_READ = (
    select(
        _ASSISTANTS.c.enabled,
        _ASSISTANTS.c.system_prompt,
        _ASSISTANTS.c.knowledge_domains,
        _OVERRIDES.c.key,
        _OVERRIDES.c.value,
    )
    .select_from(_ASSISTANTS.outerjoin(_OVERRIDES, _OVERRIDES.c.assistant_id == _ASSISTANTS.c.id))
    .where(_ASSISTANTS.c.id == bindparam("assistant_id"))
)
_TURN_READ_DIRECT = DirectStatement(_TURN_READ)


class SettingOverrides:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def turn_rows(
        self, assistant_id: str, session: AsyncSession | None = None
    ) -> Sequence[Sequence[Any]]:
        """The turn's read (enabled, persona, domains, key, value), on ``session`` when given."""
        if session is None:
            async with self.db.session() as s:
                return await self.turn_rows(assistant_id, s)
        return (await session.execute(_TURN_READ, {"assistant_id": assistant_id})).all()

    @staticmethod
    def turn_rows_on(connection: Connection, assistant_id: str) -> Sequence[Sequence[Any]]:
        """:meth:`turn_rows` on a synchronous connection (a job of ``Database.read``)."""
        return _TURN_READ_DIRECT.fetch(connection, {"assistant_id": assistant_id})

    async def stored(self, assistant_id: str) -> dict[str, Any]:
        """Every stored override of the assistant, by key."""
        async with self.db.session() as s:
            rows = (
                await s.scalars(select(AssistantSetting).where(AssistantSetting.assistant_id == assistant_id))
            ).all()
        return {row.key: row.value for row in rows}

    async def put(self, assistant_id: str, key: str, value: Any, *, changed_by: str) -> None:
        """Stores ``value`` as the override of ``key`` (new or replacing one), with its audit row."""
        async with self.db.session() as s, s.begin():
            row = await s.get(AssistantSetting, (assistant_id, key))
            old = row.value if row else None
            if row is None:
                s.add(
                    AssistantSetting(assistant_id=assistant_id, key=key, value=value, updated_by=changed_by)
                )
            else:
                row.value, row.updated_by, row.updated_at = value, changed_by, datetime.now(UTC)
            s.add(
                SettingsAudit(
                    assistant_id=assistant_id, key=key, old_value=old, new_value=value, changed_by=changed_by
                )
            )

    async def remove(self, assistant_id: str, key: str, *, changed_by: str) -> None:
        """Deletes the override of ``key``, with its audit row (``new_value`` null); none: nothing."""
        async with self.db.session() as s, s.begin():
            row = await s.get(AssistantSetting, (assistant_id, key))
            if row is not None:
                s.add(
                    SettingsAudit(
                        assistant_id=assistant_id,
                        key=key,
                        old_value=row.value,
                        new_value=None,
                        changed_by=changed_by,
                    )
                )
                await s.delete(row)
