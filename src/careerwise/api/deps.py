"""FastAPI dependencies: the process's services, injected, never imported as globals. Routes take the
narrow ones only: the repositories a route reads and writes through (store/), each on the process's
database, and the single service objects it calls (the engine, the accounts, the bookings...). Each
narrow dependency depends on :func:`get_services`, so a route that takes one is documented with the
503 of a locked database (api/openapi_errors.py); no route takes the whole services object
(tests/unit/test_route_dependencies.py)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from careerwise.assistant_settings import SettingsStore
from careerwise.auth import AccountService
from careerwise.booking import BookingService
from careerwise.config import Settings
from careerwise.engine import Engine
from careerwise.knowledge.service import KnowledgeBase
from careerwise.llm.types import LLMProvider
from careerwise.provider_registry import ProviderRegistry
from careerwise.resume import ResumeService
from careerwise.services import Limiters, Services
from careerwise.store.assistant_admin import AssistantAdminStore
from careerwise.store.conversations import ConversationStore
from careerwise.store.db import Database
from careerwise.store.feedback import FeedbackStore
from careerwise.store.knowledge import KnowledgeStore
from careerwise.store.stats import StatsStore
from careerwise.store.traces import TraceStore
from careerwise.tools import ToolRegistry
from careerwise.tracing.metrics import Metrics
from careerwise.untrusted import ParseWorkers


async def get_services(request: Request) -> Services:
    """``async`` on purpose (do not make it a plain ``def``): FastAPI runs a plain function dependency in
    its worker-thread pool, and this one is solved for almost every request. The hop costs the event loop
    CPU on every request and, under a burst, a wait for a free worker thread."""
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


async def get_settings(services: ServicesDep) -> Settings:
    """The process's configuration. ``async`` for the reason given at :func:`get_services`."""
    return services.settings


SettingsDep = Annotated[Settings, Depends(get_settings)]


async def get_database(services: ServicesDep) -> Database:
    """The process's database handle, for the store functions that take it (ingestion, the resume store). ``async`` for the reason given at :func:`get_services`."""
    return services.db


DatabaseDep = Annotated[Database, Depends(get_database)]


async def get_engine(services: ServicesDep) -> Engine:
    """The turn's engine. ``async`` for the reason given at :func:`get_services`."""
    return services.engine


EngineDep = Annotated[Engine, Depends(get_engine)]


async def get_accounts(services: ServicesDep) -> AccountService:
    """Sign-up, login and sessions. ``async`` for the reason given at :func:`get_services`."""
    return services.accounts


AccountsDep = Annotated[AccountService, Depends(get_accounts)]


async def get_limiters(services: ServicesDep) -> Limiters:
    """The per-minute request limits. ``async`` for the reason given at :func:`get_services`."""
    return services.limiters


LimitersDep = Annotated[Limiters, Depends(get_limiters)]


async def get_assistant_settings(services: ServicesDep) -> SettingsStore:
    """The assistants and their settings. ``async`` for the reason given at :func:`get_services`."""
    return services.assistant_settings


AssistantSettingsDep = Annotated[SettingsStore, Depends(get_assistant_settings)]


async def get_bookings(services: ServicesDep) -> BookingService:
    """Bookings and the adviser's availability. ``async`` for the reason given at :func:`get_services`."""
    return services.bookings


BookingsDep = Annotated[BookingService, Depends(get_bookings)]


async def get_resumes(services: ServicesDep) -> ResumeService:
    """Resume reviews. ``async`` for the reason given at :func:`get_services`."""
    return services.resumes


ResumesDep = Annotated[ResumeService, Depends(get_resumes)]


async def get_knowledge_base(services: ServicesDep) -> KnowledgeBase:
    """The knowledge base's index and search. ``async`` for the reason given at :func:`get_services`."""
    return services.kb


KnowledgeBaseDep = Annotated[KnowledgeBase, Depends(get_knowledge_base)]


async def get_providers(services: ServicesDep) -> ProviderRegistry:
    """The configured LLM providers (the default among them). ``async`` for the reason given at :func:`get_services`."""
    return services.providers


ProvidersDep = Annotated[ProviderRegistry, Depends(get_providers)]


async def get_tools(services: ServicesDep) -> ToolRegistry:
    """The tools a turn may call. ``async`` for the reason given at :func:`get_services`."""
    return services.tools


ToolsDep = Annotated[ToolRegistry, Depends(get_tools)]


async def get_parse_workers(services: ServicesDep) -> ParseWorkers:
    """The worker processes that parse untrusted files. ``async`` for the reason given at :func:`get_services`."""
    return services.parse_workers


ParseWorkersDep = Annotated[ParseWorkers, Depends(get_parse_workers)]


async def get_provider(services: ServicesDep) -> LLMProvider:
    """The configured default LLM provider (what /readyz probes and the status page names). ``async``
    for the reason given at :func:`get_services`."""
    return services.provider


ProviderDep = Annotated[LLMProvider, Depends(get_provider)]
