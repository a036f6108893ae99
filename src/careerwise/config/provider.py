"""The language model's settings: which provider, how it is called, how its answer is streamed.

:class:`ProviderSettings` declares the remote provider (URL, key, model, what it supports, its speed
when known, its fallback), the deep flows' design and deadlines (unset: the provider's default, which
:class:`careerwise.config.Settings` resolves), the stream's pacing towards the client, and the embedded
model. Each field is declared here once, with its bounds; :class:`careerwise.config.Settings` reads them
from the environment (``CAREERWISE_*``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, SecretStr

from careerwise.tunables import Seconds


class ProviderSettings(BaseModel):
    """No model configuration of its own: :class:`careerwise.config.Settings` sets it."""

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
    llm_route_labels: list[Literal["greeting", "career", "resume", "booking", "offtopic"]] | None = Field(
        default=None,
        description="The routing labels whose layer-3 verdicts are taken from this provider; any other "
        "verdict routes career, the default when unsure. Unset: every label but greeting on the embedded "
        "model (its greeting verdicts were mostly wrong: docs/routing.md), every label on a server.",
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
    search_coverage_hint: bool | Literal["auto"] = Field(
        default="auto",
        description="The prompt that offers searchKnowledge names the articles the user's message matches "
        "(or says none does), so that a small model knows when a search will help: true, false, or auto "
        "(on for a slow provider; a fast one decides well without it and its first text would wait for "
        "the pre-check's search).",
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
    local_call_threshold: float = Field(
        default=0.3,
        ge=0,
        lt=1,
        description="With local_tool_calling=constrained: decide between a tool call and an answer by the "
        "branches' probability at the first token: a call when the tokens that open one hold at least this "
        "share (decision 0025; 0: the first token is taken at local_decision_temperature).",
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
        description="llama.cpp's repacked copy of the weights for its CPU kernels (private to each process, "
        "faster generation; docs/local-model.md gives the figures); false saves that memory.",
    )
    local_prompt_lookup: bool = Field(
        default=True,
        description="Check drafts copied from the request's own turns (the passages) in batches while the "
        "embedded model writes without a grammar: the same sampling, fewer single-token steps where the "
        "answer quotes its passages (llm/local/lookup.py).",
    )
    zh_variant_conversion: bool = Field(default=True, description="Convert Simplified output to zh-TW.")
