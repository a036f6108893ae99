"""Liveness and readiness."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from sqlalchemy import text

from careerwise.api.deps import ServicesDep

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", response_model=None)
async def readyz(services: ServicesDep) -> JSONResponse:
    checks: dict[str, dict[str, Any]] = {}
    try:
        async with services.db.session() as s:
            await s.execute(text("SELECT 1"))
        checks["database"] = {"state": "ok"}
    except Exception as exc:  # noqa: BLE001 - reported in the response (503)
        checks["database"] = {"state": "failed", "error": f"{type(exc).__name__}: {exc}"}
    kb = services.kb.status()
    checks["knowledge"] = {
        "state": "ok" if kb.state == "ready" else kb.state,
        "chunks": kb.chunks,
        "version": kb.version,
        **({"error": kb.error} if kb.error else {}),
    }
    checks["llm"] = {"state": "ok", "provider": services.provider.name, "model": services.provider.model}
    ok = all(c["state"] == "ok" for c in checks.values())
    return JSONResponse(
        {"status": "ok" if ok else "failed", "checks": checks}, status_code=200 if ok else 503
    )
