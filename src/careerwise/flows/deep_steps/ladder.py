"""The bottom of the deep answers' degradation ladder: the streamed answer, then excerpts.

:func:`simple_or_excerpts` runs the streamed tool-use answer; if the language model fails before any
text was shown, :func:`excerpts` shows the best knowledge-base passages with a plain notice instead.
A failed excerpt search is logged and reported as a ``degraded`` event (so the trace and the retrieval
failure metric show it); with no passage at all the model's error is raised for the engine to report.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence

from careerwise.errors import LLMError, LLMUnavailableError
from careerwise.events import DegradedEvent, Event, ReportEvent, ReportSection
from careerwise.flows.base import FlowContext
from careerwise.flows.deep_steps.notices import degraded, source_of
from careerwise.flows.tool_use import tool_use_flow
from careerwise.knowledge.index import Hit

log = logging.getLogger(__name__)

EXCERPTS = 3
EXCERPT_CHARS = 360


def _excerpt(text: str) -> str:
    text = text.strip()
    if len(text) <= EXCERPT_CHARS:
        return text
    cut = text[:EXCERPT_CHARS]
    end = max(cut.rfind(p) for p in "。！？.!?\n")
    return (cut[: end + 1] if end > EXCERPT_CHARS // 2 else cut).rstrip() + "…"


async def excerpts(ctx: FlowContext, hits: Sequence[Hit], error: Exception) -> AsyncIterator[Event]:
    """The LLM is unreachable: the best knowledge-base passages found so far (or found now for the raw
    message), with a plain notice. Without any passage the error is raised for the engine to report."""
    found = list(hits)
    if not found and ctx.kb is not None and ctx.kb.available:
        try:
            found = (await ctx.kb.search(ctx.message, top_k=EXCERPTS, candidates=12)).hits[:EXCERPTS]
        except Exception:
            log.exception("deep: the excerpt search failed")
            # an event, so the trace and careerwise_retrieval_failures_total{kind="search_failed"} show it
            yield degraded("excerpts_search_failed", ctx.zh)
    best: dict[int, Hit] = {}
    for h in sorted(found, key=lambda h: h.score, reverse=True):
        best.setdefault(h.chunk.id, h)
    chosen = list(best.values())[:EXCERPTS]
    if not chosen:
        raise error if isinstance(error, LLMError) else LLMUnavailableError(str(error))
    ctx.state.path = "excerpts"
    yield degraded("llm_unreachable", ctx.zh)
    yield ReportEvent(
        title="知識庫摘錄" if ctx.zh else "From the knowledge base",
        path="excerpts",
        sections=[
            ReportSection(
                heading=h.chunk.title + (f" › {h.chunk.section}" if h.chunk.section else ""),
                body=_excerpt(h.chunk.text),
                sources=[source_of(h)],
            )
            for h in chosen
        ],
    )


async def simple_or_excerpts(
    ctx: FlowContext, hits: Sequence[Hit], *, skip_reason: str | None = None
) -> AsyncIterator[Event]:
    """The streamed tool-use answer; if the LLM fails before any text, the excerpts. ``skip_reason``: a
    degraded reason the caller already reported (not repeated)."""
    ctx.state.path = "B"
    try:
        async for event in tool_use_flow(ctx):
            if isinstance(event, DegradedEvent) and event.reason == skip_reason:
                continue
            yield event
    except LLMError as exc:
        if ctx.state.shown_text:
            raise
        log.warning("deep: the streamed answer failed too (%s); showing excerpts", exc)
        async for event in excerpts(ctx, hits, exc):
            yield event
