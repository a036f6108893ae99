"""Assistants as data: who answers (name, persona), from which part of the knowledge base, and whether
they are switched on. Summer is the default and is created on first use, exactly as she ships.

One place validates and audits a profile change (the admin API and the CLI both come through here); every
changed field gets a row in ``settings_audit`` under a ``profile.<field>`` key, next to the settings'
own audit rows, so an assistant has one history of who changed what, when.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from careerwise.errors import ConflictError, NotFoundError
from careerwise.knowledge.documents import DOMAINS
from careerwise.store import Assistant, Database, SettingsAudit, as_utc

DEFAULT_ASSISTANT = "summer"
DEFAULT_NAME = "Summer"
# lower-case, starts with a letter: it appears in URLs, metric labels and log lines as it is
ID_PATTERN = r"^[a-z][a-z0-9_-]{1,31}$"
_ID = re.compile(ID_PATTERN)


def valid_id(assistant_id: str) -> bool:
    """Whether ``assistant_id`` has the form of an assistant id (one that does not is never looked up)."""
    return _ID.match(assistant_id) is not None


def _domains(value: list[str] | None) -> list[str]:
    """``None``, ``[]`` and ``["all"]`` mean the whole knowledge base; else known domains, deduplicated."""
    if not value or value == ["all"]:
        return []
    unknown = [d for d in value if d not in DOMAINS]
    if unknown:
        raise ValueError(f"unknown knowledge domain(s) {unknown}; known: {', '.join(DOMAINS)} or 'all'")
    return sorted(set(value))


class ProfileUpdate(BaseModel):
    """The fields an admin may change; a field left out keeps its value."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)
    name: str | None = Field(default=None, min_length=1, max_length=200, description="Display name.")
    description: str | None = Field(default=None, max_length=2000)
    system_prompt: str | None = Field(
        default=None,
        max_length=20_000,
        description="The persona / system prompt; empty = the built-in prompts (Summer's). "
        "'{today}' is replaced by the date.",
    )
    knowledge_domains: list[str] | None = Field(
        default=None, description=f"Knowledge domains searched: [] or ['all'] = all; else of {list(DOMAINS)}."
    )
    enabled: bool | None = None

    @field_validator("knowledge_domains")
    @classmethod
    def _known_domains(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else _domains(value)


class ProfileIn(ProfileUpdate):
    """A new assistant: an id (URL-safe, unique) and a name at least."""

    id: str = Field(pattern=ID_PATTERN, description="Lower-case letters, digits, '-' and '_'; 2-32 long.")
    name: str = Field(min_length=1, max_length=200)


@dataclass(frozen=True)
class AssistantProfile:
    id: str
    name: str
    description: str
    system_prompt: str
    knowledge_domains: tuple[str, ...]
    enabled: bool
    created_at: datetime
    updated_at: datetime | None
    updated_by: str | None

    @classmethod
    def of(cls, row: Assistant) -> AssistantProfile:
        return cls(
            id=row.id,
            name=row.name,
            description=row.description or "",
            system_prompt=row.system_prompt or "",
            knowledge_domains=tuple(row.knowledge_domains or ()),
            enabled=bool(row.enabled),
            created_at=as_utc(row.created_at),
            updated_at=as_utc(row.updated_at) if row.updated_at else None,
            updated_by=row.updated_by,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "system_prompt": self.system_prompt,
            "knowledge_domains": list(self.knowledge_domains) or ["all"],
            "enabled": self.enabled,
            "default": self.id == DEFAULT_ASSISTANT,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat() if self.updated_at else None,
            "updated_by": self.updated_by,
        }


def _stored(field: str, value: Any) -> Any:
    """The JSON value an audit row keeps (lists as lists, the rest as they are)."""
    return list(value) if isinstance(value, tuple | list) else value


class AssistantStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def ensure_default(self) -> None:
        """Summer's row (the migration adds it; a database created from the models may not have it)."""
        async with self._db.session() as s, s.begin():
            if await s.get(Assistant, DEFAULT_ASSISTANT) is None:
                s.add(Assistant(id=DEFAULT_ASSISTANT, name=DEFAULT_NAME))

    async def list(self) -> list[AssistantProfile]:
        await self.ensure_default()
        async with self._db.session() as s:
            rows = (await s.scalars(select(Assistant).order_by(Assistant.created_at, Assistant.id))).all()
        return [AssistantProfile.of(r) for r in rows]

    async def get(self, assistant_id: str) -> AssistantProfile:
        if assistant_id == DEFAULT_ASSISTANT:
            await self.ensure_default()
        async with self._db.session() as s:
            row = await s.get(Assistant, assistant_id)
        if row is None:
            raise NotFoundError(f"no assistant {assistant_id!r}")
        return AssistantProfile.of(row)

    async def for_turn(self, assistant_id: str) -> AssistantProfile:
        """The profile a turn runs with: 404 for an unknown id, 409 for a disabled assistant."""
        if not valid_id(assistant_id):
            raise NotFoundError(f"no assistant {assistant_id!r}")
        profile = await self.get(assistant_id)
        if not profile.enabled:
            raise ConflictError(f"the assistant {assistant_id!r} is disabled")
        return profile

    async def create(self, body: ProfileIn, *, changed_by: str) -> AssistantProfile:
        await self.ensure_default()
        values = body.model_dump(exclude_unset=True, exclude={"id"})
        row = Assistant(id=body.id, **{k: v for k, v in values.items() if v is not None})
        row.updated_at, row.updated_by = datetime.now(UTC), changed_by
        try:
            async with self._db.session() as s, s.begin():
                if await s.get(Assistant, body.id) is not None:
                    raise ConflictError(f"an assistant with id {body.id!r} already exists")
                s.add(row)
                await s.flush()
                s.add(
                    self._audit(
                        body.id, "profile.created", None, AssistantProfile.of(row).to_json(), changed_by
                    )
                )
        except IntegrityError as exc:  # created by another process between our check and our insert
            raise ConflictError(f"an assistant with id {body.id!r} already exists") from exc
        return await self.get(body.id)

    async def update(self, assistant_id: str, patch: ProfileUpdate, *, changed_by: str) -> AssistantProfile:
        """Apply the fields given; one audit row per field whose value changed."""
        if assistant_id == DEFAULT_ASSISTANT:
            await self.ensure_default()
            if patch.enabled is False:
                raise ConflictError(
                    "the default assistant (summer) cannot be disabled: unnamed turns use her"
                )
        changes = {k: v for k, v in patch.model_dump(exclude_unset=True).items() if v is not None}
        async with self._db.session() as s, s.begin():
            row = await s.get(Assistant, assistant_id)
            if row is None:
                raise NotFoundError(f"no assistant {assistant_id!r}")
            changed = False
            for key, new in changes.items():
                old = getattr(row, key)
                if _stored(key, old) == _stored(key, new):
                    continue
                setattr(row, key, new)
                s.add(
                    self._audit(
                        assistant_id, f"profile.{key}", _stored(key, old), _stored(key, new), changed_by
                    )
                )
                changed = True
            if changed:
                row.updated_at, row.updated_by = datetime.now(UTC), changed_by
        return await self.get(assistant_id)

    @staticmethod
    def _audit(assistant_id: str, key: str, old: Any, new: Any, changed_by: str) -> SettingsAudit:
        return SettingsAudit(
            assistant_id=assistant_id, key=key, old_value=old, new_value=new, changed_by=changed_by
        )
