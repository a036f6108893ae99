"""LLM calls as records: a provider wrapper that times every completion and hands one :class:`LLMCall`
to the turn's sinks (trace spans, metrics, OpenTelemetry). Decision: docs/decisions/0004-spans.md.

The flows do not build these records; they only say what a call is for, in ``CompletionRequest.metadata
["purpose"]`` ("phase1", "phase3", "agent_market", "merge", "route", ...). The record is made where the
stream is, so its timings are the stream's own: time to the first chunk that carries text or a tool
call, time to the end, the usage and finish reason the provider sent.

The router's layer-3 classifier holds the process's provider, not a turn's: for it, the wrapper finds
the turn through :data:`ROUTING_SINK`, which the engine sets only inside the task that routes one turn
(a fresh context copy, so nothing leaks into other turns or outlives the routing).
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from careerwise.errors import CareerWiseError
from careerwise.llm.types import CompletionRequest, LLMProvider, StreamChunk


@dataclass(frozen=True)
class LLMCall:
    """One completion as it happened. ``started`` is a ``time.perf_counter()`` reading."""

    purpose: str
    model: str
    provider: str
    started: float
    duration_ms: float
    ttft_ms: float | None
    prompt_tokens: int | None
    completion_tokens: int | None
    finish_reason: str | None
    tool_calls: int
    error: str | None = None  # an error code (llm_timeout, llm_unavailable, ...) or "cancelled"

    @property
    def ok(self) -> bool:
        return self.error is None


LLMCallSink = Callable[[LLMCall], None]

# Set by the engine inside the routing task only (see the module docstring).
ROUTING_SINK: contextvars.ContextVar[LLMCallSink | None] = contextvars.ContextVar(
    "careerwise_routing_llm_sink", default=None
)


class ObservedProvider:
    """An :class:`LLMProvider` that passes every chunk through unchanged and reports each call once.

    ``sink=None``: report to :data:`ROUTING_SINK` if a turn set it, else to nobody."""

    def __init__(self, inner: LLMProvider, sink: LLMCallSink | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self._sink = sink

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def warm(self) -> None:
        warm = getattr(self.inner, "warm", None)
        if warm is not None:
            await warm()

    async def stream(self, request: CompletionRequest) -> AsyncIterator[StreamChunk]:
        sink = self._sink or ROUTING_SINK.get()
        if sink is None:
            async for chunk in self.inner.stream(request):
                yield chunk
            return
        started = time.perf_counter()
        first: float | None = None
        prompt_tokens: int | None = None
        completion_tokens: int | None = None
        finish_reason: str | None = None
        tool_ids: set[int] = set()
        error: str | None = "cancelled"  # until the stream ends one way or the other
        try:
            async for chunk in self.inner.stream(request):
                if first is None and (chunk.text or chunk.tool_deltas):
                    first = time.perf_counter()
                if chunk.usage is not None:
                    prompt_tokens = (prompt_tokens or 0) + chunk.usage.prompt_tokens
                    completion_tokens = (completion_tokens or 0) + chunk.usage.completion_tokens
                if chunk.finish_reason:
                    finish_reason = chunk.finish_reason
                if chunk.tool_deltas:
                    tool_ids.update(d.index for d in chunk.tool_deltas)
                yield chunk
            error = None
        except CareerWiseError as exc:
            error = exc.code
            raise
        except Exception:
            error = "internal_error"
            raise
        finally:
            # runs on success, on a provider error and when the consumer stops early (GeneratorExit);
            # the sink is synchronous, so this is safe even while the generator is being closed
            end = time.perf_counter()
            sink(
                LLMCall(
                    purpose=request.metadata.get("purpose", "unknown"),
                    model=self.model,
                    provider=self.name,
                    started=started,
                    duration_ms=round(1000 * (end - started), 2),
                    ttft_ms=round(1000 * (first - started), 2) if first is not None else None,
                    prompt_tokens=prompt_tokens,
                    completion_tokens=completion_tokens,
                    finish_reason=finish_reason,
                    tool_calls=len(tool_ids),
                    error=error,
                )
            )
