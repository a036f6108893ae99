"""The summary and the printed tables of ``careerwise eval answers`` (:mod:`careerwise.evals.answers`
scores each answer; this module only aggregates the scored results): rates over the covered and
uncovered questions, p50/p95 times per path, per-language grounding, and the deep sets' per-tier counts.
Every figure is computed from the results it is given, so a summary of a subset is that subset's."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any

from careerwise.evals import deep_checks
from careerwise.evals.answers import AnswerResult


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
    model_a = [r.first_model_text_s for r in results if r.first_model_text_s is not None and r.searched]
    simple = [r.total_s for r in results if r.flow == "career-simple"]
    return {
        "questions": len(results),
        "covered": len(covered),
        "grounded_pct": _pct([float(r.grounded) for r in covered]),
        "key_point_coverage_pct": _pct(coverages),
        "key_point_coverage_model_text_pct": _pct(
            [
                len(r.points_in_model_text) / len(r.points_hit + r.points_missed)
                for r in covered
                if r.coverage is not None
            ]
        ),
        "quoted_answers": sum(r.quoted for r in results),
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
        "first_model_text_a_s": _timing(model_a),
        "total_simple_s": {"p50": _quantile(simple, 0.5), "p95": _quantile(simple, 0.95), "n": len(simple)},
    } | ({"deep": summarise_deep(deep)} if (deep := [r for r in results if r.question_tier]) else {})


def _timing(values: Sequence[float]) -> dict[str, float | int | None]:
    return {"p50": _quantile(values, 0.5), "p95": _quantile(values, 0.95), "n": len(values)}


def _deep_counts(results: Sequence[AnswerResult]) -> dict[str, Any]:
    """The deep goals over ``results``: times, then the counts that must be 0, then the shares."""
    covered = [r for r in results if r.covered]
    return {
        "questions": len(results),
        "first_section_s": _timing([r.first_section_s for r in results if r.first_section_s is not None]),
        "total_s": _timing([r.total_s for r in results]),
        "invented_statements": sum(len(r.invented_statements) for r in results),
        "off_domain_citations": sum(len(r.off_domain) for r in results),
        "duplicate_items": sum(len(r.duplicate_items) for r in results),
        "duplicate_citations": sum(len(r.duplicate_citations) for r in results),
        "leaks": sum(bool(r.leaks) for r in results),
        "simplified_answers": sum(bool(r.simplified) for r in results),
        "mainland_answers": sum(bool(r.mainland) for r in results),
        "echoed_injections": sum(bool(r.echoed_injection) for r in results),
        "contradictions": sum(len(r.contradictions) for r in results),
        "cited_gold_pct": _pct([float(r.cited_gold) for r in covered]),
        "key_point_coverage_pct": _pct([r.coverage for r in covered if r.coverage is not None]),
        "not_ok": sum(r.status != "ok" for r in results),
        "paths": dict(sorted(Counter(r.path or "-" for r in results).items())),
    }


def summarise_deep(results: Sequence[AnswerResult]) -> dict[str, Any]:
    """The deep questions' figures, overall and per tier (medium, complex)."""
    return _deep_counts(results) | {
        "tiers": {
            tier: _deep_counts(of_tier)
            for tier in deep_checks.DEEP_TIERS
            if (of_tier := [r for r in results if r.question_tier == tier])
        }
    }


def _mark(flag: bool) -> str:
    return "y" if flag else "-"


def format_deep_table(results: Sequence[AnswerResult], summary: dict[str, Any]) -> str:
    """The deep questions, one line each, then the goals overall and per tier."""
    rows = [
        "id     tier    lang  path  gold points  inv off dupI dupC leak simp main inj  mn  section   total"
    ]
    for r in results:
        if not r.question_tier:
            continue
        pts = f"{len(r.points_hit)}/{len(r.points_hit) + len(r.points_missed)}"
        first = f"{r.first_section_s:7.1f}s" if r.first_section_s is not None else "      - "
        rows.append(
            f"{r.id:<6} {r.question_tier:<7} {r.lang:<5} {(r.path or '-')[:5]:<5} {_mark(r.cited_gold):<4} "
            f"{pts:<7} {len(r.invented_statements):<3} {len(r.off_domain):<3} {len(r.duplicate_items):<4} "
            f"{len(r.duplicate_citations):<4} {len(r.leaks):<4} {len(r.simplified):<4} {len(r.mainland):<4} "
            f"{len(r.echoed_injection):<4} {len(r.contradictions):<3} {first} {r.total_s:7.1f}s"
            + (f"  {r.status}" if r.status != "ok" else "")
        )
    deep = summary["deep"]

    def goals(name: str, d: dict[str, Any]) -> list[str]:
        return [
            f"{name} ({d['questions']} questions): first section p50 {d['first_section_s']['p50']} s "
            f"p95 {d['first_section_s']['p95']} s; whole answer p50 {d['total_s']['p50']} s "
            f"p95 {d['total_s']['p95']} s",
            f"  invented user statements {d['invented_statements']}, off-domain citations "
            f"{d['off_domain_citations']}, duplicated items {d['duplicate_items']} / citations "
            f"{d['duplicate_citations']}, answers with leaks {d['leaks']}, Simplified "
            f"{d['simplified_answers']}, mainland wording {d['mainland_answers']}, echoed injections "
            f"{d['echoed_injections']}, contradictions {d['contradictions']}, not ok {d['not_ok']}",
            f"  gold cited {d['cited_gold_pct']} %, key-point coverage {d['key_point_coverage_pct']} %, "
            f"paths {d['paths']}",
        ]

    rows += ["", *goals("deep", deep)]
    for tier, d in deep["tiers"].items():
        rows += goals(tier, d)
    return "\n".join(rows) + "\n"


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
        f"key-point coverage: {s['key_point_coverage_pct']} % (in the model's own text "
        f"{s['key_point_coverage_model_text_pct']} %; {s['quoted_answers']} answers began with quotes)   "
        f"gold cited: {s['cited_gold_pct']} %",
        f"searched: {s['searched_covered_pct']} % of covered, {s['searched_uncovered_pct']} % of uncovered",
        f"answers with leaks {s['leaks']}, Simplified {s['simplified_answers']}, "
        f"mainland wording {s['mainland_answers']}, contradictions {s['contradictions']}, "
        f"not ok {s['errors']}",
        f"first text, path B: p50 {s['first_text_b_s']['p50']} s p95 {s['first_text_b_s']['p95']} s "
        f"(n={s['first_text_b_s']['n']}); path A: p50 {s['first_text_a_s']['p50']} s "
        f"p95 {s['first_text_a_s']['p95']} s (n={s['first_text_a_s']['n']}); the model's own first text on "
        f"path A: p50 {s['first_model_text_a_s']['p50']} s",
        f"whole simple answer: p50 {s['total_simple_s']['p50']} s p95 {s['total_simple_s']['p95']} s",
    ]
    table = "\n".join(rows) + "\n"
    return table + ("\n" + format_deep_table(results, s) if "deep" in s else "")
