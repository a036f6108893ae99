"""Per-assistant settings: configuration gives the defaults, values stored in the database override them.

Precedence, explicit: built-in default < environment (``CAREERWISE_*``) < database (per assistant).
``careerwise settings show`` prints each effective value with its source. The engine reads a fresh
snapshot at the start of every turn, so a change applies to the next turn without a restart, in every
process that shares the database.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ConfigDict, Field, PrivateAttr, ValidationError

from careerwise.assistants import DEFAULT_ASSISTANT, AssistantStore, valid_id
from careerwise.config import Settings
from careerwise.errors import ConflictError, NotFoundError, UserInputError
from careerwise.store import Database
from careerwise.store.assistant_settings import SettingOverrides
from careerwise.tunables import Deadlines, Tunables

if TYPE_CHECKING:  # annotations only: the statements are store/assistant_settings.py's
    from sqlalchemy import Connection
    from sqlalchemy.ext.asyncio import AsyncSession

__all__ = ["DEFAULT_ASSISTANT", "KEYS", "AssistantSettings", "EffectiveSettings", "SettingsStore"]
Source = Literal["default", "environment", "database"]


class AssistantSettings(Deadlines, Tunables):  # this order lists the tunables first
    """The tunable values of one assistant, as they stand for one turn.

    The tunables and deadlines are inherited (``careerwise.tunables``: one declaration, one set of
    bounds, shared with the configuration). :attr:`overridden` names the values this assistant's own
    database rows set; every other value is the configuration's (or the built-in default).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    llm_provider: str = Field(
        default="primary",
        min_length=1,
        max_length=32,
        description="Which configured provider answers: primary, fallback or embedded. Addresses and keys "
        "stay in the configuration; only the name is stored.",
    )
    llm_model: str = Field(
        default="",
        max_length=200,
        description="Model name sent to the provider; empty = its configured model.",
    )
    deep_agent_temperature: float = Field(default=0.3, ge=0, le=2, description="The complex flow's agents.")
    deep_merge_temperature: float = Field(default=0.5, ge=0, le=2, description="The complex flow's merge.")
    # from the assistant's profile (the assistants table, careerwise.assistants), not stored as settings
    system_prompt: str = Field(default="", description="The persona; empty = the built-in prompts.")
    knowledge_domains: tuple[str, ...] = Field(default=(), description="Searched domains; empty = all.")
    _overridden: frozenset[str] = PrivateAttr(default=frozenset())

    @classmethod
    def with_overrides(
        cls, configured: dict[str, Any], stored: dict[str, Any], **profile: Any
    ) -> AssistantSettings:
        """The configured values with this assistant's stored ones over them, validated; the stored
        keys are remembered as :attr:`overridden`."""
        settings = cls(**(configured | stored), **profile)
        settings._overridden = frozenset(stored)
        return settings

    @property
    def overridden(self) -> frozenset[str]:
        """The keys this assistant sets itself (its database rows); the rest are configured values."""
        return self._overridden


PROFILE_KEYS = ("system_prompt", "knowledge_domains")
KEYS: tuple[str, ...] = tuple(k for k in AssistantSettings.model_fields if k not in PROFILE_KEYS)
# the timeouts' defaults depend on the provider (a local model is slower): config/settings.py resolves them
_RESOLVED = {
    "turn_deadline": "resolved_turn_deadline",
    "deep_step_timeout": "resolved_deep_step_timeout",
    "deep_turn_timeout": "resolved_deep_turn_timeout",
}


def provider_names(config: Settings) -> tuple[str, ...]:
    """The providers this configuration can reach, by the names the settings use.

    ``primary`` and ``fallback`` are the configured OpenAI-compatible servers; ``embedded`` is the local
    model, offered when it is the default (no server configured) or its package and weights are installed.
    """
    names: list[str] = []
    if config.llm_base_url:
        names.append("primary")
    if config.llm_base_url and config.llm_fallback_base_url:
        names.append("fallback")
    if not config.llm_base_url or _embedded_installed(config):
        names.append("embedded")
    return tuple(names)


def default_provider(config: Settings) -> str:
    return "primary" if config.llm_base_url else "embedded"


def _embedded_installed(config: Settings) -> bool:
    import importlib.util

    if importlib.util.find_spec("llama_cpp") is None:
        return False
    if config.local_model_path is not None:
        return config.local_model_path.is_file()
    from careerwise.errors import LLMUnavailableError
    from careerwise.llm.local import model_part_paths

    try:
        model_part_paths()
    except LLMUnavailableError:
        return False  # not installed: the embedded model is simply not offered
    return True


@dataclass(frozen=True)
class EffectiveSettings:
    values: AssistantSettings
    sources: dict[str, Source]


def _environment_values(config: Settings) -> tuple[dict[str, Any], dict[str, Source]]:
    values: dict[str, Any] = {}
    sources: dict[str, Source] = {}
    for key in KEYS:
        if key in _RESOLVED:
            values[key] = getattr(config, _RESOLVED[key])
            sources[key] = "environment" if key in config.model_fields_set else "default"
        elif key in Settings.model_fields:
            values[key] = getattr(config, key)
            sources[key] = "environment" if key in config.model_fields_set else "default"
        else:
            sources[key] = "default"
    values["llm_provider"] = default_provider(config)
    values.pop(
        "llm_model", None
    )  # Settings.llm_model is the primary's model: empty here = the provider's own
    sources["llm_model"] = "default"
    sources["llm_provider"] = "environment" if "llm_base_url" in config.model_fields_set else "default"
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


# what a turn reads about its assistant: (enabled, (persona, domains), sorted (key, JSON value) overrides)
TurnRead = tuple[bool, tuple[str, tuple[str, ...]], tuple[tuple[str, str], ...]]
_NOT_READ = object()  # for_turn's ``read`` when the caller read nothing (None means: no such assistant)


def _digest(rows: Sequence[Sequence[Any]]) -> TurnRead | None:
    """The rows of the turn's read (enabled, persona, domains, key, value; store/assistant_settings.py),
    as :data:`TurnRead`."""
    if not rows:
        return None
    enabled, persona, domains = rows[0][0], rows[0][1], rows[0][2]
    overrides = tuple(sorted((r[3], json.dumps(r[4], sort_keys=True)) for r in rows if r[3] in KEYS))
    return bool(enabled), (persona or "", tuple(domains or ())), overrides


_VALIDATED_MAX = 256  # distinct (assistant, settings) combinations kept validated; then start over


class SettingsStore:
    def __init__(self, db: Database, config: Settings) -> None:
        self._db = db
        self._config = config
        self.assistants = AssistantStore(db)
        self._overrides = SettingOverrides(db)
        self._env: tuple[dict[str, Any], dict[str, Source]] | None = None
        # (profile, overrides) as read -> the validated settings; see for_turn
        self._validated: dict[tuple[Any, ...], AssistantSettings] = {}

    async def ensure_assistant(self, assistant_id: str = DEFAULT_ASSISTANT) -> None:
        """Only the default is created on demand; any other assistant must exist (404 otherwise)."""
        await self.assistants.get(assistant_id)

    async def for_turn(
        self,
        assistant_id: str = DEFAULT_ASSISTANT,
        *,
        allow_disabled: bool = False,
        session: AsyncSession | None = None,
        read: object = _NOT_READ,
    ) -> AssistantSettings:
        """Everything a turn reads about its assistant, fresh: settings plus persona and knowledge
        domains from the profile. 404 for an unknown assistant, 409 for a disabled one (unless
        ``allow_disabled``: the dashboard's retrieval test may try out a disabled assistant).

        One statement (the profile joined with its overrides) on ``session`` when given (the engine
        reads the token budget on the same connection), so every turn still sees the database as it is
        now, in every process. Only the validation is remembered, keyed by what was read: the same rows
        give the same frozen object, and a change gives other rows, hence a new object. ``read``: what
        :meth:`read_on` returned for this turn (the engine reads it on the database's reader thread with
        the token budget), instead of reading here."""
        if not allow_disabled and not valid_id(assistant_id):
            raise NotFoundError(f"no assistant {assistant_id!r}")
        if read is _NOT_READ:
            read = await self._read_turn(assistant_id, session)
        if read is None and assistant_id == DEFAULT_ASSISTANT:
            await self.assistants.ensure_default()  # a database created from the models, not migrated
            read = await self._read_turn(assistant_id, None)
        if read is None:
            raise NotFoundError(f"no assistant {assistant_id!r}")
        assert isinstance(read, tuple)
        enabled, profile, overrides = read
        if not enabled and not allow_disabled:
            raise ConflictError(f"the assistant {assistant_id!r} is disabled")
        key = (profile, overrides)
        settings = self._validated.get(key)
        if settings is None:
            values, _ = self._environment()
            stored = {k: json.loads(v) for k, v in overrides}
            settings = AssistantSettings.with_overrides(
                values, stored, system_prompt=profile[0], knowledge_domains=profile[1]
            )
            if len(self._validated) >= _VALIDATED_MAX:
                self._validated.clear()
            self._validated[key] = settings
        return settings

    async def _read_turn(self, assistant_id: str, session: AsyncSession | None) -> TurnRead | None:
        """(enabled, (persona, domains), sorted (key, JSON value) overrides), or None: no such assistant."""
        return _digest(await self._overrides.turn_rows(assistant_id, session))

    @staticmethod
    def read_on(connection: Connection, assistant_id: str) -> TurnRead | None:
        """What :meth:`for_turn` reads, on a synchronous connection (a job of ``Database.read``)."""
        return _digest(SettingOverrides.turn_rows_on(connection, assistant_id))

    def _environment(self) -> tuple[dict[str, Any], dict[str, Source]]:
        """Fresh copies of the configuration's values and sources (computed once: the configuration
        does not change while the process runs)."""
        if self._env is None:
            self._env = _environment_values(self._config)
        values, sources = self._env
        return dict(values), dict(sources)

    async def effective(self, assistant_id: str = DEFAULT_ASSISTANT) -> EffectiveSettings:
        values, sources = self._environment()
        stored = {k: v for k, v in (await self._overrides.stored(assistant_id)).items() if k in KEYS}
        for key in stored:
            sources[key] = "database"
        return EffectiveSettings(AssistantSettings.with_overrides(values, stored), sources)

    async def set(
        self, key: str, raw_value: Any, *, changed_by: str, assistant_id: str = DEFAULT_ASSISTANT
    ) -> Any:
        """Validate and store one override, with an audit row. Raises UserInputError on a bad key/value."""
        if key not in KEYS:
            raise UserInputError(f"unknown setting {key!r}; known: {', '.join(KEYS)}")
        value = _coerce(key, raw_value) if isinstance(raw_value, str) else raw_value
        if key == "llm_provider" and value not in (names := provider_names(self._config)):
            raise UserInputError(
                f"llm_provider {value!r} is not configured here; configured: {', '.join(names)} "
                "(addresses and keys are set in the configuration, docs/configuration.md)"
            )
        current = await self.effective(assistant_id)
        try:
            validated = AssistantSettings(**(current.values.model_dump() | {key: value}))
        except ValidationError as exc:
            msg = "; ".join(e["msg"] for e in exc.errors())
            raise UserInputError(f"invalid value for {key}: {msg}") from exc
        new = getattr(validated, key)
        await self.ensure_assistant(assistant_id)
        await self._overrides.put(assistant_id, key, new, changed_by=changed_by)
        return new

    async def reset(self, key: str, *, changed_by: str, assistant_id: str = DEFAULT_ASSISTANT) -> None:
        """Remove a database override, so the configuration default applies again."""
        if key not in KEYS:
            raise UserInputError(f"unknown setting {key!r}")
        await self._overrides.remove(assistant_id, key, changed_by=changed_by)
