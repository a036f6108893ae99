"""The real-model answer evaluation (`careerwise eval answers`).

Each labelled question runs through the real engine (route, flow, provider, search) as a new
conversation, and its events are scored: whether the model searched, whether the gold article was
among the sources, which of the article's key points the answer carries, contradictions, leaks of raw
model output, Simplified characters and mainland vocabulary, and the time to the first visible text and
to the end. The scoring is plain string matching so that a run is cheap to repeat and to audit: a key
point is hit when one of its accepted variants is a substring of the answer (lower case, whitespace
removed).
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from careerwise.events import (
    DeltaEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    ReportEvent,
    RouteEvent,
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


def load_items(path: Path) -> list[AnswerItem]:
    items: list[AnswerItem] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
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
    result = AnswerResult(id=item.id, lang=item.lang, covered=item.covered)
    text: list[str] = []
    sources: list[str] = []
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
            case DeltaEvent():
                if result.first_text_s is None and event.text.strip() and not event.notice:
                    result.first_text_s = time.perf_counter() - started
                if not event.notice:
                    text.append(event.text)
            case ReportEvent():
                if result.first_text_s is None:
                    result.first_text_s = time.perf_counter() - started
                for section in event.sections:
                    text.append(f"\n## {section.heading}\n{section.body}\n")
                    sources.extend(s.id for s in section.sources)
            case DoneEvent():
                result.status, result.usage = event.status, dict(event.usage)
            case ErrorEvent():
                result.error = f"{event.code}: {event.message}"
            case _:
                pass  # progress, degraded and the like do not enter the answer
    result.total_s = time.perf_counter() - started
    answer = "".join(text)
    result.answer = answer
    result.sources = list(dict.fromkeys(sources))
    result.cited_gold = bool(set(item.gold) & set(result.sources))
    flat = normalise(answer)
    for kp in item.key_points:
        (result.points_hit if kp.hit(flat) else result.points_missed).append(kp.point)
    result.contradictions = [c.fact for c in item.must_not if c.found(flat)]
    result.leaks = find_leaks(answer)
    result.simplified = detect_simplified(answer)
    result.mainland = mainland_hits(answer, terms)
    return result


def _pct(values: Sequence[float]) -> float | None:
    return round(100 * statistics.fmean(values), 1) if values else None


def _quantile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    pos = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return round(ordered[pos], 1)


def summarise(results: Sequence[AnswerResult]) -> dict[str, Any]:
    covered = [r for r in results if r.covered]
    uncovered = [r for r in results if not r.covered]
    coverages = [r.coverage for r in covered if r.coverage is not None]
    first_b = [r.first_text_s for r in results if r.first_text_s is not None and not r.searched]
    first_a = [r.first_text_s for r in results if r.first_text_s is not None and r.searched]
    simple = [r.total_s for r in results if r.flow == "career-simple"]
    return {
        "questions": len(results),
        "covered": len(covered),
        "grounded_pct": _pct([float(r.grounded) for r in covered]),
        "key_point_coverage_pct": _pct(coverages),
        "searched_covered_pct": _pct([float(r.searched) for r in covered]),
        "searched_uncovered_pct": _pct([float(r.searched) for r in uncovered]),
        "cited_gold_pct": _pct([float(r.cited_gold) for r in covered]),
        "contradictions": sum(bool(r.contradictions) for r in results),
        "leaks": sum(bool(r.leaks) for r in results),
        "simplified_answers": sum(bool(r.simplified) for r in results),
        "mainland_answers": sum(bool(r.mainland) for r in results),
        "errors": sum(r.status != "ok" for r in results),
        "first_text_b_s": {
            "p50": _quantile(first_b, 0.5),
            "p95": _quantile(first_b, 0.95),
            "n": len(first_b),
        },
        "first_text_a_s": {
            "p50": _quantile(first_a, 0.5),
            "p95": _quantile(first_a, 0.95),
            "n": len(first_a),
        },
        "total_simple_s": {"p50": _quantile(simple, 0.5), "p95": _quantile(simple, 0.95), "n": len(simple)},
    }


def _mark(flag: bool) -> str:
    return "y" if flag else "-"


def format_table(results: Sequence[AnswerResult], summary: dict[str, Any]) -> str:
    rows = [
        "id    lang   cov  route            srch gold points  leak simp main  first   total",
    ]
    for r in results:
        pts = f"{len(r.points_hit)}/{len(r.points_hit) + len(r.points_missed)}" if r.covered else "  -"
        first = f"{r.first_text_s:6.1f}s" if r.first_text_s is not None else "     - "
        route = f"{r.intent}/{r.tier or '-'}"[:16]
        rows.append(
            f"{r.id:<5} {r.lang:<6} {_mark(r.covered):<4} {route:<16} {_mark(r.searched):<4} "
            f"{_mark(r.cited_gold) if r.covered else '-':<4} {pts:<7} {len(r.leaks):<4} "
            f"{len(r.simplified):<4} {len(r.mainland):<4} {first} {r.total_s:6.1f}s"
            + (f"  {r.status}" if r.status != "ok" else "")
        )
    s = summary
    rows += [
        "",
        f"grounded (gold cited, >= 50 % of key points): {s['grounded_pct']} % of {s['covered']} covered",
        f"key-point coverage: {s['key_point_coverage_pct']} %   gold cited: {s['cited_gold_pct']} %",
        f"searched: {s['searched_covered_pct']} % of covered, {s['searched_uncovered_pct']} % of uncovered",
        f"answers with leaks {s['leaks']}, Simplified {s['simplified_answers']}, "
        f"mainland wording {s['mainland_answers']}, contradictions {s['contradictions']}, "
        f"not ok {s['errors']}",
        f"first text, path B: p50 {s['first_text_b_s']['p50']} s p95 {s['first_text_b_s']['p95']} s "
        f"(n={s['first_text_b_s']['n']}); path A: p50 {s['first_text_a_s']['p50']} s "
        f"p95 {s['first_text_a_s']['p95']} s (n={s['first_text_a_s']['n']})",
        f"whole simple answer: p50 {s['total_simple_s']['p50']} s p95 {s['total_simple_s']['p95']} s",
    ]
    return "\n".join(rows) + "\n"


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
