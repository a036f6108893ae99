"""Wiring: every long-lived object built from the settings once per process (:func:`build_services`)
and held together in :class:`Services`, which also runs what the process does around serving: the
knowledge base prepared before the first turn, the replies dead processes left pending closed at
start-up, and everything closed once at shutdown (the database and telemetry even when a provider's
close fails). The providers themselves are provider_registry.py; their names are re-exported here."""

from __future__ import annotations

import logging
import os
import secrets
import tempfile
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from careerwise.assistant_settings import SettingsStore
from careerwise.auth import AccountService
from careerwise.booking import BookingLimits, BookingService
from careerwise.booking import token_key as booking_token_key
from careerwise.booking.hours import parse_hours
from careerwise.budget import TokenBudget
from careerwise.config import Settings
from careerwise.engine import Engine, EngineLimits
from careerwise.flows import FlowRegistry, greeting_flow, tool_use_flow
from careerwise.flows.answer_cache import AnswerCache, cached_flow
from careerwise.flows.base import FlowOptions
from careerwise.flows.booking import register_booking_flow
from careerwise.flows.career_chain import career_chain_flow
from careerwise.flows.offtopic import offtopic_flow
from careerwise.flows.parallel import parallel_flow
from careerwise.flows.resume import resume_flow
from careerwise.knowledge.embeddings import Embedder
from careerwise.knowledge.fusion import MessageFusion
from careerwise.knowledge.ingest import IngestReport, ingest_paths
from careerwise.knowledge.service import BUNDLED_CORPUS, KnowledgeBase
from careerwise.llm.types import LLMProvider
from careerwise.provider_registry import ProviderRegistry as ProviderRegistry
from careerwise.provider_registry import make_provider as make_provider
from careerwise.provider_registry import measures_speed as measures_speed
from careerwise.provider_registry import provider_profile as provider_profile
from careerwise.ratelimit import Limiter, make_limiter
from careerwise.resume import ExtractLimits, ResumeService
from careerwise.routing.cascade import CascadeRouter
from careerwise.routing.embedder import routing_embedder
from careerwise.routing.router import Router
from careerwise.store import Database
from careerwise.store.recovery import ProcessLease, close_interrupted_replies
from careerwise.tools import SearchKnowledgeTool, ToolRegistry
from careerwise.tracing.llm_calls import ObservedProvider
from careerwise.tracing.telemetry import Telemetry
from careerwise.untrusted import ArchiveLimits, ParseWorkers

log = logging.getLogger(__name__)


def default_flows(
    bookings: BookingService,
    resumes: ResumeService,
    answer_cache: AnswerCache | None = None,
) -> FlowRegistry:
    flows = FlowRegistry()
    flows.register("greeting", None, "greeting", greeting_flow)
    # off-topic requests: a fixed localised reply, never the tool flow (decision 0017)
    flows.register("offtopic", None, "offtopic", offtopic_flow)
    # the answer cache, when on, sits in front of the simple career flow only (flows/answer_cache.py)
    simple = cached_flow(tool_use_flow, answer_cache) if answer_cache is not None else tool_use_flow
    flows.register("career", None, "career-simple", simple)
    flows.register("career", "medium", "career-chain", career_chain_flow)
    flows.register("career", "complex", "career-parallel", parallel_flow)
    flows.register("resume", None, "resume", resume_flow(resumes))
    register_booking_flow(flows, bookings)  # the booking flow keeps its dialogue in the database
    return flows


@dataclass
class Limiters:
    """Per-minute request limits, in the process or in the database (ratelimit.make_limiter)."""

    anonymous_chat: Limiter
    user_chat: Limiter
    login: Limiter
    login_account: Limiter  # keyed by the email tried, whatever the IP
    young_accounts_chat: Limiter  # keyed by IP, shared by every young account using it

    @classmethod
    def from_settings(cls, s: Settings, db: Database) -> Limiters:
        return cls(
            anonymous_chat=make_limiter("anonymous_chat", s.anonymous_chat_per_minute, settings=s, db=db),
            user_chat=make_limiter("user_chat", s.user_chat_per_minute, settings=s, db=db),
            login=make_limiter("login", s.login_per_minute, settings=s, db=db),
            login_account=make_limiter("login_account", s.login_per_account_per_minute, settings=s, db=db),
            young_accounts_chat=make_limiter(
                "young_accounts_chat", s.young_accounts_chat_per_minute, settings=s, db=db
            ),
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
    # `serve --workers N` starts N processes that all get here at once on a new data folder: the secret is
    # written whole under a name of this process's own, then linked into place, which fails if another
    # process got there first; then theirs is the secret (read whole: it was complete before its link).
    # A create-exclusive open of the final name let the loser fail its start-up, or read it half written.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".session_secret.")  # mode 0600
    try:
        with os.fdopen(fd, "w") as f:
            f.write(value)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            return path.read_text().strip()
    finally:
        os.unlink(tmp)
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
    providers: ProviderRegistry
    process: ProcessLease
    parse_workers: ParseWorkers  # untrusted files (resumes, knowledge uploads) are parsed in these

    async def prepare_knowledge(self) -> IngestReport | None:
        """Ingest the bundled corpus when the knowledge base is empty, then load the index."""
        report = None
        if self.settings.ingest_on_start:
            from careerwise.knowledge.ingest import current_version, log_progress

            if await current_version(self.db) == "empty":
                log.info("knowledge: embedding the bundled corpus into an empty knowledge base (once)")
                report = await ingest_paths(
                    self.db, self.kb.embedder, [BUNDLED_CORPUS], progress=log_progress()
                )
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

    async def recover(self) -> None:
        """At start-up, before serving: register this process (its pending replies are stamped with it
        from now on), then close the replies that dead processes left pending, so their conversations
        accept a message at once (store/recovery.py). Logged and counted; a failure here is logged and
        counted too, and start-up goes on: a 409 still closes a dead process's reply when it is met
        (``Engine._expire_interrupted``)."""
        from careerwise.tracing import background

        metrics = self.engine.telemetry.metrics
        try:
            await self.process.start()
            closed = await close_interrupted_replies(
                self.db,
                here=self.process.identity,
                lease=self.process.lease_seconds,
                unowned_before=self.engine.unowned_cutoff(),
            )
        except Exception:
            log.exception("recovery: closing the replies left by dead processes failed at start-up")
            background.count_failure(background.STARTUP_RECOVERY)
            return
        if closed:
            metrics.recovered.labels("reply").inc(len(closed))
            log.warning(
                "recovery: closed %d reply(ies) left pending by dead processes (%s) in %d conversation(s)",
                len(closed),
                ", ".join(sorted({c.owner or "unrecorded" for c in closed})),
                len({c.conversation_id for c in closed}),
            )

    async def aclose(self) -> None:
        """The database and the telemetry (buffered traces) are closed even when the providers' close
        fails; the failure is raised after (the app's lifespan logs it). The knowledge base's BM25
        threads are let go first: that neither waits nor fails (``KnowledgeBase.close``). This process's
        row is marked stopped before the database closes (it logs its own failure)."""
        self.kb.close()
        try:
            await self.providers.aclose()  # the default provider among them
        finally:
            try:
                await self.process.stop()
                await self.db.dispose()
            finally:
                self.engine.telemetry.shutdown()


def build_services(
    settings: Settings,
    *,
    provider: LLMProvider | None = None,
    embedder: Embedder | None = None,
    router: Router | None = None,
    telemetry: Telemetry | None = None,
) -> Services:
    db = Database(
        settings.resolved_database_url,
        pool_size=settings.database_pool_size,
        max_overflow=settings.database_max_overflow,
        search_connections=settings.database_search_connections,
        writer_threads=settings.database_writer_threads,
        writer_batch=settings.database_writer_batch,
    )
    db.migrate()
    kb = KnowledgeBase(
        db,
        embedder=embedder,
        embedding_model=settings.embedding_model,
        query_cache_size=settings.query_embedding_cache_size,
        retrieval_cache_size=settings.retrieval_cache_size,
    )
    answer_cache = (
        AnswerCache(
            threshold=settings.answer_cache_threshold,
            size=settings.answer_cache_size,
            ttl=settings.answer_cache_ttl,
        )
        if settings.answer_cache_threshold > 0
        else None
    )
    providers = ProviderRegistry(settings, default=provider)
    llm = providers.default
    tools = ToolRegistry()
    tools.register(
        SearchKnowledgeTool(
            kb,
            min_top_k=settings.search_min_top_k,
            message_fusion=MessageFusion(settings.search_message_fusion, settings.search_message_weight),
            passage_scope=settings.passage_scope,
        ),
        intents=("career",),
    )
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
        medium_flow=settings.medium_flow,
        deep_design=settings.deep_design,
        deep_step_timeout=settings.resolved_deep_step_timeout,
        deep_turn_timeout=settings.resolved_deep_turn_timeout,
        deep_heartbeat=settings.deep_heartbeat_interval,
    )
    bookings = BookingService(
        db,
        token_key=booking_token_key(session_secret(settings)),
        limits=BookingLimits(per_day=settings.bookings_per_day, held=settings.bookings_held),
        default_hours=parse_hours(settings.default_hours),
        contact_line=settings.booking_contact,
    )
    parse_workers = ParseWorkers(
        memory_bytes=settings.upload_worker_memory_bytes, slots=settings.upload_workers
    )
    resumes = ResumeService(
        db,
        ExtractLimits(
            max_bytes=settings.resume_max_upload_bytes,
            max_pages=settings.resume_max_pdf_pages,
            max_chars=settings.resume_max_chars,
            archive=ArchiveLimits(
                max_inflated_bytes=settings.upload_max_inflated_bytes,
                max_members=settings.upload_max_archive_members,
                max_xml_elements=settings.upload_max_xml_elements,
            ),
        ),
        workers=parse_workers,
        timeout=settings.upload_worker_timeout,
    )
    budget = TokenBudget(db, settings.daily_token_budget, group_tokens=settings.young_accounts_daily_tokens)
    process = ProcessLease(db)
    engine = Engine(
        db=db,
        process=process,
        provider=llm,
        tools=tools,
        router=router
        or CascadeRouter(
            routing_embedder(settings.routing_embedding_model, kb.embedder),
            ObservedProvider(llm),  # its layer-3 calls land on the routing turn's trace
            no_llm=not settings.routing_llm,
            llm_timeout=settings.routing_llm_timeout,
            cache_dir=settings.data_dir / "cache",
            lexical=settings.routing_lexical,
        ),
        flows=default_flows(bookings, resumes, answer_cache),
        options=options,
        settings_store=store,
        pick_provider=providers.get,
        kb=kb,
        budget=budget,
        telemetry=telemetry or Telemetry.from_settings(settings),
        limits=EngineLimits(
            max_message_chars=settings.max_message_chars,
            max_history_messages=settings.max_history_messages,
            turn_deadline=settings.resolved_turn_deadline,
        ),
    )
    engine.telemetry.metrics.watch_caches(kb.cache_stats)
    providers.stream_pace.export_to(engine.telemetry.metrics.registry)
    writer = db.writer
    if writer is not None:
        engine.telemetry.metrics.watch_writes(writer.counts)
    reader = db.reader
    if reader is not None:
        engine.telemetry.metrics.watch_reads(reader.counts)
    if answer_cache is not None:
        engine.telemetry.metrics.watch_caches(lambda: [answer_cache.stats()])
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
        limiters=Limiters.from_settings(settings, db),
        providers=providers,
        process=process,
        parse_workers=parse_workers,
    )
