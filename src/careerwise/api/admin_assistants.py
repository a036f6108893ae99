"""Admin: the assistants themselves (name, persona, knowledge domains, enabled), list / create / update.

Every change goes through :class:`careerwise.assistants.AssistantStore`, which validates it and writes one
audit row per changed field (``profile.*`` keys in the assistant's audit log, next to its settings). A turn
reads the profile fresh, so an edit applies to the next turn in every process. Disabling is an update
(``{"enabled": false}``), not a delete: the assistant's traces and audit history stay readable.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from careerwise.api.auth import AdminUser, get_admin_user
from careerwise.api.deps import AssistantAdminDep, AssistantSettingsDep
from careerwise.api.error_models import errors
from careerwise.assistants import ProfileIn, ProfileUpdate
from careerwise.knowledge.documents import DOMAINS

# no prefix: included by admin_settings' router (which carries /api/admin); admin only, either way
router = APIRouter(dependencies=[Depends(get_admin_user)])


@router.get("/assistants")
async def assistants(settings: AssistantSettingsDep, store: AssistantAdminDep) -> dict[str, Any]:
    """Every assistant with its profile, its number of setting overrides and of turns."""
    profiles = await settings.assistants.list()
    overrides, turns = await store.counts()
    return {
        "assistants": [
            p.to_json()
            | {
                "overrides": int(overrides.get(p.id, 0)),
                "turns": int(turns.get(p.id, 0)),
                "serving": p.enabled,
            }
            for p in profiles
        ],
        "knowledge_domains": ["all", *DOMAINS],
    }


@router.post("/assistants", status_code=201, responses=errors(409))
async def create_assistant(
    body: ProfileIn, settings: AssistantSettingsDep, admin: AdminUser
) -> dict[str, Any]:
    """A new assistant (422: bad id or field; 409: the id is taken), audited with the admin's email."""
    profile = await settings.assistants.create(body, changed_by=admin.email)
    return {"assistant": profile.to_json()}


@router.get("/assistants/{assistant_id}", responses=errors(404))
async def get_assistant(assistant_id: str, settings: AssistantSettingsDep) -> dict[str, Any]:
    return {"assistant": (await settings.assistants.get(assistant_id)).to_json()}


@router.patch("/assistants/{assistant_id}", responses=errors(404, 409))
async def update_assistant(
    assistant_id: str, body: ProfileUpdate, settings: AssistantSettingsDep, admin: AdminUser
) -> dict[str, Any]:
    """Change the fields given; ``{"enabled": false}`` disables (409 for the default assistant)."""
    profile = await settings.assistants.update(assistant_id, body, changed_by=admin.email)
    return {"assistant": profile.to_json()}
