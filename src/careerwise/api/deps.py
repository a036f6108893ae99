"""FastAPI dependencies: the process's services, injected, never imported as globals, and narrow ones on
top of them: the repositories a route reads and writes through (store/), each on the process's
database. Every repository dependency depends on :func:`get_services`, so a route that takes one is
documented with the 503 of a locked database (api/openapi_errors.py)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from careerwise.services import Services
from careerwise.store.assistant_admin import AssistantAdminStore
from careerwise.store.conversations import ConversationStore
from careerwise.store.feedback import FeedbackStore
from careerwise.store.knowledge import KnowledgeStore
from careerwise.store.stats import StatsStore
from careerwise.store.traces import TraceStore
from careerwise.tracing.metrics import Metrics


async def get_services(request: Request) -> Services:
    """``async`` on purpose (do not make it a plain ``def``): FastAPI runs a plain function dependency in
    its worker-thread pool, and this one is solved for almost every request. The hop cost the event loop
    about 0.1-0.2 ms of CPU a request and, under a burst, a wait for a free worker thread
    (docs/benchmarks.md, "The fixed work of a turn, part 2")."""
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]


async def get_traces(services: ServicesDep) -> TraceStore:
    """``async`` for the reason given at :func:`get_services`."""
    return TraceStore(services.db)


TracesDep = Annotated[TraceStore, Depends(get_traces)]


async def get_conversations(services: ServicesDep) -> ConversationStore:
    """``async`` for the reason given at :func:`get_services`."""
    return ConversationStore(services.db)


ConversationsDep = Annotated[ConversationStore, Depends(get_conversations)]


async def get_feedback(services: ServicesDep) -> FeedbackStore:
    """``async`` for the reason given at :func:`get_services`."""
    return FeedbackStore(services.db)


FeedbackDep = Annotated[FeedbackStore, Depends(get_feedback)]


async def get_metrics(services: ServicesDep) -> Metrics:
    """The process's metrics registry (the engine's telemetry)."""
    return services.engine.telemetry.metrics


MetricsDep = Annotated[Metrics, Depends(get_metrics)]


async def get_knowledge(services: ServicesDep) -> KnowledgeStore:
    """``async`` for the reason given at :func:`get_services`."""
    return KnowledgeStore(services.db)


KnowledgeDep = Annotated[KnowledgeStore, Depends(get_knowledge)]


async def get_stats(services: ServicesDep) -> StatsStore:
    """``async`` for the reason given at :func:`get_services`."""
    return StatsStore(services.db)


StatsDep = Annotated[StatsStore, Depends(get_stats)]


async def get_assistant_admin(services: ServicesDep) -> AssistantAdminStore:
    """``async`` for the reason given at :func:`get_services`."""
    return AssistantAdminStore(services.db)


AssistantAdminDep = Annotated[AssistantAdminStore, Depends(get_assistant_admin)]
