"""The FastAPI application factory."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from careerwise import __version__
from careerwise.api import (
    admin,
    admin_bookings,
    auth,
    bookings,
    chat,
    conversations,
    errors,
    feedback,
    health,
    knowledge,
    line,
    metrics,
    openai_compat,
    openapi_errors,
    resumes,
)
from careerwise.api.body_limit import BodyLimit
from careerwise.api.security_headers import SecurityHeaders
from careerwise.config import Settings, get_settings
from careerwise.memory import (
    IdleTrimmer,
    RequestsInFlight,
    freeze_heap,
    glibc,
    limit_arenas,
    space_full_collections,
)
from careerwise.services import Services, build_services
from careerwise.tracing import background
from careerwise.tracing.masking import install_log_masking

log = logging.getLogger(__name__)
WEB = Path(__file__).parent / "web"


def create_app(settings: Settings | None = None, *, services: Services | None = None) -> FastAPI:
    settings = settings or get_settings()
    libc = glibc()
    limit_arenas(settings.malloc_arena_max, libc=libc)  # before the lifespan's threads start
    trimmer = IdleTrimmer(
        idle_seconds=settings.memory_trim_idle_seconds, trim=libc.malloc_trim if libc else None
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        svc: Services = (
            services if services is not None else await asyncio.to_thread(build_services, settings)
        )
        app.state.services = svc
        tuning = _ProcessTuning()
        warm_task: asyncio.Task[None] | None = None
        # from here on the services run threads and hold connections: a start-up that fails closes them
        # (and undoes the tuning) before its error reaches the server, which reports it
        try:
            trimmer.export_to(svc.engine.telemetry.metrics.registry)
            install_log_masking()  # the root logger's handlers, as uvicorn's workers configured them
            # before anything is served: this process registered, the replies a dead one left pending
            # closed (store/recovery.py); LINE's received events follow when its channel starts
            await svc.recover()
            await svc.prepare_knowledge()
            await asyncio.to_thread(svc.parse_workers.warm)  # uploads are parsed in its children
            tuning.apply(settings)
            if trimmer.enabled:
                trimmer.trim_now()  # what loading the index and embedding the routing examples freed
            warm = getattr(svc.provider, "warm", None)
            if warm is not None:
                warm_task = asyncio.create_task(warm())
                warm_task.add_done_callback(_log_warm_failure)
        except BaseException:
            await _shut_down(svc, trimmer=trimmer, tuning=tuning, warm_task=warm_task, reraise=False)
            raise
        try:
            # LINE's received events are answered again only now, after this process's recovery above
            async with line.channel_lifespan(app, settings=svc.settings, engine=svc.engine, db=svc.db):
                yield
        finally:
            await _shut_down(svc, trimmer=trimmer, tuning=tuning, warm_task=warm_task, reraise=True)

    # the API's own pages only where an operator asked for them: by default everywhere but production
    docs = settings.api_docs if settings.api_docs is not None else settings.environment != "production"
    app = FastAPI(
        title="CareerWise",
        version=__version__,
        lifespan=lifespan,
        docs_url="/docs" if docs else None,
        redoc_url="/redoc" if docs else None,
        openapi_url="/openapi.json" if docs else None,
    )
    errors.install(app)
    app.add_middleware(BodyLimit, default=settings.max_body_bytes, routes=_body_limits(settings))
    app.add_middleware(auth.CrossSiteGuard, trusted_origins=settings.trusted_origins)
    metrics.install(app)  # GET /metrics; counts every request, the guard's refusals included
    app.add_middleware(RequestsInFlight, trimmer=trimmer)  # idle after a burst: memory back to the OS
    app.add_middleware(SecurityHeaders)  # outermost: the guard's refusals carry the headers too
    app.include_router(health.router)
    app.include_router(auth.router)
    app.include_router(chat.router)
    app.include_router(feedback.router)
    app.include_router(conversations.router)
    app.include_router(knowledge.router)
    app.include_router(bookings.router)
    app.include_router(admin_bookings.router)
    app.include_router(resumes.router)
    app.include_router(line.router)
    app.include_router(openai_compat.router)
    app.include_router(admin.router)
    openapi_errors.install(app)  # every operation's error statuses, with the error envelope
    app.mount("/static", StaticFiles(directory=WEB / "static"), name="static")

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(WEB / "static" / "index.html", headers={"Cache-Control": "no-cache"})

    return app


def _body_limits(settings: Settings) -> dict[str, int | None]:
    """The routes that take uploads, with the body each may send (the rest: ``max_body_bytes``). The
    resume upload caps its own stream (``api/resumes.py``: a refusal that names the file and the limit)."""
    return {
        "/api/resumes": None,
        "/api/admin/knowledge/documents": settings.knowledge_upload_max_body_bytes,
    }


@dataclass
class _ProcessTuning:
    """What start-up changed in the interpreter (the garbage collector), undone at shutdown: an app
    built again in this process (tests) starts from the defaults."""

    frozen: bool = False
    thresholds: tuple[int, int, int] | None = None

    def apply(self, settings: Settings) -> None:
        if settings.gc_freeze:
            self.frozen = True
            log.info("memory: %d start-up objects frozen out of the garbage collector's walks", freeze_heap())
        if settings.gc_gen2_threshold:
            self.thresholds = space_full_collections(settings.gc_gen2_threshold)

    def restore(self) -> None:
        if self.frozen:
            gc.unfreeze()
            self.frozen = False
        if self.thresholds is not None:
            gc.set_threshold(*self.thresholds)
            self.thresholds = None


async def _shut_down(
    svc: Services,
    *,
    trimmer: IdleTrimmer,
    tuning: _ProcessTuning,
    warm_task: asyncio.Task[None] | None,
    reraise: bool,
) -> None:
    """Stop what the lifespan started. Every step runs whatever the one before did: closing the services
    (database threads, providers, telemetry) may fail, and the tuning is still undone. That failure is
    logged here with what it was; ``reraise`` (a normal shutdown) then raises it to the server, while
    after a failed start-up the start-up's own error is the one that propagates."""
    if warm_task is not None and not warm_task.done():
        warm_task.cancel()
    trimmer.cancel()
    try:
        await svc.aclose()
    except Exception:
        log.exception("shutdown: closing the services failed (database threads, providers, telemetry)")
        if reraise:
            raise
    finally:
        tuning.restore()


def _log_warm_failure(task: asyncio.Task[None]) -> None:
    """Nobody awaits the warm-up (the first request loads the model if it has not): logged and counted."""
    background.task_failed(
        task, task=background.LOCAL_MODEL_WARM, logger=log, what="the local model failed to load"
    )
