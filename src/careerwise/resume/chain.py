"""The resume review chain: structure, score against Summer's advice, rewrite the weakest lines.

1. **Structure** — headings (on their own line or sharing it, ``Skills: …``) or, without them, each
   line's content cues; only when those find fewer than two sections besides the contact block does the
   model label the resume's numbered blocks (JSON constrained by a schema). If that fails, the cues stand
   (``resume_structure_fallback``).
2. **Score** — Summer's resume articles are searched (one batched call, domain ``resume``) and the model
   judges each section's relevance and wording with a comment citing the passages, in JSON constrained by
   a schema (one object per section, in order, scores 1–5); rules count ``quantified`` and ``length``. If
   the model fails, rules score everything (``resume_scoring_fallback``); the contact block is always
   scored by rules, on completeness. A resume without one quantified achievement is capped.
3. **Rewrite** — the weakest lines (picked by rules) are rewritten by the model, one JSON item per line in
   order. A figure the line does not state becomes ``[X]``; a rewrite that still invents one or names
   something the resume does not is replaced by the rules' template, as is every line when the step fails
   (``resume_rewrites_failed``). So every review shows rewrites of its weakest lines. The line's section
   decides whether a missing result is asked for: an experience line's is, a summary line's never.

The answer is one :class:`ReportEvent` (``path="resume"``), with a 「與上一版比較」 section when an earlier
review of the same owner exists. Every step runs under the deep answers' deadlines
(``deep_step_timeout`` each, ``deep_turn_timeout`` in all) and reports progress.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from careerwise.errors import StepFailed
from careerwise.events import DegradedEvent, Event, ProgressEvent, ReportEvent
from careerwise.flows import deep_steps
from careerwise.flows.base import FlowContext
from careerwise.flows.deep_steps import Budget, Emit
from careerwise.knowledge.index import Hit
from careerwise.llm.types import ChatMessage
from careerwise.resume import prompts as P
from careerwise.resume.contact import ContactSummary
from careerwise.resume.report import PreviousReview, build_report
from careerwise.resume.rewrites import (
    Rewrite,
    RewritesOutput,
    placeholder_figures,
    rewrite_problem,
    rewrites_model,
    rewrites_schema,
    template_rewrite,
    with_result_placeholder,
)
from careerwise.resume.scoring import (
    NO_NUMBERS_OVERALL,
    ScoringOutput,
    SectionScore,
    has_quantified_achievement,
    merge_scores,
    penalise_no_numbers,
    rule_score,
    scoring_model,
    scoring_schema,
    weakest_lines,
)
from careerwise.resume.structure import (
    ResumeStructure,
    blocks,
    confident,
    detect_sections,
    from_labels,
    labels_model,
    labels_schema,
    numbered_blocks,
)

log = logging.getLogger(__name__)

STRUCTURE_MAX_TOKENS = 200
SCORING_MAX_TOKENS = 700
REWRITE_MAX_TOKENS = 700
TEMPERATURE = 0.3
PASSAGES_PER_QUERY = 1
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
    unquantified: bool = False  # no quantified achievement anywhere: the overall is capped

    @property
    def overall(self) -> float:
        if not self.scores:
            return 0.0
        mean = round(sum(s.score for s in self.scores.values()) / len(self.scores), 1)
        return min(mean, NO_NUMBERS_OVERALL) if self.unquantified else mean


def _degraded(result: ReviewResult, emit: Emit, reason: str, zh: bool, **values: str) -> None:
    result.degraded.append(reason)
    pair = P.DEGRADED[reason]
    emit(DegradedEvent(reason=reason, message=(pair[0] if zh else pair[1]).format(**values)))


async def _structure(
    ctx: FlowContext, req: ReviewRequest, budget: Budget, emit: Emit, result: ReviewResult
) -> ResumeStructure:
    """Headings or content cues; the model labels the blocks only when those find too little."""
    found = detect_sections(req.text)
    if confident(found):
        return found
    emit(ProgressEvent(stage="chain_step", detail="resume: structure"))
    lines = req.text.split("\n")
    runs = blocks(lines)
    try:
        labels = await deep_steps.ask_json(
            ctx,
            [
                ChatMessage(role="system", content=P.STRUCTURE_ZH if req.zh else P.STRUCTURE_EN),
                ChatMessage(role="user", content=numbered_blocks(lines, runs)),
            ],
            labels_model(len(runs)),
            json_schema=labels_schema(len(runs)),
            temperature=TEMPERATURE,
            max_tokens=STRUCTURE_MAX_TOKENS,
            budget=budget,
            label="resume_structure",
            emit=emit,
        )
        structure = from_labels(req.text, runs, labels)
        if not structure.present():
            raise StepFailed("empty", "the labels cover no text")
        return structure
    except (StepFailed, ValueError) as failure:
        log.warning("resume: the structure step failed (%s); using the headings and content cues", failure)
        code = failure.code if isinstance(failure, StepFailed) else "invalid_json"
        _degraded(result, emit, "resume_structure_fallback", req.zh, cause=deep_steps.cause(code, req.zh))
        if isinstance(failure, StepFailed) and failure.unreachable:
            raise
        return found


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
    return "\n\n".join(f"[{kind}]\n{structure.text(kind)}" for kind in kinds)


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


def _rule_scores(req: ReviewRequest, structure: ResumeStructure) -> dict[str, SectionScore]:
    kinds = [*structure.present(), *(["contact"] if "contact" not in structure.present() else [])]
    return {k: rule_score(k, structure.text(k), role=req.target_role, contact=req.contact) for k in kinds}


async def _score(
    ctx: FlowContext,
    req: ReviewRequest,
    structure: ResumeStructure,
    hits: list[Hit],
    budget: Budget,
    emit: Emit,
    result: ReviewResult,
) -> None:
    """Fills ``result.scores``: the rules' counts, the model's judgement where it gave one."""
    result.scores = _rule_scores(req, structure)
    kinds = [k for k in structure.present() if k != "contact"]
    if not kinds:
        return
    emit(ProgressEvent(stage="chain_step", detail=f"resume: scoring {', '.join(kinds)}"))
    try:
        scored: ScoringOutput = await deep_steps.ask_json(
            ctx,
            [
                ChatMessage(role="system", content=P.SCORING_ZH if req.zh else P.SCORING_EN),
                ChatMessage(
                    role="user",
                    content=f"{_role_line(req)}\n\n{P.passages_block(hits, req.zh)}\n\n"
                    + _sections_input(structure, kinds),
                ),
            ],
            scoring_model(kinds, role=bool(req.target_role)),
            json_schema=scoring_schema(kinds, role=bool(req.target_role), zh=req.zh),
            temperature=TEMPERATURE,
            max_tokens=SCORING_MAX_TOKENS,
            budget=budget,
            label="resume_scoring",
            emit=emit,
        )
    except StepFailed as failure:
        log.warning("resume: the scoring step failed (%s); scoring by rules", failure)
        _degraded(
            result, emit, "resume_scoring_fallback", req.zh, cause=deep_steps.cause(failure.code, req.zh)
        )
        raise
    for s in scored.sections:
        if s.section in kinds:
            result.scores[s.section] = merge_scores(s, result.scores[s.section])
    result.scoring_source = "llm"


def _guarded(
    req: ReviewRequest, original: str, rewrite: str, why: str, dropped: list[str], *, kind: str | None
) -> Rewrite:
    """The model's rewrite with its unknown figures made ``[X]`` (and, for an achievement line, a result
    to fill in when it states none); the rules' template of the line's section when it still cannot be
    shown (the reason is kept for the log and the progress event)."""
    hidden = with_result_placeholder(placeholder_figures(rewrite, original), req.zh, kind=kind)
    problem = rewrite_problem(original, hidden, resume=req.text, role=req.target_role)
    if problem is None:
        # a reason that states a figure the line does not is no reason: the rules' reason instead
        if deep_steps.numbers(why) - deep_steps.numbers(original) or why.strip() == rewrite.strip():
            why = template_rewrite(original, req.zh, kind=kind).why
        return Rewrite(original=original, rewrite=hidden, why=why)
    dropped.append(f"{original[:40]}: {problem}")
    return template_rewrite(original, req.zh, kind=kind)


async def _rewrite(
    ctx: FlowContext,
    req: ReviewRequest,
    structure: ResumeStructure,
    lines: list[int],
    budget: Budget,
    emit: Emit,
    result: ReviewResult,
) -> None:
    if not lines:
        return
    originals = [structure.lines[i].strip() for i in lines]
    kinds = [structure.kind_of(i) for i in lines]  # the section decides whether a result is asked for
    emit(ProgressEvent(stage="chain_step", detail=f"resume: rewriting {len(lines)} line(s)"))
    body = "\n".join(f"{n}. {line}" for n, line in enumerate(originals, 1))
    try:
        out: RewritesOutput = await deep_steps.ask_json(
            ctx,
            [
                ChatMessage(role="system", content=P.REWRITE_ZH if req.zh else P.REWRITE_EN),
                ChatMessage(role="user", content=f"{_role_line(req)}\n\n{body}" if req.target_role else body),
            ],
            rewrites_model(len(originals)),
            json_schema=rewrites_schema(len(originals)),
            temperature=TEMPERATURE,
            max_tokens=REWRITE_MAX_TOKENS,
            budget=budget,
            label="resume_rewrites",
            emit=emit,
        )
    except StepFailed as failure:
        log.warning("resume: the rewrite step failed (%s); rule templates instead", failure)
        _degraded(
            result, emit, "resume_rewrites_failed", req.zh, cause=deep_steps.cause(failure.code, req.zh)
        )
        result.rewrites = [
            template_rewrite(line, req.zh, kind=k) for line, k in zip(originals, kinds, strict=True)
        ]
        return
    dropped: list[str] = []
    result.rewrites = []
    for original, kind, item in zip(originals, kinds, out.rewrites, strict=True):
        if any(item.rewrite == r.rewrite for r in result.rewrites):  # one sentence for several lines
            dropped.append(f"{original[:40]}: the same rewrite as another line")
            result.rewrites.append(template_rewrite(original, req.zh, kind=kind))
        else:
            result.rewrites.append(_guarded(req, original, item.rewrite, item.why, dropped, kind=kind))
    if dropped:
        log.info("resume: rewrites replaced by templates: %s", "; ".join(dropped))
        emit(
            ProgressEvent(
                stage="chain_step",
                detail=f"resume: {len(dropped)} rewrite(s) replaced by a template: {dropped}",
            )
        )


async def run_review(ctx: FlowContext, req: ReviewRequest, emit: Emit, result: ReviewResult) -> None:
    """The three steps; emits progress, degraded notices and the report. When the model is unreachable
    the later model steps are skipped (they would fail the same way) and rules carry the review."""
    budget = deep_steps.budget_for(ctx)
    reachable = True
    try:
        structure = await _structure(ctx, req, budget, emit, result)
    except StepFailed:
        reachable, structure = False, detect_sections(req.text)
    result.structure = structure
    hits = await _search(ctx, req, emit, result)
    result.hits = hits
    if reachable:
        try:
            await _score(ctx, req, structure, hits, budget, emit, result)
        except StepFailed as failure:
            reachable = not failure.unreachable
    else:
        result.scores = _rule_scores(req, structure)
        _degraded(
            result, emit, "resume_scoring_fallback", req.zh, cause=deep_steps.cause("llm_unavailable", req.zh)
        )
    result.unquantified = not has_quantified_achievement(structure)
    if result.unquantified:
        penalise_no_numbers(result.scores)
    lines = weakest_lines(structure, limit=MAX_REWRITES)
    if reachable:
        await _rewrite(ctx, req, structure, lines, budget, emit, result)
    else:
        _degraded(
            result, emit, "resume_rewrites_failed", req.zh, cause=deep_steps.cause("llm_unavailable", req.zh)
        )
        result.rewrites = [
            template_rewrite(structure.lines[i], req.zh, kind=structure.kind_of(i)) for i in lines
        ]
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
        unquantified=result.unquantified,
    )
    emit(result.report)


async def review_events(ctx: FlowContext, req: ReviewRequest, result: ReviewResult) -> AsyncIterator[Event]:
    """The review as a stream of events (progress as it happens, the report last)."""
    ctx.state.path = "resume"

    async def run(emit: Emit) -> None:
        await run_review(ctx, req, emit, result)

    async for event in deep_steps.pump(run):
        yield event
