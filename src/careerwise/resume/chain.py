"""The resume review chain: structure, score against Summer's advice, rewrite the weakest lines.

1. **Structure** — the model maps the numbered (contact-masked) lines to sections as strict JSON, checked by
   Pydantic (one retry with the error). If that fails, headings decide (``resume_structure_fallback``).
2. **Score** — Summer's resume articles are searched (one batched call, domain ``resume``) and the model
   scores each section 1–5 on quantified achievements, relevance to the target role, wording and length,
   citing the passages. If that fails, rules score (``resume_scoring_fallback``); the contact block is
   always scored by rules, on completeness.
3. **Rewrite** — the weakest lines (the model's pick, else the rules') are rewritten: original → rewrite →
   why. A rewrite that invents a figure or names something the resume does not is dropped; if the step
   fails, the weakest lines are listed without rewrites (``resume_rewrites_failed``).

The answer is one :class:`ReportEvent` (``path="resume"``), with a 「與上一版比較」 section when an earlier
review of the same owner exists. Every step runs under the deep answers' deadlines
(``deep_step_timeout`` each, ``deep_turn_timeout`` in all) and reports progress.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from careerwise.events import DegradedEvent, Event, ProgressEvent, ReportEvent
from careerwise.flows import _deep
from careerwise.flows._deep import Budget, Emit, StepFailed
from careerwise.flows.base import FlowContext
from careerwise.knowledge.index import Hit
from careerwise.llm.types import ChatMessage
from careerwise.resume import prompts as P
from careerwise.resume.contact import ContactSummary
from careerwise.resume.report import PreviousReview, Rewrite, build_report
from careerwise.resume.scoring import (
    RewritesOutput,
    ScoringOutput,
    SectionScore,
    rewritable_lines,
    rewrite_problem,
    rewrites_model,
    rule_score,
    scoring_model,
    weakest_lines,
)
from careerwise.resume.structure import ResumeStructure, by_headings, from_layout, layout_model, numbered

log = logging.getLogger(__name__)

STRUCTURE_MAX_TOKENS = 300
SCORING_MAX_TOKENS = 900
REWRITE_MAX_TOKENS = 700
TEMPERATURE = 0.3
PASSAGES_PER_QUERY = 2
MAX_REWRITES = 3


@dataclass(frozen=True)
class ReviewRequest:
    text: str  # contact details already masked
    contact: ContactSummary
    zh: bool
    target_role: str | None = None
    previous: PreviousReview | None = None


@dataclass
class ReviewResult:
    structure: ResumeStructure | None = None
    scores: dict[str, SectionScore] = field(default_factory=dict)
    scoring_source: str = "rules"
    rewrites: list[Rewrite] = field(default_factory=list)
    hits: list[Hit] = field(default_factory=list)
    report: ReportEvent | None = None
    degraded: list[str] = field(default_factory=list)

    @property
    def overall(self) -> float:
        if not self.scores:
            return 0.0
        return round(sum(s.score for s in self.scores.values()) / len(self.scores), 1)

    def score_map(self) -> dict[str, int]:
        return {k: s.score for k, s in self.scores.items()}


def _degraded(result: ReviewResult, emit: Emit, reason: str, zh: bool, **values: str) -> None:
    result.degraded.append(reason)
    pair = P.DEGRADED[reason]
    emit(DegradedEvent(reason=reason, message=(pair[0] if zh else pair[1]).format(**values)))


async def _structure(
    ctx: FlowContext, req: ReviewRequest, budget: Budget, emit: Emit, result: ReviewResult
) -> ResumeStructure:
    emit(ProgressEvent(stage="chain_step", detail="resume: structure"))
    lines = req.text.split("\n")
    try:
        layout = await _deep.ask_json(
            ctx,
            [
                ChatMessage(role="system", content=P.STRUCTURE_ZH if req.zh else P.STRUCTURE_EN),
                ChatMessage(role="user", content=numbered(lines)),
            ],
            layout_model(len(lines)),
            temperature=TEMPERATURE,
            max_tokens=STRUCTURE_MAX_TOKENS,
            budget=budget,
            label="resume_structure",
            emit=emit,
        )
        structure = from_layout(req.text, layout)
        if not structure.present():
            raise StepFailed("empty", "the layout covers no text")
        return structure
    except StepFailed as failure:
        log.warning("resume: the structure step failed (%s); using the headings", failure)
        _degraded(result, emit, "resume_structure_fallback", req.zh, cause=_deep.cause(failure.code, req.zh))
        if failure.unreachable:
            raise
        return by_headings(req.text)


async def _search(ctx: FlowContext, req: ReviewRequest, emit: Emit, result: ReviewResult) -> list[Hit]:
    kb = ctx.kb
    if kb is None or not kb.available:
        _degraded(result, emit, "resume_knowledge_unavailable", req.zh)
        return []
    queries = list(P.QUERIES_ZH if req.zh else P.QUERIES_EN)
    if req.target_role:
        queries.append(f"{req.target_role} {'履歷' if req.zh else 'resume'}")
    emit(ProgressEvent(stage="chain_step", detail=f"resume: knowledge ({' | '.join(queries)})"))
    t0 = time.perf_counter()
    try:
        found = await kb.search_many(
            queries,
            top_k=PASSAGES_PER_QUERY,
            candidates=max(ctx.settings.rerank_candidates, PASSAGES_PER_QUERY),
            domains=[["resume"]] * len(queries),
        )
    except Exception:
        log.exception("resume: the knowledge search failed")
        _degraded(result, emit, "resume_knowledge_unavailable", req.zh)
        return []
    finally:
        ctx.state.timings["resume_search_ms"] = 1000 * (time.perf_counter() - t0)
    best: dict[int, Hit] = {}
    for res in found:
        for h in res.hits[:PASSAGES_PER_QUERY]:
            best.setdefault(h.chunk.id, h)
    return list(best.values())


def _sections_input(structure: ResumeStructure, kinds: list[str]) -> str:
    blocks = []
    for kind in kinds:
        rows = [f"L{i + 1}: {structure.lines[i]}" for i in structure.sections.get(kind, [])]
        blocks.append(f"[{kind}]\n" + "\n".join(r for r in rows if r.split(": ", 1)[1].strip()))
    return "\n\n".join(blocks)


def _role_line(req: ReviewRequest) -> str:
    if req.zh:
        return (
            f"目標職位：{req.target_role}" if req.target_role else "目標職位：未提供（依履歷本身的方向判斷）"
        )
    return (
        f"Target role: {req.target_role}"
        if req.target_role
        else "Target role: not given (judge by the direction of the resume)"
    )


async def _score(
    ctx: FlowContext,
    req: ReviewRequest,
    structure: ResumeStructure,
    hits: list[Hit],
    budget: Budget,
    emit: Emit,
    result: ReviewResult,
) -> list[int]:
    """Fills ``result.scores``; returns the weakest lines (0-based) the model named."""
    kinds = [k for k in structure.present() if k != "contact"]
    scores = {
        k: rule_score(k, structure.text(k), role=req.target_role, contact=req.contact)
        for k in structure.present()
    }
    if "contact" not in scores:
        scores["contact"] = rule_score("contact", "", role=None, contact=req.contact)
    result.scores = {k: scores[k] for k in (*structure.present(), "contact") if k in scores}
    if not kinds:
        return []
    emit(ProgressEvent(stage="chain_step", detail=f"resume: scoring {', '.join(kinds)}"))
    model = scoring_model(kinds, rewritable_lines(structure))
    try:
        scored: ScoringOutput = await _deep.ask_json(
            ctx,
            [
                ChatMessage(role="system", content=P.SCORING_ZH if req.zh else P.SCORING_EN),
                ChatMessage(
                    role="user",
                    content=f"{_role_line(req)}\n\n{P.passages_block(hits, req.zh)}\n\n"
                    + _sections_input(structure, kinds),
                ),
            ],
            model,
            temperature=TEMPERATURE,
            max_tokens=SCORING_MAX_TOKENS,
            budget=budget,
            label="resume_scoring",
            emit=emit,
        )
    except StepFailed as failure:
        log.warning("resume: the scoring step failed (%s); scoring by rules", failure)
        _degraded(result, emit, "resume_scoring_fallback", req.zh, cause=_deep.cause(failure.code, req.zh))
        if failure.unreachable:
            raise
        return []
    for s in scored.sections:
        if s.section in kinds:
            result.scores[s.section] = s.model_copy(update={"completeness": None})
    result.scoring_source = "llm"
    return [int(i[1:]) - 1 for i in dict.fromkeys(scored.weakest)]


async def _rewrite(
    ctx: FlowContext,
    req: ReviewRequest,
    structure: ResumeStructure,
    lines: list[int],
    hits: list[Hit],
    budget: Budget,
    emit: Emit,
    result: ReviewResult,
) -> None:
    if not lines:
        return
    emit(ProgressEvent(stage="chain_step", detail=f"resume: rewriting {len(lines)} line(s)"))
    asked = {f"L{i + 1}": i for i in lines}
    body = "\n".join(f"{key}: {structure.lines[i]}" for key, i in asked.items())
    try:
        out: RewritesOutput = await _deep.ask_json(
            ctx,
            [
                ChatMessage(role="system", content=P.REWRITE_ZH if req.zh else P.REWRITE_EN),
                ChatMessage(
                    role="user", content=f"{_role_line(req)}\n\n{P.passages_block(hits, req.zh)}\n\n{body}"
                ),
            ],
            rewrites_model(set(asked)),
            temperature=TEMPERATURE,
            max_tokens=REWRITE_MAX_TOKENS,
            budget=budget,
            label="resume_rewrites",
            emit=emit,
        )
    except StepFailed as failure:
        log.warning("resume: the rewrite step failed (%s)", failure)
        _degraded(result, emit, "resume_rewrites_failed", req.zh, cause=_deep.cause(failure.code, req.zh))
        result.rewrites = [Rewrite(original=structure.lines[i].strip()) for i in lines]
        return
    dropped: list[str] = []
    for item in out.rewrites:
        original = structure.lines[asked[item.line]].strip()
        problem = rewrite_problem(original, item.rewrite, resume=req.text, role=req.target_role)
        if problem is not None:
            dropped.append(f"{item.line}: {problem}")
            continue
        if all(r.original != original for r in result.rewrites):
            result.rewrites.append(Rewrite(original=original, rewrite=item.rewrite, why=item.why))
    if dropped:
        log.info("resume: dropped rewrites: %s", "; ".join(dropped))
        emit(
            ProgressEvent(stage="chain_step", detail=f"resume: dropped {len(dropped)} rewrite(s): {dropped}")
        )
    shown = {r.original for r in result.rewrites}
    result.rewrites.extend(
        Rewrite(original=structure.lines[i].strip()) for i in lines if structure.lines[i].strip() not in shown
    )


async def run_review(ctx: FlowContext, req: ReviewRequest, emit: Emit, result: ReviewResult) -> None:
    """The three steps; emits progress, degraded notices and the report. When the model is unreachable
    the later model steps are skipped (they would fail the same way) and rules carry the review."""
    budget = _deep.budget_for(ctx)
    reachable = True
    try:
        structure = await _structure(ctx, req, budget, emit, result)
    except StepFailed:
        reachable, structure = False, by_headings(req.text)
    result.structure = structure
    hits = await _search(ctx, req, emit, result)
    result.hits = hits
    named: list[int] = []
    if reachable:
        try:
            named = await _score(ctx, req, structure, hits, budget, emit, result)
        except StepFailed:
            reachable = False
    else:
        await _score_by_rules(req, structure, emit, result)
    lines = named[:MAX_REWRITES] or weakest_lines(structure, limit=MAX_REWRITES)
    if reachable:
        await _rewrite(ctx, req, structure, lines, hits, budget, emit, result)
    else:
        _degraded(
            result, emit, "resume_rewrites_failed", req.zh, cause=_deep.cause("llm_unavailable", req.zh)
        )
        result.rewrites = [Rewrite(original=structure.lines[i].strip()) for i in lines]
    result.report = build_report(
        structure=structure,
        scores=result.scores,
        scoring_source=result.scoring_source,
        overall=result.overall,
        rewrites=result.rewrites,
        hits=hits,
        contact=req.contact,
        target_role=req.target_role,
        previous=req.previous,
        zh=req.zh,
    )
    emit(result.report)


async def _score_by_rules(
    req: ReviewRequest, structure: ResumeStructure, emit: Emit, result: ReviewResult
) -> None:
    kinds = [*structure.present(), *(["contact"] if "contact" not in structure.present() else [])]
    result.scores = {
        k: rule_score(k, structure.text(k), role=req.target_role, contact=req.contact) for k in kinds
    }
    _degraded(result, emit, "resume_scoring_fallback", req.zh, cause=_deep.cause("llm_unavailable", req.zh))


async def review_events(ctx: FlowContext, req: ReviewRequest, result: ReviewResult) -> AsyncIterator[Event]:
    """The review as a stream of events (progress as it happens, the report last)."""
    ctx.state.path = "resume"

    async def run(emit: Emit) -> None:
        await run_review(ctx, req, emit, result)

    async for event in _deep.pump(run):
        yield event
