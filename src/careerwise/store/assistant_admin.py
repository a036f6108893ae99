"""What the dashboard's assistants page reads beside the profiles (assistants.py, assistant_settings.py
write them): each assistant's number of setting overrides and of turns, and the settings' audit log."""

from __future__ import annotations

from sqlalchemy import func, select

from careerwise.store.db import Database
from careerwise.store.models import AssistantSetting, SettingsAudit, Trace

__all__ = ["AssistantAdminStore"]


class AssistantAdminStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def counts(self) -> tuple[dict[str, int], dict[str, int]]:
        """Per assistant id: its setting overrides, and its turns."""
        async with self.db.session() as s:
            overrides = (
                await s.execute(
                    select(AssistantSetting.assistant_id, func.count()).group_by(
                        AssistantSetting.assistant_id
                    )
                )
            ).all()
            turns = (
                await s.execute(select(Trace.assistant_id, func.count()).group_by(Trace.assistant_id))
            ).all()
        return {a: int(n) for a, n in overrides}, {a: int(n) for a, n in turns}

    async def audit(self, assistant_id: str, *, limit: int, offset: int) -> tuple[int, list[SettingsAudit]]:
        """How many changes the assistant's settings had, and a page of them, newest first."""
        where = SettingsAudit.assistant_id == assistant_id
        async with self.db.session() as s:
            total = int(await s.scalar(select(func.count(SettingsAudit.id)).where(where)) or 0)
            rows = (
                await s.scalars(
                    select(SettingsAudit)
                    .where(where)
                    .order_by(SettingsAudit.changed_at.desc(), SettingsAudit.id.desc())
                    .limit(limit)
                    .offset(offset)
                )
            ).all()
        return total, list(rows)
