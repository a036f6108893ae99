"""The resume review evaluation (`careerwise eval resumes`) on the labelled set in ``eval/resumes``.

Each file goes through the real upload path (extraction in a worker, contact masking, the review chain on
the configured provider, storage) as a new conversation, and its events are scored:

* **completed without the rule fallback** — a report came and no step fell back to rules: no
  ``resume_structure_fallback``, ``resume_scoring_fallback`` or ``resume_rewrites_failed`` notice;
* **section detection** — the sections the report scores against the labelled ones, per resume and kind
  (summary, experience, skills, education: the contact block is scored on every resume by design, so it
  says nothing); the offline part (``--offline``) checks the deterministic detection on all five kinds
  without any model call;
* **rewrites** — how many reviews show at least one rewrite, and the figures the rewrites state that the
  resume does not (invented figures; the goal is 0);
* **scores** — the overall score of the resumes without numbers beside those with numbers;
* **time** — p50 and p95 of a review's wall time.
"""

from __future__ import annotations

import json
import re
import sqlite3
import statistics
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from careerwise.events import DegradedEvent, ErrorEvent, ReportEvent
from careerwise.flows import fact_checks
from careerwise.resume.service import prepare
from careerwise.resume.structure import KINDS, LABELS, detect_sections, looks_like_resume

REPO_EVAL_DIR = Path(__file__).resolve().parents[3] / "eval" / "resumes"
SCORED_KINDS = ("summary", "experience", "skills", "education")
FALLBACKS = ("resume_structure_fallback", "resume_scoring_fallback", "resume_rewrites_failed")
_HEADING = re.compile(r"^(?P<label>.+?) (?P<score>[1-5])/5$")
_OVERALL = re.compile(r"(?:整體分數：|Overall score: )(?P<score>\d+(?:\.\d+)?) / 5")
_REWRITE = re.compile(r"^\s*(?:改寫：|Rewrite: )(?P<text>.+)$", re.MULTILINE)
_KIND_BY_LABEL = {name: kind for kind, pair in LABELS.items() for name in pair}


@dataclass(frozen=True)
class ResumeItem:
    file: str
    lang: str
    sections: frozenset[str]
    kinds: tuple[str, ...]
    figures: tuple[str, ...]

    @property
    def has_numbers(self) -> bool:
        return bool(self.figures)


def scratch_database(url: str, folder: Path) -> str | None:
    """A copy of a SQLite database in ``folder`` (its knowledge base included, so nothing is embedded
    again) and the URL to it; None for any other database (the evaluation then writes to it)."""
    prefix = "sqlite+aiosqlite:///"
    if not url.startswith(prefix):
        return None
    source = Path(url[len(prefix) :])
    if not source.is_file():
        return None
    target = folder / "eval.db"
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    return f"{prefix}{target}"


def load_items(path: Path) -> list[ResumeItem]:
    items = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        unknown = set(row["sections"]) - set(KINDS)
        if unknown:
            raise ValueError(f"{path}:{n}: unknown sections {sorted(unknown)}")
        items.append(
            ResumeItem(
                file=row["file"],
                lang=row["lang"],
                sections=frozenset(row["sections"]),
                kinds=tuple(row.get("kinds", ())),
                figures=tuple(row.get("figures", ())),
            )
        )
    return items


@dataclass
class ResumeResult:
    file: str
    completed: bool = False
    fallbacks: list[str] = field(default_factory=list)
    error: str | None = None
    detected: list[str] = field(default_factory=list)
    section_hits: int = 0
    section_total: int = 0
    rewrites: list[str] = field(default_factory=list)
    invented: list[str] = field(default_factory=list)
    overall: float | None = None
    has_numbers: bool = True
    seconds: float = 0.0

    @property
    def without_fallback(self) -> bool:
        return self.completed and not self.fallbacks

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "without_fallback": self.without_fallback}


def report_kinds(report: ReportEvent) -> set[str]:
    """The resume sections a report scores (its ``<label> n/5`` headings)."""
    found = set()
    for section in report.sections:
        m = _HEADING.match(section.heading)
        if m and m.group("label") in _KIND_BY_LABEL:
            found.add(_KIND_BY_LABEL[m.group("label")])
    return found


def report_rewrites(report: ReportEvent) -> list[str]:
    return [m.group("text").strip() for s in report.sections for m in _REWRITE.finditer(s.body)]


def report_overall(report: ReportEvent) -> float | None:
    for section in report.sections:
        m = _OVERALL.search(section.body)
        if m:
            return float(m.group("score"))
    return None


def invented_figures(rewrite: str, resume_text: str) -> list[str]:
    """Figures a rewrite states that appear nowhere in the resume (placeholders such as ``[X]%`` carry
    no figure)."""
    return sorted(fact_checks.numbers(rewrite) - fact_checks.all_numbers(resume_text))


def section_score(item: ResumeItem, detected: set[str], kinds: Sequence[str]) -> tuple[int, int]:
    hits = sum((k in detected) == (k in item.sections) for k in kinds)
    return hits, len(kinds)


async def score_events(
    item: ResumeItem, events: AsyncIterator[Any], *, resume_text: str, started: float
) -> ResumeResult:
    result = ResumeResult(file=item.file, has_numbers=item.has_numbers)
    report: ReportEvent | None = None
    async for event in events:
        if isinstance(event, DegradedEvent) and event.reason in FALLBACKS:
            result.fallbacks.append(event.reason)
        elif isinstance(event, ErrorEvent):
            result.error = f"{event.code}: {event.message}"
        elif isinstance(event, ReportEvent):
            report = event
    result.seconds = time.perf_counter() - started
    if report is None:
        return result
    result.completed = True
    detected = report_kinds(report)
    result.detected = sorted(detected)
    result.section_hits, result.section_total = section_score(item, detected, SCORED_KINDS)
    result.rewrites = report_rewrites(report)
    result.invented = [f for r in result.rewrites for f in invented_figures(r, resume_text)]
    result.overall = report_overall(report)
    return result


def _quantile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return round(values[0], 1)
    return round(statistics.quantiles(values, n=100, method="inclusive")[int(q * 100) - 1], 1)


def _mean(values: Sequence[float]) -> float | None:
    return round(statistics.fmean(values), 2) if values else None


def summarise(results: Sequence[ResumeResult]) -> dict[str, Any]:
    n = len(results)
    hits = sum(r.section_hits for r in results)
    total = sum(r.section_total for r in results)
    times = [r.seconds for r in results if r.completed]
    return {
        "resumes": n,
        "completed": sum(r.completed for r in results),
        "without_fallback": sum(r.without_fallback for r in results),
        "without_fallback_share": round(sum(r.without_fallback for r in results) / n, 3) if n else None,
        "section_accuracy": round(hits / total, 3) if total else None,
        "with_rewrites": sum(bool(r.rewrites) for r in results),
        "rewrites": sum(len(r.rewrites) for r in results),
        "invented_figures": sum(len(r.invented) for r in results),
        "overall_without_numbers": _mean([r.overall for r in results if not r.has_numbers and r.overall]),
        "overall_with_numbers": _mean([r.overall for r in results if r.has_numbers and r.overall]),
        "time_s": {"p50": _quantile(times, 0.5), "p95": _quantile(times, 0.95), "n": len(times)},
    }


def format_table(results: Sequence[ResumeResult], summary: dict[str, Any]) -> str:
    rows = [f"{'file':36} {'done':5} {'fallbacks':44} {'sect':5} {'rw':3} {'inv':3} {'score':5} {'s':>6}"]
    for r in results:
        rows.append(
            f"{r.file:36} {('yes' if r.completed else 'NO'):5} {','.join(r.fallbacks) or '-':44} "
            f"{r.section_hits}/{r.section_total:<3} {len(r.rewrites):<3} {len(r.invented):<3} "
            f"{r.overall if r.overall is not None else '-':<5} {r.seconds:6.1f}"
        )
    s = summary
    t = s["time_s"]
    rows += [
        "",
        f"completed without the rule fallback: {s['without_fallback']}/{s['resumes']}"
        f" ({_pct(s['without_fallback_share'])})",
        f"section detection accuracy (summary, experience, skills, education): {_pct(s['section_accuracy'])}",
        f"reviews with rewrites: {s['with_rewrites']}/{s['resumes']} ({s['rewrites']} rewrites)",
        f"invented figures in rewrites: {s['invented_figures']}",
        f"overall score, resumes without numbers: {s['overall_without_numbers']}"
        f" (with numbers: {s['overall_with_numbers']})",
        f"review time: p50 {t['p50']} s, p95 {t['p95']} s (n={t['n']})",
    ]
    return "\n".join(rows) + "\n"


def _pct(share: float | None) -> str:
    return "-" if share is None else f"{100 * share:.1f} %"


# --------------------------------------------------------------------------- offline part (no model)


@dataclass
class OfflineResult:
    file: str
    detected: list[str]
    truth: list[str]
    hits: int
    total: int
    pasted_reviewed: bool | None  # a text resume pasted in the chat: reviewed (True) or the how-to


def offline(item: ResumeItem, text: str) -> OfflineResult:
    detected = set(detect_sections(prepare(text).text).present())  # the chain sees the masked text
    hits, total = section_score(item, detected, KINDS)
    pasted = looks_like_resume(text) if item.file.endswith(".txt") else None
    return OfflineResult(
        file=item.file,
        detected=sorted(detected),
        truth=sorted(item.sections),
        hits=hits,
        total=total,
        pasted_reviewed=pasted,
    )


def format_offline(results: Sequence[OfflineResult]) -> str:
    rows = [f"{'file':36} {'sections':6} missed / extra"]
    for r in results:
        missed = sorted(set(r.truth) - set(r.detected))
        extra = sorted(set(r.detected) - set(r.truth))
        rows.append(f"{r.file:36} {r.hits}/{r.total:<4} {','.join(missed) or '-'} / {','.join(extra) or '-'}")
    hits = sum(r.hits for r in results)
    total = sum(r.total for r in results)
    pasted = [r.pasted_reviewed for r in results if r.pasted_reviewed is not None]
    rows += [
        "",
        f"section detection without the model (all five kinds): {hits}/{total} ({_pct(hits / total if total else None)})",
        f"text resumes a chat paste would review (not the how-to): {sum(pasted)}/{len(pasted)}",
    ]
    return "\n".join(rows) + "\n"
