"""Wiring: build every long-lived object from the settings, once per process."""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from careerwise.assistant_settings import SettingsStore, default_provider, provider_names
from careerwise.auth import AccountService
from careerwise.booking import BookingLimits, BookingService
from careerwise.booking import token_key as booking_token_key
from careerwise.booking.hours import parse_hours
from careerwise.budget import TokenBudget
from careerwise.config import Settings
from careerwise.engine import Engine, EngineLimits
from careerwise.errors import LLMUnavailableError
from careerwise.flows import (
    FlowRegistry,
    greeting_flow,
    tool_use_flow,
)
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
from careerwise.llm.canary import CanaryGuard
from careerwise.llm.profile import (
    FULL_DESIGN_MIN_CONCURRENCY,
    SLOW_PASSAGE_BUDGET,
    ProviderProfile,
    ToolCalling,
)
from careerwise.llm.types import CompletionRequest, LLMProvider, StreamChunk
from careerwise.loadwatch import stream_pace
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

if TYPE_CHECKING:
    from careerwise.llm.resilience import CircuitBreaker

log = logging.getLogger(__name__)


def make_provider(settings: Settings) -> LLMProvider:
    """The configured default provider, as it ships: the primary server (with its fallback) or the
    embedded model. Turns get theirs from :class:`ProviderRegistry`, which builds these the same way."""
    return ProviderRegistry(settings).build(default_provider(settings), "")


class _Unconfigured:
    """Stands in for a provider the database names but this configuration does not have (the setting
    was stored on another machine, or the configuration changed): every call fails loudly, as an
    ``llm_unavailable`` error on the turn's trace and in the metrics, never a silent switch."""

    def __init__(self, name: str) -> None:
        self.name, self.model = name, "unconfigured"

    async def aclose(self) -> None:
        return None

    async def stream(self, request: CompletionRequest) -> AsyncIterator[StreamChunk]:
        err = LLMUnavailableError(f"the provider {self.name!r} is not configured in this process")
        err.retryable = False
        raise err
        yield  # pragma: no cover - makes this an async generator


class ProviderRegistry:
    """The configured providers by name, each built once per (name, model) and kept for the process.

    The database picks one per assistant (settings ``llm_provider`` and ``llm_model``) and the engine
    asks here at the start of every turn, so a change applies from the next turn, in every process,
    without a restart. Addresses and API keys come from the configuration only. The circuit breakers
    belong to the provider, not the model: a server that is down is down for every model name.
    """

    def __init__(self, settings: Settings, *, default: LLMProvider | None = None) -> None:
        self._settings = settings
        self.default_name = default_provider(settings)
        self._built: dict[tuple[str, str], LLMProvider] = {}
        self._breakers: dict[str, CircuitBreaker] = {}
        self._given = default  # a provider passed in (tests, benchmarks) serves the default selection
        self._probes: dict[str, tuple[float, dict[str, Any]]] = {}
        self._probing: dict[str, asyncio.Lock] = {}
        self.stream_pace = stream_pace(settings)  # one per process: every remote provider reads it

    @property
    def default(self) -> LLMProvider:
        """The configured default provider (built on first use; the router and /readyz use it too)."""
        key = (self.default_name, "")
        if key not in self._built:
            # every provider carries the system-prompt canary; every answer is scrubbed of it (llm/canary.py)
            self._built[key] = CanaryGuard(self._clean(self._given or self.build(self.default_name, "")))
        return self._built[key]

    def names(self) -> tuple[str, ...]:
        return provider_names(self._settings)

    def get(self, name: str, model: str = "") -> LLMProvider:
        """The provider for a turn; ``model`` empty = the provider's configured model."""
        if name == "embedded" or model == self._configured_model(name):
            model = ""  # one embedded model per process; the configured name is the provider's default
        key = (name, model)
        if key == (self.default_name, ""):
            return self.default
        found = self._built.get(key)
        if found is None:
            if name not in self.names():
                log.error("llm: the settings name the provider %r, which is not configured here", name)
                return CanaryGuard(_Unconfigured(name))
            found = self._built[key] = CanaryGuard(self._clean(self.build(name, model)))
            log.info("llm: provider %s with model %s ready", name, found.model)
        return found

    def _clean(self, provider: LLMProvider) -> LLMProvider:
        """Every provider's output cleaned the same way: text tool calls, Taiwan Chinese, usage
        (llm/clean.py)."""
        from careerwise.llm.clean import CleanOutput

        return CleanOutput(provider, convert_zh=self._settings.zh_variant_conversion)

    def _configured_model(self, name: str) -> str:
        s = self._settings
        return (s.llm_fallback_model or s.llm_model) if name == "fallback" else s.llm_model

    def _breaker(self, name: str) -> CircuitBreaker:
        from careerwise.llm.resilience import CircuitBreaker

        if name not in self._breakers:
            s = self._settings
            self._breakers[name] = CircuitBreaker(
                name, threshold=s.llm_breaker_threshold, reset_after=s.llm_breaker_reset_seconds
            )
        return self._breakers[name]

    def _remote(self, name: str, model: str) -> LLMProvider:
        from careerwise.llm.openai_provider import OpenAIProvider

        s = self._settings
        base_url, key = (
            (s.llm_fallback_base_url, s.llm_fallback_api_key)
            if name == "fallback"
            else (s.llm_base_url, s.llm_api_key)
        )
        assert base_url is not None
        return OpenAIProvider(
            base_url=base_url,
            api_key=key.get_secret_value(),
            model=model or self._configured_model(name),
            connect_timeout=s.llm_connect_timeout,
            read_timeout=s.llm_read_timeout,
            http_client=s.llm_http_client,
            stream_pace=self.stream_pace,
            profile=provider_profile(s, slow=s.llm_slow, tool_calling="native", declared=name != "fallback"),
            measure_speed=measures_speed(s, declared=name != "fallback"),
            detect_concurrency=name == "fallback" or s.llm_concurrency is None,
            detect_grammar=True,
        )

    def build(self, name: str, model: str) -> LLMProvider:
        """A new, unguarded provider (the caller owns it)."""
        from careerwise.llm.resilience import ResilientProvider

        s = self._settings
        if name == "primary":
            fallback = self._remote("fallback", "") if s.llm_fallback_base_url else None
            fallback_breaker = self._breaker("fallback") if fallback is not None else None
            return ResilientProvider(
                self._remote("primary", model),
                breaker=self._breaker("primary"),
                fallback=fallback,
                fallback_breaker=fallback_breaker,
            )
        if name == "fallback":
            return ResilientProvider(self._remote("fallback", model), breaker=self._breaker("fallback"))
        from careerwise.llm.local import LocalProvider, ensure_model_file

        path = s.local_model_path or ensure_model_file(s.data_dir / "models")
        return LocalProvider(
            model_path=path,
            n_ctx=s.local_n_ctx,
            n_threads=s.local_n_threads,
            convert_zh=False,  # CleanOutput converts every provider's text (_clean)
            repack_weights=s.local_repack_weights,
            profile=provider_profile(s, slow=True, tool_calling=s.local_tool_calling, embedded=True),
            measure_speed=measures_speed(s),
            prefix_dir=s.data_dir / "cache" / "llm" if s.local_prefix_cache else None,
            decision_temperature=s.local_decision_temperature,
        )

    async def aclose(self) -> None:
        """Every provider is closed even if closing another failed; the first failure is raised after."""
        failure: BaseException | None = None
        closers: list[Callable[[], Awaitable[None]]] = [p.aclose for p in self._built.values()]
        closers.append(self.stream_pace.aclose)  # the loop-lag probe's task, if one runs
        for close in closers:
            try:
                await close()
            except Exception as exc:  # logged here, the first one raised below
                log.error("closing %r failed: %r", close, exc, exc_info=exc)
                failure = failure or exc
        if failure is not None:
            raise failure

    async def probe(self, name: str, *, seconds: float) -> dict[str, Any]:
        """Whether the provider answers, cheaply: ``GET {base_url}/models`` (no tokens spent) for a server,
        loaded-or-not for the embedded model. The result is kept ``readyz_llm_cache_seconds`` and one
        probe at a time runs per provider, so a readiness poller cannot hammer the provider."""
        ttl = self._settings.readyz_llm_cache_seconds
        lock = self._probing.setdefault(name, asyncio.Lock())
        async with lock:
            kept = self._probes.get(name)
            age = time.monotonic() - kept[0] if kept else 0.0
            if kept is not None and age < ttl:
                return kept[1] | {"cached": True, "age_s": round(age, 2)}
            result = await self._probe_now(name, seconds)
            self._probes[name] = (time.monotonic(), result)
        return result | {"cached": False, "age_s": 0.0}

    async def _probe_now(self, name: str, seconds: float) -> dict[str, Any]:
        if name == "embedded":
            local = _innermost(self.default) if self.default_name == "embedded" else None
            if bool(getattr(local, "loaded", False)):
                return {"state": "ok", "loaded": True}
            error = getattr(local, "load_error", None)
            if error:
                return {"state": "failed", "loaded": False, "error": error}
            # start-up loads it in the background (app lifespan): not ready to answer until it is in memory
            return {"state": "loading", "loaded": False, "error": "the embedded model is still loading"}
        s = self._settings
        base_url, key = (
            (s.llm_fallback_base_url, s.llm_fallback_api_key)
            if name == "fallback"
            else (s.llm_base_url, s.llm_api_key)
        )
        if not base_url:
            return {"state": "failed", "error": f"the provider {name!r} is not configured"}
        started = time.perf_counter()
        try:
            async with httpx.AsyncClient(timeout=seconds) as http:
                r = await http.get(
                    base_url.rstrip("/") + "/models",
                    headers={"Authorization": f"Bearer {key.get_secret_value()}"},
                )
        except httpx.HTTPError as exc:
            log.warning("readyz: the LLM provider %s did not answer: %s: %s", name, type(exc).__name__, exc)
            return {"state": "failed", "error": f"{type(exc).__name__}: {exc}"}
        ms = round(1000 * (time.perf_counter() - started), 2)
        # 401/403: the key is refused, every turn would be too; 5xx: the server is failing. A 404 (a
        # server without the listing) still proves the server is up and answering.
        if r.status_code in (401, 403) or r.status_code >= 500:
            log.warning("readyz: the LLM provider %s answered GET /models with %d", name, r.status_code)
            return {
                "state": "failed",
                "status": r.status_code,
                "ms": ms,
                "error": f"GET /models: {r.status_code}",
            }
        return {"state": "ok", "status": r.status_code, "ms": ms}


def provider_profile(
    settings: Settings,
    *,
    slow: bool,
    tool_calling: ToolCalling,
    embedded: bool = False,
    declared: bool = True,
) -> ProviderProfile:
    """A provider's profile from the settings: the passage budget is the configured one, or on a slow
    provider :data:`SLOW_PASSAGE_BUDGET` tokens (a few seconds of prompt reading on two cores).

    With ``declared`` (the configured provider: the ``llm_base_url`` server or the embedded model) the
    declared speeds, concurrency and context size apply; a fallback server starts from the defaults.
    Concurrency defaults to 1 for the ``embedded`` model (one request at a time) and to
    :data:`FULL_DESIGN_MIN_CONCURRENCY` for a server, which finds out at first use whether it is a
    llama.cpp server (``llm/openai_provider.py``)."""
    budget = settings.passage_budget_tokens
    if budget is None:
        budget = SLOW_PASSAGE_BUDGET if slow else 0
    prompt_tps = settings.llm_prompt_tps if declared else None
    gen_tps = settings.llm_gen_tps if declared else None
    concurrency = settings.llm_concurrency if declared else None
    context = settings.llm_context_tokens if declared else None
    return ProviderProfile(
        tool_calling=tool_calling,
        passage_budget_tokens=budget or None,
        slow=slow,
        answer_quotes=settings.answer_quotes == "on" or (settings.answer_quotes == "auto" and slow),
        prompt_tokens_per_s=prompt_tps,
        gen_tokens_per_s=gen_tps,
        concurrency=concurrency or (1 if embedded else FULL_DESIGN_MIN_CONCURRENCY),
        context_tokens=context or (settings.local_n_ctx if embedded else None),
        source="declared" if prompt_tps is not None or gen_tps is not None else "default",
    )


def measures_speed(settings: Settings, *, declared: bool = True) -> bool:
    """Whether a provider measures its speeds from its calls: not when they are declared (or turned off)."""
    return settings.llm_measure_speed and not (
        declared and (settings.llm_prompt_tps is not None or settings.llm_gen_tps is not None)
    )


def _innermost(provider: object) -> object:
    """The provider inside its wrappers (canary guard, breaker): each keeps it as ``inner``/``primary``."""
    for _ in range(8):
        inner = getattr(provider, "inner", None) or getattr(provider, "primary", None)
        if inner is None:
            return provider
        provider = inner
    return provider


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
        coverage_hint=settings.search_coverage_hint,
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
