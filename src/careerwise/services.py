"""Wiring: build every long-lived object from the settings, once per process."""

from __future__ import annotations

import logging
import os
import secrets
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from careerwise.assistant_settings import SettingsStore
from careerwise.auth import AccountService
from careerwise.booking import BookingService
from careerwise.booking import token_key as booking_token_key
from careerwise.budget import TokenBudget
from careerwise.config import Settings
from careerwise.engine import Engine, EngineLimits
from careerwise.flows import (
    FlowRegistry,
    booking_placeholder_flow,
    greeting_flow,
    resume_placeholder_flow,
    tool_use_flow,
)
from careerwise.flows.base import FlowOptions
from careerwise.flows.booking import register_booking_flow
from careerwise.flows.career_chain import career_chain_flow
from careerwise.flows.parallel import parallel_flow
from careerwise.flows.resume import resume_flow
from careerwise.knowledge.embeddings import Embedder
from careerwise.knowledge.ingest import IngestReport, ingest_paths
from careerwise.knowledge.service import BUNDLED_CORPUS, KnowledgeBase
from careerwise.llm.canary import CanaryGuard
from careerwise.llm.types import LLMProvider
from careerwise.ratelimit import RateLimiter
from careerwise.resume import ExtractLimits, ResumeService
from careerwise.routing.cascade import CascadeRouter
from careerwise.routing.router import Router
from careerwise.store import Database
from careerwise.tools import SearchKnowledgeTool, ToolRegistry
from careerwise.tracing.llm_calls import ObservedProvider
from careerwise.tracing.telemetry import Telemetry

log = logging.getLogger(__name__)


def make_provider(settings: Settings) -> LLMProvider:
    if settings.llm_base_url:
        from careerwise.llm.openai_provider import OpenAIProvider
        from careerwise.llm.resilience import CircuitBreaker, ResilientProvider

        primary = OpenAIProvider(
            base_url=settings.llm_base_url,
            api_key=settings.llm_api_key.get_secret_value(),
            model=settings.llm_model,
            connect_timeout=settings.llm_connect_timeout,
            read_timeout=settings.llm_read_timeout,
        )
        fallback = (
            OpenAIProvider(
                base_url=settings.llm_fallback_base_url,
                api_key=settings.llm_fallback_api_key.get_secret_value(),
                model=settings.llm_fallback_model or settings.llm_model,
                connect_timeout=settings.llm_connect_timeout,
                read_timeout=settings.llm_read_timeout,
            )
            if settings.llm_fallback_base_url
            else None
        )
        breaker = CircuitBreaker(
            "primary",
            threshold=settings.llm_breaker_threshold,
            reset_after=settings.llm_breaker_reset_seconds,
        )
        return ResilientProvider(primary, breaker=breaker, fallback=fallback)
    from careerwise.llm.local import LocalProvider, ensure_model_file

    path = settings.local_model_path or ensure_model_file(settings.data_dir / "models")
    return LocalProvider(
        model_path=path,
        n_ctx=settings.local_n_ctx,
        n_threads=settings.local_n_threads,
        convert_zh=settings.zh_variant_conversion,
    )


def default_flows(
    bookings: BookingService | None = None, resumes: ResumeService | None = None
) -> FlowRegistry:
    flows = FlowRegistry()
    flows.register("greeting", None, "greeting", greeting_flow)
    flows.register("career", None, "career-simple", tool_use_flow)
    flows.register("career", "medium", "career-chain", career_chain_flow)
    flows.register("career", "complex", "career-parallel", parallel_flow)
    if resumes is not None:
        flows.register("resume", None, "resume", resume_flow(resumes))
    else:
        flows.register("resume", None, "resume-placeholder", resume_placeholder_flow)
    if bookings is not None:  # the booking flow keeps its dialogue in the database, through the service
        register_booking_flow(flows, bookings)
    else:
        flows.register("booking", None, "booking-placeholder", booking_placeholder_flow)
    return flows


@dataclass
class Limiters:
    """Per-process request limits (a shared store for many processes is the scale issue's job)."""

    anonymous_chat: RateLimiter
    user_chat: RateLimiter
    login: RateLimiter

    @classmethod
    def from_settings(cls, s: Settings) -> Limiters:
        return cls(
            anonymous_chat=RateLimiter(s.anonymous_chat_per_minute),
            user_chat=RateLimiter(s.user_chat_per_minute),
            login=RateLimiter(s.login_per_minute),
        )


def session_secret(settings: Settings) -> str:
    """The configured secret; outside production, one generated once and kept in the data folder."""
    if settings.session_secret is not None:
        return settings.session_secret.get_secret_value()
    path: Path = settings.data_dir / "session_secret"
    if path.exists():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    value = secrets.token_urlsafe(48)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(value)
    return value


@dataclass
class Services:
    settings: Settings
    db: Database
    kb: KnowledgeBase
    provider: LLMProvider
    tools: ToolRegistry
    engine: Engine
    assistant_settings: SettingsStore
    accounts: AccountService
    bookings: BookingService
    resumes: ResumeService
    limiters: Limiters

    async def prepare_knowledge(self) -> IngestReport | None:
        """Ingest the bundled corpus when the knowledge base is empty, then load the index."""
        report = None
        if self.settings.ingest_on_start:
            from careerwise.knowledge.ingest import current_version

            if await current_version(self.db) == "empty":
                report = await ingest_paths(self.db, self.kb.embedder, [BUNDLED_CORPUS])
                log.info(
                    "knowledge: ingested the bundled corpus: %d documents, %d chunks",
                    len(report.added),
                    report.chunks_written,
                )
        await self.kb.load()
        prepare = getattr(self.engine.router, "prepare", None)
        if prepare is not None:
            await prepare()  # embed the routing examples now, not on the first message
        return report

    async def aclose(self) -> None:
        await self.provider.aclose()
        await self.db.dispose()
        self.engine.telemetry.shutdown()


def build_services(
    settings: Settings,
    *,
    provider: LLMProvider | None = None,
    embedder: Embedder | None = None,
    router: Router | None = None,
    telemetry: Telemetry | None = None,
) -> Services:
    db = Database(settings.resolved_database_url)
    db.migrate()
    kb = KnowledgeBase(db, embedder=embedder, embedding_model=settings.embedding_model)
    # every call carries the system-prompt canary and every answer is scrubbed of it (llm/canary.py)
    llm = CanaryGuard(provider or make_provider(settings))
    tools = ToolRegistry()
    tools.register(SearchKnowledgeTool(kb), intents=("career",))
    store = SettingsStore(db, settings)
    options = FlowOptions(
        buffer_guard_chunks=settings.buffer_guard_chunks,
        phase1_max_tokens=settings.phase1_max_tokens,
        phase1_temperature=settings.phase1_temperature,
        phase3_max_tokens=settings.phase3_max_tokens,
        phase3_temperature=settings.phase3_temperature,
        max_tool_rounds=settings.max_tool_rounds,
        llm_retries=settings.llm_retries,
        supports_tools=settings.llm_supports_tools,
        deep_step_timeout=settings.resolved_deep_step_timeout,
        deep_turn_timeout=settings.resolved_deep_turn_timeout,
    )
    bookings = BookingService(db, token_key=booking_token_key(session_secret(settings)))
    resumes = ResumeService(
        db,
        ExtractLimits(
            max_bytes=settings.resume_max_upload_bytes,
            max_pages=settings.resume_max_pdf_pages,
            max_chars=settings.resume_max_chars,
        ),
    )
    budget = TokenBudget(db, settings.daily_token_budget)
    engine = Engine(
        db=db,
        provider=llm,
        tools=tools,
        router=router
        or CascadeRouter(
            kb.embedder,
            ObservedProvider(llm),  # its layer-3 calls land on the routing turn's trace
            no_llm=not settings.routing_llm,
            llm_timeout=settings.routing_llm_timeout,
            cache_dir=settings.data_dir / "cache",
        ),
        flows=default_flows(bookings, resumes),
        options=options,
        settings_store=store,
        kb=kb,
        budget=budget,
        telemetry=telemetry or Telemetry.from_settings(settings),
        limits=EngineLimits(
            max_message_chars=settings.max_message_chars,
            max_history_messages=settings.max_history_messages,
            turn_deadline=settings.resolved_turn_deadline,
        ),
    )
    accounts = AccountService(db, session_secret(settings), timedelta(days=settings.session_days))
    return Services(
        settings=settings,
        db=db,
        kb=kb,
        provider=llm,
        tools=tools,
        engine=engine,
        assistant_settings=store,
        accounts=accounts,
        bookings=bookings,
        resumes=resumes,
        limiters=Limiters.from_settings(settings),
    )
