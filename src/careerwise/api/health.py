"""Liveness and readiness.

``/readyz`` runs real probes, each under ``CAREERWISE_READYZ_TIMEOUT``: the database answers ``SELECT 1``,
the embedding model embeds a short string (past the query cache), and the knowledge index answers a real
search. Any failed check makes the answer 503; each is logged and counted in ``/metrics``
(``careerwise_readiness_failures_total``, ``careerwise_ready``). The LLM provider is probed without a
completion (which would spend tokens on every poll): ``GET {base_url}/models``, its result cached
``CAREERWISE_READYZ_LLM_CACHE_SECONDS``; the answer names the process (``pid``) that gave it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from careerwise.api.deps import (
    DatabaseDep,
    EngineDep,
    KnowledgeBaseDep,
    ProviderDep,
    ProvidersDep,
    SettingsDep,
)
from careerwise.engine import Engine
from careerwise.flows.compact import design_of
from careerwise.knowledge.service import KnowledgeBase
from careerwise.llm.profile import profile_of
from careerwise.llm.resilience import ResilientProvider
from careerwise.llm.types import LLMProvider
from careerwise.provider_registry import ProviderRegistry
from careerwise.store.db import Database
from careerwise.store.health import ping

router = APIRouter(tags=["health"])
log = logging.getLogger(__name__)
PROBE_TEXT = "readyz: 薪資談判 salary negotiation"


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


async def _probe(name: str, seconds: float, run: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        async with asyncio.timeout(seconds):
            details = await run()
        return {"state": "ok", **details, "ms": round(1000 * (time.perf_counter() - started), 2)}
    except TimeoutError:
        log.warning("readyz: %s did not answer within %g s", name, seconds)
        return {"state": "failed", "error": f"no answer within {seconds:g} s"}
    except Exception as exc:  # noqa: BLE001 - a failed check is the answer: logged, counted, shown (503)
        log.warning("readyz: %s failed: %s: %s", name, type(exc).__name__, exc)
        return {"state": "failed", "error": f"{type(exc).__name__}: {exc}"}


async def _database(db: Database) -> dict[str, Any]:
    return {"backend": await ping(db)}


async def _embedding(kb: KnowledgeBase) -> dict[str, Any]:
    embedder = kb.embedder
    vectors = await asyncio.to_thread(embedder.inner.embed_queries, [PROBE_TEXT])  # past the cache
    if vectors.shape != (1, embedder.dim):
        raise ValueError(f"expected one vector of {embedder.dim} dimensions, got shape {vectors.shape}")
    return {"model": embedder.name, "dim": embedder.dim}


async def _search(kb: KnowledgeBase) -> dict[str, Any]:
    # past the retrieval cache: a cached result would report a broken index as ready
    result = await kb.search(PROBE_TEXT, top_k=1, candidates=4, cached=False)
    return {"backend": kb.backend, "hits": len(result.hits)}


async def _knowledge(base: KnowledgeBase, seconds: float) -> dict[str, Any]:
    kb = base.status()
    check: dict[str, Any] = {"state": "ok" if kb.state == "ready" else kb.state, "chunks": kb.chunks}
    check["version"] = kb.version
    if kb.error:
        check["error"] = kb.error
        log.warning("readyz: the knowledge index failed to load: %s", kb.error)
    if kb.state != "ready":
        return check
    probe = await _probe("the knowledge search", seconds, lambda: _search(base))
    state, probe_ms = probe.pop("state"), probe.pop("ms", None)
    check["search"] = {**probe, "state": state, **({"ms": probe_ms} if probe_ms is not None else {})}
    if state != "ok":
        check["state"] = "failed"
        check["error"] = probe.get("error")
    return check


async def _llm(
    registry: ProviderRegistry, engine: Engine, provider: LLMProvider, seconds: float
) -> dict[str, Any]:
    """A cheap, real probe of the provider (``GET /models``, cached a few seconds; the embedded model:
    loaded or not) plus its circuit breaker. Failed only when the provider is down (its probe fails or
    its breaker is open) and no fallback is up to answer in its place."""
    design, why = design_of(engine.options, provider)
    check: dict[str, Any] = {
        "state": "ok",
        "provider": registry.default_name,
        "model": provider.model,
        "probe": await registry.probe(registry.default_name, seconds=seconds),
        # what the flows size their work to (llm/profile.py) and the deep design it picks (0014, 0016)
        "profile": profile_of(provider).as_dict(),
        "deep_design": {"design": design, "why": why},
    }
    if check["probe"]["state"] == "loading":
        check["state"], check["error"] = "loading", check["probe"]["error"]
        return check  # not ready yet, and nothing is wrong: no warning in the log
    resilient = _find(provider, ResilientProvider)
    down = check["probe"]["state"] != "ok"
    if resilient is not None:
        check["breaker"] = resilient.breaker.state
        down = down or resilient.breaker.state == "open"
    if not down:
        return check
    if resilient is not None and resilient.fallback is not None:
        fallback_probe = await registry.probe("fallback", seconds=seconds)
        check["fallback"] = resilient.fallback.model
        check["fallback_probe"] = fallback_probe
        fallback_open = resilient.fallback_breaker is not None and resilient.fallback_breaker.state == "open"
        if fallback_probe["state"] == "ok" and not fallback_open:
            check["answering"] = "fallback"
            return check
    check["state"] = "failed"
    if resilient is not None and resilient.breaker.state == "open":
        check["error"] = (
            f"the provider failed {resilient.breaker.threshold} times in a row; calls resume in "
            f"{resilient.breaker.retry_in():.0f} s"
        )
    else:
        check["error"] = f"the provider does not answer: {check['probe'].get('error', 'unknown')}"
    log.warning("readyz: the LLM provider is down and no fallback answers: %s", check["error"])
    return check


def _find(provider: object, kind: type[ResilientProvider]) -> ResilientProvider | None:
    """The wrapper of ``kind`` inside the provider's wrappers (canary guard, observation), if any."""
    seen = 0
    while provider is not None and seen < 8:
        if isinstance(provider, kind):
            return provider
        provider = getattr(provider, "inner", None)
        seen += 1
    return None


@router.get(
    "/readyz",
    response_model=None,
    responses={
        503: {
            "description": "Not ready: the same body, status 'failed', and the checks that failed.",
            "content": {"application/json": {"schema": {"type": "object"}}},
        }
    },
)
async def readyz(
    settings: SettingsDep,
    db: DatabaseDep,
    kb: KnowledgeBaseDep,
    engine: EngineDep,
    provider: ProviderDep,
    providers: ProvidersDep,
) -> JSONResponse:
    timeout = settings.readyz_timeout
    checks: dict[str, dict[str, Any]] = {
        "database": await _probe("the database", timeout, lambda: _database(db)),
        "knowledge": await _knowledge(kb, timeout),
        "embedding": await _probe("the embedding model", timeout, lambda: _embedding(kb)),
        "llm": await _llm(providers, engine, provider, timeout),
    }
    metrics = engine.telemetry.metrics
    for name, check in checks.items():
        metrics.readiness(name, ok=check["state"] == "ok")
    ok = all(c["state"] == "ok" for c in checks.values())
    # per process: with several workers, the pid says which one answered (each has its own index, breaker)
    return JSONResponse(
        {"status": "ok" if ok else "failed", "pid": os.getpid(), "checks": checks},
        status_code=200 if ok else 503,
    )
