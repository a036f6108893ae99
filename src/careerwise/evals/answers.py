"""The real-model answer evaluation (`careerwise eval answers`).

Each labelled question runs through the real engine (route, flow, provider, search) as a new
conversation, and its events are scored: whether the model searched, whether the gold article was
among the sources, which of the article's key points the answer carries, contradictions, leaks of raw
model output, Simplified characters and mainland vocabulary, and the time to the first visible text and
to the end. The scoring is plain string matching so that a run is cheap to repeat and to audit: a key
point is hit when one of its accepted variants is a substring of the answer (lower case, whitespace
removed).

Questions labelled with a ``tier`` (medium or complex: the deep sets) are also scored with the deep
checks of :mod:`careerwise.evals.deep_checks`, and summarised per tier.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from careerwise.evals import deep_checks
from careerwise.events import (
    QUOTE_PHASE,
    DeltaEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    ReportEvent,
    RouteEvent,
    SectionEvent,
    ToolCallEvent,
    ToolResultEvent,
)

REPO_EVAL_DIR = Path(__file__).resolve().parents[3] / "eval" / "answers"

# Raw model output that must never reach the user: tool calls written as JSON, echoed tool schemas and
# chat-template tokens.
LEAK_PATTERNS: dict[str, re.Pattern[str]] = {
    "json_call": re.compile(r'\{\s*"(name|function|tool|tool_name)"\s*:', re.IGNORECASE),
    "arguments_key": re.compile(r'"(arguments|parameters)"\s*:\s*\{'),
    "schema": re.compile(r'"type"\s*:\s*"(function|object)"'),
    "tools_tag": re.compile(r"</?(tools|tool_call|tool_response)>"),
    "template_token": re.compile(r"<\|(im_start|im_end|endoftext|eot_id|start_header_id)\|>"),
}

_WS = re.compile(r"\s+")


def normalise(text: str) -> str:
    """Lower case without whitespace: what key-point variants and contradiction patterns match against."""
    return _WS.sub("", text).lower()


@dataclass(frozen=True)
class KeyPoint:
    point: str
    variants: tuple[str, ...]

    def hit(self, normalised_answer: str) -> bool:
        return any(normalise(v) in normalised_answer for v in self.variants if v.strip())


@dataclass(frozen=True)
class Contradiction:
    fact: str
    patterns: tuple[str, ...]

    def found(self, normalised_answer: str) -> bool:
        return any(re.search(p, normalised_answer, re.IGNORECASE) for p in self.patterns)


@dataclass(frozen=True)
class AnswerItem:
    id: str
    question: str
    lang: str
    covered: bool
    gold: tuple[str, ...]
    key_points: tuple[KeyPoint, ...]
    must_not: tuple[Contradiction, ...]
    # the deep sets: the question's tier, the articles acceptable to cite, an injection's marker
    tier: str | None = None
    relevant: tuple[str, ...] = ()
    injection_marker: str | None = None

    @property
    def deep(self) -> bool:
        return self.tier in deep_checks.DEEP_TIERS


def load_items(path: Path) -> list[AnswerItem]:
    items: list[AnswerItem] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            tier = raw.get("tier")
            if tier is not None and tier not in deep_checks.DEEP_TIERS:
                raise ValueError(f"tier must be one of {deep_checks.DEEP_TIERS}, not {tier!r}")
            items.append(
                AnswerItem(
                    id=str(raw["id"]),
                    question=str(raw["question"]),
                    lang=str(raw["lang"]),
                    covered=bool(raw["covered"]),
                    gold=tuple(raw.get("gold", [])),
                    key_points=tuple(
                        KeyPoint(point=str(k["point"]), variants=tuple(k["variants"]))
                        for k in raw.get("key_points", [])
                    ),
                    must_not=tuple(
                        Contradiction(fact=str(c["fact"]), patterns=tuple(c["patterns"]))
                        for c in raw.get("must_not", [])
                    ),
                    tier=tier,
                    relevant=tuple(raw.get("relevant", raw.get("gold", []))),
                    injection_marker=raw.get("injection_marker"),
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{path}:{n}: not an answer-evaluation item ({exc})") from exc
    return items


def load_mainland_terms(path: Path) -> list[str]:
    """The first column of a TSV of mainland terms (written by hand, not taken from OpenCC's tables)."""
    terms = []
    for line in path.read_text(encoding="utf-8").splitlines():
        term = line.split("\t", 1)[0].strip()
        if term and not term.startswith("#"):
            terms.append(term)
    return terms


def find_leaks(text: str) -> list[str]:
    return [name for name, pattern in LEAK_PATTERNS.items() if pattern.search(text)]


def mainland_hits(text: str, terms: Iterable[str]) -> list[str]:
    return [t for t in terms if t in text]


def simplified_detector() -> Callable[[str], list[str]]:
    """Characters of ``text`` that exist only in Simplified Chinese.

    A character is Simplified-only when OpenCC's Traditional->Simplified conversion leaves it as it is
    and the Simplified->Traditional one changes it; characters standard in both scripts that s2t still
    rewrites (后, 里, 台 ...) are listed in :data:`SHARED_CHARACTERS`.
    """
    import opencc

    s2t = opencc.OpenCC("s2tw")
    t2s = opencc.OpenCC("tw2s")
    cache: dict[str, bool] = {}

    def simplified_only(ch: str) -> bool:
        if ch not in cache:
            cache[ch] = ch not in SHARED_CHARACTERS and t2s.convert(ch) == ch and s2t.convert(ch) != ch
        return cache[ch]

    def detect(text: str) -> list[str]:
        return [ch for ch in text if "\u4e00" <= ch <= "\u9fff" and simplified_only(ch)]

    return detect


# Characters standard in Taiwan's Traditional Chinese too, though s2tw rewrites them out of context
# (后 in 皇后, 里 in 公里, 干 in 干擾, 占 in 占卜 ...). Characters used in Taiwan only in rare words (历, 复,
# 适, 须, 据, 丰, 着) are not here: in an answer they are Simplified.
SHARED_CHARACTERS = frozenset("后里干台余范划占斗准朴征游采尸雇伙")


@dataclass
class AnswerResult:
    id: str
    lang: str
    covered: bool
    intent: str = ""
    tier: str | None = None
    flow: str = ""
    searched: bool = False
    queries: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    cited_gold: bool = False
    points_hit: list[str] = field(default_factory=list)
    points_missed: list[str] = field(default_factory=list)
    # key points in the model's own text, leaving out the articles' quoted sentences (a phase-2 delta)
    points_in_model_text: list[str] = field(default_factory=list)
    first_model_text_s: float | None = None
    quoted: bool = False  # the answer began with the articles' quoted sentences
    contradictions: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    simplified: list[str] = field(default_factory=list)
    mainland: list[str] = field(default_factory=list)
    first_text_s: float | None = None
    total_s: float = 0.0
    status: str = ""
    error: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    answer: str = ""
    # the deep checks (None / empty on a question without a tier): see careerwise.evals.deep_checks
    question_tier: str | None = None
    path: str | None = None
    first_section_s: float | None = None
    cited: list[str] = field(default_factory=list)
    off_domain: list[str] = field(default_factory=list)
    invented_statements: list[str] = field(default_factory=list)
    duplicate_items: list[str] = field(default_factory=list)
    duplicate_citations: list[str] = field(default_factory=list)
    echoed_injection: list[str] = field(default_factory=list)

    @property
    def coverage(self) -> float | None:
        total = len(self.points_hit) + len(self.points_missed)
        return len(self.points_hit) / total if total else None

    @property
    def grounded(self) -> bool:
        """Cited the gold article and carried at least half of its key points."""
        return self.cited_gold and (self.coverage or 0.0) >= 0.5

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["coverage"] = self.coverage
        out["grounded"] = self.grounded
        return out


async def score_events(
    item: AnswerItem,
    events: AsyncIterator[Event],
    *,
    started: float,
    terms: Sequence[str],
    detect_simplified: Callable[[str], list[str]],
) -> AnswerResult:
    """Read one turn's events to the end and score the answer they make."""
    result = AnswerResult(id=item.id, lang=item.lang, covered=item.covered, question_tier=item.tier)
    text: list[str] = []
    model_text: list[str] = []
    sources: list[str] = []
    tool_sources: list[str] = []
    report: list[tuple[str, str, list[str]]] | None = None
    streamed_sections: dict[int, tuple[str, str, list[str]]] = {}
    first_delta_s: float | None = None
    report_s: float | None = None
    async for event in events:
        match event:
            case RouteEvent():
                result.intent, result.tier, result.flow = event.intent, event.tier, event.flow
            case ToolCallEvent():
                result.searched = True
                query = event.effective_arguments.get("query") or event.requested_arguments.get("query")
                if query:
                    result.queries.append(str(query))
            case ToolResultEvent():
                sources.extend(s.id for s in event.sources)
                tool_sources.extend(s.id for s in event.sources)
            case DeltaEvent():
                if first_delta_s is None and event.text.strip() and not event.notice:
                    first_delta_s = time.perf_counter() - started
                if result.first_text_s is None and event.text.strip() and not event.notice:
                    result.first_text_s = first_delta_s
                if not event.notice:
                    text.append(event.text)
                if event.phase == QUOTE_PHASE:
                    result.quoted = True
                elif not event.notice:
                    model_text.append(event.text)
                    if result.first_model_text_s is None and event.text.strip():
                        result.first_model_text_s = time.perf_counter() - started
            case SectionEvent():  # a deep report's first section is its first text on the page
                if result.first_text_s is None:
                    result.first_text_s = time.perf_counter() - started
                if result.first_section_s is None:
                    result.first_section_s = time.perf_counter() - started
                streamed_sections[event.index] = (event.heading, event.body, [s.id for s in event.sources])
                sources.extend(s.id for s in event.sources)
            case ReportEvent():
                report_s = time.perf_counter() - started
                if result.first_text_s is None:
                    result.first_text_s = report_s
                report = [(sec.heading, sec.body, [s.id for s in sec.sources]) for sec in event.sections]
                for section in event.sections:
                    text.append(f"\n## {section.heading}\n{section.body}\n")
                    sources.extend(s.id for s in section.sources)
            case DoneEvent():
                result.status, result.usage = event.status, dict(event.usage)
                result.path = event.path
            case ErrorEvent():
                result.error = f"{event.code}: {event.message}"
            case _:
                pass  # progress, degraded and the like do not enter the answer
    result.total_s = time.perf_counter() - started
    answer = "".join(text)
    if item.deep:
        # The deep answer is the report's sections; the sections streamed before it when the report
        # never came; the streamed text when the flow fell back to a plain answer.
        shown = report if report is not None else [streamed_sections[i] for i in sorted(streamed_sections)]
        if shown:
            answer = "".join(f"\n## {heading}\n{body}\n" for heading, body, _ in shown)
            result.cited = list(dict.fromkeys(i for _, _, ids in shown for i in ids))
        else:
            answer = "".join(text)
            result.cited = list(dict.fromkeys(tool_sources))
        if result.first_section_s is None:
            result.first_section_s = first_delta_s if first_delta_s is not None else report_s
        result.off_domain = deep_checks.off_domain_citations(result.cited, item.relevant)
        result.duplicate_citations = deep_checks.duplicate_citations([ids for _, _, ids in shown])
        result.invented_statements = deep_checks.invented_user_statements(answer, item.question)
        result.duplicate_items = deep_checks.duplicate_list_items(answer)
        result.echoed_injection = deep_checks.echoed_injection(answer, item.injection_marker)
    result.answer = answer
    result.sources = list(dict.fromkeys(sources))
    result.cited_gold = bool(set(item.gold) & set(result.sources))
    flat = normalise(answer)
    own = normalise("".join(model_text)) if not item.deep else flat
    for kp in item.key_points:
        (result.points_hit if kp.hit(flat) else result.points_missed).append(kp.point)
        if kp.hit(own):
            result.points_in_model_text.append(kp.point)
    result.contradictions = [c.fact for c in item.must_not if c.found(flat)]
    result.leaks = find_leaks(answer)
    result.simplified = detect_simplified(answer)
    result.mainland = mainland_hits(answer, terms)
    return result


async def fresh_process(command: Sequence[str], message: str) -> AsyncIterator[Event]:
    """One question in a new ``careerwise chat --json`` process: its events as they are printed, so the
    first text is timed from the start of the process (model load included)."""
    import asyncio

    from careerwise.events import EVENT_ADAPTER

    proc = await asyncio.create_subprocess_exec(
        *command, message, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    assert proc.stdout is not None
    try:
        async for raw in proc.stdout:
            line = raw.decode("utf-8").strip()
            if line.startswith("{"):
                yield EVENT_ADAPTER.validate_json(line)
    finally:
        if proc.returncode is None:
            await proc.wait()
