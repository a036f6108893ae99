"""How the service runs: observability, the HTTP server, request bodies, the process's memory.

Each field is declared here once, with its bounds; :class:`careerwise.config.Settings` reads them from
the environment (``CAREERWISE_*``). A server option is never picked implicitly: a missing package stops
the start rather than falling back silently.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class ServingSettings(BaseModel):
    """No model configuration of its own: :class:`careerwise.config.Settings` sets it."""

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
