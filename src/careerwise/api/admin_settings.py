"""Admin: assistants and their settings, with the audit log; API keys for the OpenAI-compatible endpoint.

Settings go through :class:`careerwise.assistant_settings.SettingsStore`, the one place that validates and
audits them (the CLI uses it too); the engine reads a fresh snapshot every turn, so a change made here
applies to the next turn, in every process, without a restart.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Query
from pydantic import BaseModel, Field

from careerwise.api import admin_assistants
from careerwise.api._strict import REQUEST_MODEL
from careerwise.api.admin_common import admin_router
from careerwise.api.auth import AdminUser
from careerwise.api.deps import AssistantAdminDep, AssistantSettingsDep, DatabaseDep, ProvidersDep
from careerwise.api.error_models import errors
from careerwise.assistant_settings import KEYS, AssistantSettings, SettingsStore
from careerwise.assistants import AssistantProfile
from careerwise.channels.apikeys import create_key, list_keys, revoke_key
from careerwise.provider_registry import ProviderRegistry
from careerwise.store import ApiKey, as_utc

router = admin_router("admin: assistants")


router.include_router(admin_assistants.router)  # list / create / update the assistants themselves


async def known_assistant(store: SettingsStore, assistant_id: str) -> AssistantProfile:
    """The assistant's profile; Summer's is created on first use (she ships), any other must exist (404)."""
    return await store.assistants.get(assistant_id)


def _field_info(key: str) -> dict[str, Any]:
    """What the page needs to build an input and check it before sending: type, bounds, description."""
    field = AssistantSettings.model_fields[key]
    info: dict[str, Any] = {
        "type": {bool: "boolean", int: "integer", float: "number"}.get(field.annotation, "string"),  # type: ignore[arg-type]
        "default": field.default,
        "description": field.description or "",
    }
    for meta in field.metadata:
        for attr, name in (("ge", "minimum"), ("le", "maximum"), ("gt", "exclusive_minimum")):
            value = getattr(meta, attr, None)
            if value is not None:
                info[name] = value
    return info


async def _settings_view(
    store: SettingsStore, providers: ProviderRegistry, assistant_id: str
) -> dict[str, Any]:
    eff = await store.effective(assistant_id)
    values = eff.values.model_dump()
    rows = [{"key": k, "value": values[k], "source": eff.sources[k], **_field_info(k)} for k in KEYS]
    for row in rows:
        if row["key"] == "llm_provider":  # the providers this configuration has, by name (no secrets)
            row["choices"] = list(providers.names())
    return {"assistant_id": assistant_id, "settings": rows}


@router.get("/assistants/{assistant_id}/settings", responses=errors(404))
async def get_settings(
    assistant_id: str, settings: AssistantSettingsDep, providers: ProvidersDep
) -> dict[str, Any]:
    """Every setting's effective value and its source (default < environment < database)."""
    await known_assistant(settings, assistant_id)
    return await _settings_view(settings, providers, assistant_id)


class SettingIn(BaseModel):
    model_config = REQUEST_MODEL
    value: bool | int | float | str = Field(description="The new value (JSON type of the setting).")


@router.put("/assistants/{assistant_id}/settings/{key}", responses=errors(404, 409))
async def put_setting(
    assistant_id: str,
    key: str,
    body: SettingIn,
    settings: AssistantSettingsDep,
    providers: ProvidersDep,
    admin: AdminUser,
) -> dict[str, Any]:
    """Store one override (validated; 400 says why a value is refused), audited with the admin's email."""
    await known_assistant(settings, assistant_id)
    await settings.set(key, body.value, changed_by=admin.email, assistant_id=assistant_id)
    return await _settings_view(settings, providers, assistant_id)


@router.delete("/assistants/{assistant_id}/settings/{key}", responses=errors(400, 404, 409))
async def reset_setting(
    assistant_id: str, key: str, settings: AssistantSettingsDep, providers: ProvidersDep, admin: AdminUser
) -> dict[str, Any]:
    """Remove the database override: the configuration default applies again (audited)."""
    await known_assistant(settings, assistant_id)
    await settings.reset(key, changed_by=admin.email, assistant_id=assistant_id)
    return await _settings_view(settings, providers, assistant_id)


@router.get("/assistants/{assistant_id}/audit", responses=errors(404))
async def audit_log(
    assistant_id: str,
    settings: AssistantSettingsDep,
    store: AssistantAdminDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> dict[str, Any]:
    """Who changed what, when, from what to what; newest first. ``new_value`` null = reset."""
    await known_assistant(settings, assistant_id)
    total, rows = await store.audit(assistant_id, limit=limit, offset=offset)
    return {
        "total": total,
        "items": [
            {
                "id": r.id,
                "key": r.key,
                "old_value": r.old_value,
                "new_value": r.new_value,
                "changed_by": r.changed_by,
                "changed_at": as_utc(r.changed_at).isoformat(),
            }
            for r in rows
        ],
    }


# --- API keys -----------------------------------------------------------------------------------


def _key_view(key: ApiKey) -> dict[str, Any]:
    return {
        "id": key.id,
        "name": key.name,
        "prefix": key.prefix,
        "created_at": as_utc(key.created_at).isoformat(),
        "revoked_at": as_utc(key.revoked_at).isoformat() if key.revoked_at else None,
        "last_used_at": as_utc(key.last_used_at).isoformat() if key.last_used_at else None,
    }


@router.get("/apikeys")
async def apikeys(db: DatabaseDep) -> dict[str, Any]:
    return {"keys": [_key_view(k) for k in await list_keys(db)]}


class KeyIn(BaseModel):
    model_config = REQUEST_MODEL
    name: str = Field(max_length=120, description="Who or what uses the key.")


@router.post("/apikeys", status_code=201)
async def new_apikey(body: KeyIn, db: DatabaseDep) -> dict[str, Any]:
    """The token is in this response and nowhere else: only its SHA-256 is stored."""
    key, token = await create_key(db, body.name)
    return {"key": _key_view(key), "token": token}


@router.delete("/apikeys/{key_id}", responses=errors(400, 404))
async def revoke_apikey(key_id: str, db: DatabaseDep) -> dict[str, Any]:
    return {"key": _key_view(await revoke_key(db, key_id))}
