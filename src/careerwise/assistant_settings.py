"""Per-assistant settings: configuration gives the defaults, values stored in the database override them.

Precedence, explicit: built-in default < environment (``CAREERWISE_*``) < database (per assistant).
``careerwise settings show`` prints each effective value with its source. The engine reads a fresh
snapshot at the start of every turn, so a change applies to the next turn without a restart, in every
process that shares the database.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import select

from careerwise.config import Settings
from careerwise.errors import UserInputError
from careerwise.store import Assistant, AssistantSetting, Database, SettingsAudit

DEFAULT_ASSISTANT = "summer"
Source = Literal["default", "environment", "database"]


class AssistantSettings(BaseModel):
    """The tunable values of one assistant, as they stand for one turn."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    use_full_retrieval_range: bool = Field(
        default=False, description="Return the configured_top_k passages whatever top_k the model asks for."
    )
    configured_top_k: int = Field(default=12, ge=1, le=50, description="top_k used when the override is on.")
    search_default_top_k: int = Field(default=3, ge=1, le=50)
    rerank_candidates: int = Field(default=12, ge=1, le=200)
    buffer_guard_chunks: int = Field(default=3, ge=0, le=20)
    phase1_max_tokens: int = Field(default=512, ge=16, le=8192)
    phase1_temperature: float = Field(default=0.7, ge=0, le=2)
    phase3_max_tokens: int = Field(default=384, ge=16, le=8192)
    phase3_temperature: float = Field(default=0.5, ge=0, le=2)
    max_tool_rounds: int = Field(default=2, ge=1, le=4)


KEYS: tuple[str, ...] = tuple(AssistantSettings.model_fields)


@dataclass(frozen=True)
class EffectiveSettings:
    values: AssistantSettings
    sources: dict[str, Source]


def _environment_values(config: Settings) -> tuple[dict[str, Any], dict[str, Source]]:
    values: dict[str, Any] = {}
    sources: dict[str, Source] = {}
    for key in KEYS:
        if key in Settings.model_fields:
            values[key] = getattr(config, key)
            sources[key] = "environment" if key in config.model_fields_set else "default"
        else:
            sources[key] = "default"
    return values, sources


def _coerce(key: str, raw: str) -> Any:
    field = AssistantSettings.model_fields[key]
    if field.annotation is bool:
        lowered = raw.strip().lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise UserInputError(f"{key} must be true or false, got {raw!r}")
    return raw


class SettingsStore:
    def __init__(self, db: Database, config: Settings) -> None:
        self._db = db
        self._config = config

    async def ensure_assistant(self, assistant_id: str = DEFAULT_ASSISTANT) -> None:
        async with self._db.session() as s, s.begin():
            if await s.get(Assistant, assistant_id) is None:
                s.add(
                    Assistant(
                        id=assistant_id, name="Summer" if assistant_id == DEFAULT_ASSISTANT else assistant_id
                    )
                )

    async def effective(self, assistant_id: str = DEFAULT_ASSISTANT) -> EffectiveSettings:
        values, sources = _environment_values(self._config)
        async with self._db.session() as s:
            rows = (
                await s.scalars(select(AssistantSetting).where(AssistantSetting.assistant_id == assistant_id))
            ).all()
        for row in rows:
            if row.key in KEYS:
                values[row.key] = row.value
                sources[row.key] = "database"
        return EffectiveSettings(AssistantSettings(**values), sources)

    async def set(
        self, key: str, raw_value: Any, *, changed_by: str, assistant_id: str = DEFAULT_ASSISTANT
    ) -> Any:
        """Validate and store one override, with an audit row. Raises UserInputError on a bad key/value."""
        if key not in KEYS:
            raise UserInputError(f"unknown setting {key!r}; known: {', '.join(KEYS)}")
        value = _coerce(key, raw_value) if isinstance(raw_value, str) else raw_value
        current = await self.effective(assistant_id)
        try:
            validated = AssistantSettings(**(current.values.model_dump() | {key: value}))
        except ValidationError as exc:
            msg = "; ".join(e["msg"] for e in exc.errors())
            raise UserInputError(f"invalid value for {key}: {msg}") from exc
        new = getattr(validated, key)
        await self.ensure_assistant(assistant_id)
        async with self._db.session() as s, s.begin():
            row = await s.get(AssistantSetting, (assistant_id, key))
            old = row.value if row else None
            if row is None:
                s.add(AssistantSetting(assistant_id=assistant_id, key=key, value=new, updated_by=changed_by))
            else:
                row.value, row.updated_by, row.updated_at = new, changed_by, datetime.now(UTC)
            s.add(
                SettingsAudit(
                    assistant_id=assistant_id, key=key, old_value=old, new_value=new, changed_by=changed_by
                )
            )
        return new

    async def reset(self, key: str, *, changed_by: str, assistant_id: str = DEFAULT_ASSISTANT) -> None:
        """Remove a database override, so the configuration default applies again."""
        if key not in KEYS:
            raise UserInputError(f"unknown setting {key!r}")
        async with self._db.session() as s, s.begin():
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
