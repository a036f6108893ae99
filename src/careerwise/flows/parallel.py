"""The parallel flow for complex career questions (seed 001): facet search, three agents, a guarded merge.

1. Facet search — one ``search_many`` call (one embedding batch) for three queries written for the
   user's situation, each in its own domain: market_salary, growth_skills, interview_practice; top 2 each.
2. Three agents at once — market analyst, growth coach, practice coach (temperature 0.3), each with its
   facet's passages and the seed's prompt template, each answering strict JSON
   ``{"findings", "insights", "risk_level"}`` validated by Pydantic (one retry with the error). A facet
   without passages has no agent and is marked 「此面向暫無分析資料」.
3. The merge (temperature 0.5) sees only the agents' outputs, ⛔ no outside knowledge: it answers JSON
   statements, each citing finding ids (A1, B2, …). A statement that cites nothing, or states a number or
   a name its cited findings (and their passages, and the user's message) do not contain, or has little in
   common with what it cites, is dropped before the user sees it; the report counts the drops.

The ladder when things fail is in docs/deep-answers.md: some agents fail → report from the rest; all fail →
the medium chain; the chain fails → the streamed answer; the LLM unreachable → knowledge-base excerpts.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from careerwise.errors import StepFailed
from careerwise.events import Event, ProgressEvent
from careerwise.flows import deep_steps, report_guards, resume_context
from careerwise.flows.base import FlowContext
from careerwise.flows.career_chain import chain_with_fallbacks
from careerwise.flows.compact import compact_flow, design_of
from careerwise.flows.deep_steps import Budget, Emit
from careerwise.flows.facets import (
    AGENT_MAX_TOKENS,
    FACETS,
    PRACTICE,
    AgentOutput,
    AgentResult,
    agent_messages,
    facet_queries,
    facet_search,
    items_of,
)
from careerwise.flows.merge import (
    MERGE_EN,
    MERGE_MAX_TOKENS,
    MERGE_ZH,
    Checked,
    MergeOutput,
    build_report,
    check_statements,
    merge_input,
)
from careerwise.flows.resume_context import PromptResume
from careerwise.llm.profile import profile_of
from careerwise.llm.types import ChatMessage

log = logging.getLogger(__name__)


@dataclass
class ParallelOutcome(deep_steps.Outcome):
    knowledge_failed: bool = False
    results: list[AgentResult] = field(default_factory=list)


def _slots(ctx: FlowContext) -> asyncio.Semaphore:
    """The agents run as many at a time as the provider serves at once (its profile's concurrency, at
    most one per facet): on a provider that serves one request at a time (the embedded model, a
    llama.cpp server) they take turns, so that a deadline measures an agent's own work, not its wait in
    the queue, and no agent's request cuts another's off."""
    return asyncio.Semaphore(max(1, min(profile_of(ctx.provider).concurrency, len(FACETS))))


async def _agent(
    ctx: FlowContext,
    r: AgentResult,
    budget: Budget,
    emit: Emit,
    slots: asyncio.Semaphore,
    resume: PromptResume | None = None,
) -> None:
    key = r.facet.key
    async with slots:
        emit(ProgressEvent(stage="agent_started", detail=key))
        try:
            r.output = await deep_steps.ask_json(
                ctx,
                agent_messages(ctx, r.facet, r.hits, resume),
                AgentOutput,
                temperature=ctx.settings.deep_agent_temperature,  # seed 001: agents low, for stable analysis
                max_tokens=AGENT_MAX_TOKENS,
                budget=budget,
                label=f"agent_{key}",
                emit=emit,
            )
        except StepFailed as failure:
            r.failure = failure
        except Exception as exc:  # one agent's bug must not take the others down; logged, reported
            log.exception("parallel: agent %s failed", key)
            r.failure = StepFailed("internal_error", f"{type(exc).__name__}: {exc}")
    if r.output is not None:
        emit(ProgressEvent(stage="agent_finished", detail=f"{key}: ok ({len(r.output.findings)} findings)"))
    else:
        assert r.failure is not None
        emit(ProgressEvent(stage="agent_finished", detail=f"{key}: failed ({r.failure.code})"))
        log.warning("parallel: agent %s failed: %s", key, r.failure)
        emit(
            deep_steps.degraded(
                "deep_agent_failed",
                ctx.zh,
                facet=r.facet.pick(r.facet.heading, ctx.zh),
                cause=deep_steps.cause(r.failure.code, ctx.zh),
            )
        )


async def _stored_resume(ctx: FlowContext, emit: Emit) -> PromptResume | None:
    """The logged-in user's latest stored resume, prepared for the practice coach's prompt. The trace
    records that it was used and its size, never its text. A failure to read it is reported (logged,
    a ``degraded`` event, counted) and the coach goes on without it."""
    if ctx.stored_resume is None:
        return None
    try:
        stored = await ctx.stored_resume()
    except Exception as exc:
        log.exception("parallel: could not read the stored resume")
        emit(deep_steps.degraded("deep_resume_unavailable", ctx.zh, cause=type(exc).__name__))
        return None
    resume = resume_context.for_prompt(stored) if stored else None
    if resume is not None:
        cut = f", cut to {len(resume.text)}" if resume.cut else ""
        emit(
            ProgressEvent(
                stage="resume", detail=f"practice: the stored resume is used ({resume.chars} chars{cut})"
            )
        )
    return resume


async def run_parallel(ctx: FlowContext, budget: Budget, emit: Emit, out: ParallelOutcome) -> None:
    searched = await facet_search(ctx, facet_queries(ctx.message, ctx.zh), emit, "parallel")
    if searched is None:
        out.knowledge_failed = True
        return
    facet_hits, off_domain = searched
    if off_domain:  # counted on the report (guards.off_domain_hits), named here
        dropped = "; ".join(f"{h.chunk.document_id} ({h.chunk.domain})" for h in off_domain)
        log.info("parallel: facet hits outside the situation or for another audience: %s", dropped)
    results = [AgentResult(f, hits) for f, hits in zip(FACETS, facet_hits, strict=True)]
    out.results = results
    out.hits = [h for r in results for h in r.hits]
    for r in results:
        if not r.hits:
            emit(ProgressEvent(stage="agent_finished", detail=f"{r.facet.key}: skipped (no_knowledge)"))
    practice = next(r for r in results if r.facet.key == PRACTICE)
    resume = await _stored_resume(ctx, emit) if practice.hits else None
    slots = _slots(ctx)
    t1 = time.perf_counter()
    await asyncio.gather(
        *(_agent(ctx, r, budget, emit, slots, resume if r is practice else None) for r in results if r.hits)
    )
    ctx.state.timings["agents_ms"] = 1000 * (time.perf_counter() - t1)
    ok = [r for r in results if r.ok]
    if not ok:
        failures = [r.failure for r in results if r.failure is not None]
        codes = list(dict.fromkeys(f.code for f in failures)) or ["no_knowledge"]
        out.failure = StepFailed(
            codes[0], ", ".join(codes), unreachable=bool(failures) and all(f.unreachable for f in failures)
        )
        return
    items = items_of(results)
    emit(ProgressEvent(stage="merge", detail=f"{len(ok)} of {len(results)} facets, {len(items)} items"))
    checked: Checked | None = None
    try:
        merge = await deep_steps.ask_json(
            ctx,
            [
                ChatMessage(role="system", content=MERGE_ZH if ctx.zh else MERGE_EN),
                ChatMessage(role="user", content=merge_input(ctx, results, items)),
            ],
            MergeOutput,
            temperature=ctx.settings.deep_merge_temperature,  # seed 001: a little higher, still conservative
            max_tokens=MERGE_MAX_TOKENS,
            budget=budget,
            label="merge",
            emit=emit,
        )
        # the user's own words (this message and the earlier ones) count as a source
        checked = check_statements(merge, items, "\n".join(report_guards.user_messages(ctx)))
        for text, why in checked.dropped:
            log.info("parallel: dropped a merge statement (%s): %s", why, text)
        if checked.dropped:
            emit(
                ProgressEvent(
                    stage="merge", detail=f"dropped {len(checked.dropped)} unsupported statement(s)"
                )
            )
    except StepFailed as failure:
        log.warning("parallel: the merge failed: %s", failure)
        emit(deep_steps.degraded("deep_merge_failed", ctx.zh, cause=deep_steps.cause(failure.code, ctx.zh)))
    report, notes = build_report(ctx, results, checked, off_domain_hits=len(off_domain))
    for note in notes:
        emit(ProgressEvent(stage="merge", detail=note))
    if report.guards and any(report.guards.values()):
        emit(ProgressEvent(stage="guards", detail=report_guards.summary(report.guards)))
    for section in deep_steps.section_events(report):
        emit(section)
    emit(report)
    out.done = True


async def parallel_flow(ctx: FlowContext) -> AsyncIterator[Event]:
    ctx.state.path = "parallel"
    if ctx.kb is None or not ctx.kb.available:
        yield deep_steps.degraded("deep_knowledge_unavailable", ctx.zh)
        async for event in deep_steps.simple_or_excerpts(ctx, [], skip_reason="knowledge_unavailable"):
            yield event
        return
    budget = deep_steps.budget_for(ctx)
    if design_of(ctx.options, ctx.provider)[0] == "compact":  # the rule: llm/profile.py, decision 0016
        ctx.state.path = "compact"
        async for event in compact_flow(ctx, budget):
            yield event
        return
    out = ParallelOutcome()

    async def run(emit: Emit) -> None:
        await run_parallel(ctx, budget, emit, out)

    async for event in deep_steps.pump(run):
        yield event
    if out.done:
        return
    if out.knowledge_failed:  # the facet search raised: said as such, counted as a failed search
        yield deep_steps.degraded("deep_knowledge_search_failed", ctx.zh)
        async for event in deep_steps.simple_or_excerpts(ctx, []):
            yield event
        return
    failure = out.failure or StepFailed("internal_error")
    codes = [c for c in failure.detail.split(", ") if c] or [failure.code]
    yield deep_steps.degraded(
        "deep_agents_failed",
        ctx.zh,
        cause=("、" if ctx.zh else ", ").join(deep_steps.cause(c, ctx.zh) for c in codes),
    )
    hits = out.hits or []
    if failure.unreachable:
        async for event in deep_steps.excerpts(ctx, hits, failure):
            yield event
        return
    async for event in chain_with_fallbacks(ctx, budget, hits):
        yield event
