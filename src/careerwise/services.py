"""Wiring: build every long-lived object from the settings, once per process."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from careerwise.assistant_settings import SettingsStore
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
from careerwise.flows.career_chain import career_chain_flow
from careerwise.flows.parallel import parallel_flow
from careerwise.knowledge.embeddings import Embedder
from careerwise.knowledge.ingest import IngestReport, ingest_paths
from careerwise.knowledge.service import BUNDLED_CORPUS, KnowledgeBase
from careerwise.llm.types import LLMProvider
from careerwise.routing.cascade import CascadeRouter
from careerwise.routing.router import Router
from careerwise.store import Database
from careerwise.tools import SearchKnowledgeTool, ToolRegistry

log = logging.getLogger(__name__)


def make_provider(settings: Settings) -> LLMProvider:
    if settings.llm_base_url:
        from careerwise.llm.openai_provider import OpenAIProvider

        return OpenAIProvider(
            base_url=settings.llm_base_url,
            api_key=settings.llm_api_key.get_secret_value(),
            model=settings.llm_model,
            connect_timeout=settings.llm_connect_timeout,
            read_timeout=settings.llm_read_timeout,
        )
    from careerwise.llm.local import LocalProvider, ensure_model_file

    path = settings.local_model_path or ensure_model_file(settings.data_dir / "models")
    return LocalProvider(
        model_path=path,
        n_ctx=settings.local_n_ctx,
        n_threads=settings.local_n_threads,
        convert_zh=settings.zh_variant_conversion,
    )


def default_flows() -> FlowRegistry:
    flows = FlowRegistry()
    flows.register("greeting", None, "greeting", greeting_flow)
    flows.register("career", None, "career-simple", tool_use_flow)
    flows.register("career", "medium", "career-chain", career_chain_flow)
    flows.register("career", "complex", "career-parallel", parallel_flow)
    flows.register("resume", None, "resume-placeholder", resume_placeholder_flow)
    flows.register("booking", None, "booking-placeholder", booking_placeholder_flow)
    return flows


@dataclass
class Services:
    settings: Settings
    db: Database
    kb: KnowledgeBase
    provider: LLMProvider
    tools: ToolRegistry
    engine: Engine
    assistant_settings: SettingsStore

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


def build_services(
    settings: Settings,
    *,
    provider: LLMProvider | None = None,
    embedder: Embedder | None = None,
    router: Router | None = None,
) -> Services:
    db = Database(settings.resolved_database_url)
    db.migrate()
    kb = KnowledgeBase(db, embedder=embedder, embedding_model=settings.embedding_model)
    llm = provider or make_provider(settings)
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
        deep_step_timeout=settings.deep_step_timeout,
        deep_turn_timeout=settings.deep_turn_timeout,
    )
    engine = Engine(
        db=db,
        provider=llm,
        tools=tools,
        router=router
        or CascadeRouter(
            kb.embedder,
            llm,
            no_llm=not settings.routing_llm,
            llm_timeout=settings.routing_llm_timeout,
            cache_dir=settings.data_dir / "cache",
        ),
        flows=default_flows(),
        options=options,
        settings_store=store,
        kb=kb,
        limits=EngineLimits(
            max_message_chars=settings.max_message_chars,
            max_history_messages=settings.max_history_messages,
            turn_deadline=settings.turn_deadline,
        ),
    )
    return Services(
        settings=settings, db=db, kb=kb, provider=llm, tools=tools, engine=engine, assistant_settings=store
    )
