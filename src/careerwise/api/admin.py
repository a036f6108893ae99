"""The admin dashboard: the page at ``/admin`` and the JSON API under ``/api/admin`` (admin role only).

The API is split by feature: turns and timelines (admin_turns), chart figures (admin_stats), the
knowledge base (admin_knowledge), assistants, settings and API keys (admin_settings). This module adds
the page and the health summary the page shows on every view, then gathers the routers.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from fastapi import APIRouter
from fastapi.responses import FileResponse

from careerwise.api import admin_knowledge, admin_settings, admin_stats, admin_turns
from careerwise.api.admin_common import admin_router
from careerwise.api.admin_knowledge import knowledge_status
from careerwise.api.deps import EngineDep, KnowledgeBaseDep, ProviderDep, StatsDep
from careerwise.flows.compact import design_of
from careerwise.llm.profile import profile_of

log = logging.getLogger(__name__)
STATIC = Path(__file__).resolve().parent.parent / "web" / "static"
RETRIEVAL_FAILURE_KINDS = ("search_failed", "unavailable", "readiness")
_KNOWLEDGE_REASONS = ("knowledge_unavailable", "deep_knowledge_unavailable", "deep_knowledge_search_failed")

page = APIRouter(include_in_schema=False)
status_router = admin_router("admin: status")


@page.get("/admin")
async def admin_page() -> FileResponse:
    """Static: the page holds no data; it asks /api/auth/me and the admin API, which check the role."""
    return FileResponse(STATIC / "admin.html", headers={"Cache-Control": "no-cache"})


@status_router.get("/status")
async def status(
    engine: EngineDep, kb_: KnowledgeBaseDep, provider: ProviderDep, stats: StatsDep
) -> dict[str, Any]:
    """What the dashboard's health strip shows: the knowledge index (a retriever that failed to load is
    never silent), the database, the LLM provider, and the last 24 hours of knowledge degradations and
    this process's retrieval-failure counters (the same counters /metrics exports)."""
    since = datetime.now(UTC) - timedelta(hours=24)
    database: dict[str, Any]
    try:
        turns, knowledge_degraded = await stats.since(since, degraded_reasons=_KNOWLEDGE_REASONS)
        database = {"state": "ok"}
    except Exception as exc:  # noqa: BLE001 - shown on the page (and on /readyz), logged here
        log.warning("admin status: the database check failed: %s", exc)
        database = {"state": "failed", "error": f"{type(exc).__name__}: {exc}"}
        turns = knowledge_degraded = 0
    registry = engine.telemetry.metrics.registry
    failures = {
        kind: int(registry.get_sample_value("careerwise_retrieval_failures_total", {"kind": kind}) or 0)
        for kind in RETRIEVAL_FAILURE_KINDS
    }
    kb = knowledge_status(kb_)
    return {
        "ok": kb["state"] == "ready" and database["state"] == "ok",
        "knowledge": kb,
        "database": database,
        "llm": {
            "provider": provider.name,
            "model": provider.model,
            # what the flows size their work to, and the deep design it picks (llm/profile.py, 0014)
            "profile": profile_of(provider).as_dict(),
            "deep_design": design_of(engine.options, provider)[0],
        },
        "last_24h": {"turns": turns, "knowledge_degraded_turns": knowledge_degraded},
        "retrieval_failures": failures,
    }


router = APIRouter()
router.include_router(page)
router.include_router(status_router)
router.include_router(admin_turns.router)
router.include_router(admin_stats.router)
router.include_router(admin_knowledge.router)
router.include_router(admin_settings.router)
