"""What jieba costs a process, and what the compact segmenter costs (issue #10): memory and per-query time.

Memory: a fresh child process per variant and per round, each having imported numpy and opencc first (a
serving process has them by then), reads its VmRSS after each step:

* ``jieba``: ``import jieba``, ``jieba.initialize()`` (the dictionary, from jieba's marshal cache in the
  temp folder when it is there), the first ``cut_for_search`` — what ``lexical`` did until session 7;
* ``compact``: ``CompactJieba.load()`` (``knowledge/jieba_compact.py``: a marisa trie built from jieba's
  ``dict.txt``), the first ``cut_for_search``;

then ``malloc_trim(0)`` (what the serving process's idle trim does): what the variant keeps. A second
child per variant runs the same with tracemalloc on: the Python objects it keeps (marisa's C++ trie is
not traced, its RSS is). Load time is each child's own, one round.

Time: one process holds both; every distinct query of ``bench/_query_kinds`` (user questions, tool
queries, the model's recorded queries) goes through ``lexical.tokenize_with`` with each segmenter, the
two alternating query by query in shuffled passes, so the machine's load falls on both alike. Per query
µs (mean, p50, p90) and the ratio to plain jieba, the baseline of the same run. The bundled corpus's
chunks (what ingest tokenizes) are timed the same way.

Run: ``nice -n 10 .venv/bin/python -m bench._jieba_memory`` (``BENCH_JIEBA_ROUNDS``, default 3).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable

from bench import _query_kinds
from bench.common import pct, table

ROUNDS = int(os.environ.get("BENCH_JIEBA_ROUNDS", "3"))
PASSES = 20
SAMPLE = "我想找一份軟體工程師的工作薪水要怎麼談才不會被收回"  # one CJK run, as lexical hands over

_CHILD = """
import ctypes, json, sys, time, tracemalloc
variant, traced = sys.argv[1], sys.argv[2] == '1'
def rss():
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith('VmRSS'):
                return int(line.split()[1]) / 1024
import numpy, opencc
from careerwise.knowledge.lexical import _converter
piece = _converter().convert(SAMPLE)
rows = [('before', rss())]
if traced:
    tracemalloc.start()
t = time.perf_counter()
if variant == 'jieba':
    import logging
    import jieba
    rows.append(('import', rss()))
    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    cut = jieba.cut_for_search
else:
    import marisa_trie
    rows.append(('import', rss()))
    from careerwise.knowledge.jieba_compact import CompactJieba
    cut = CompactJieba.load().cut_for_search
load_s = time.perf_counter() - t
rows.append(('dictionary loaded', rss()))
tokens = list(cut(piece))
rows.append(('first cut_for_search', rss()))
ctypes.CDLL('libc.so.6').malloc_trim(0)
rows.append(('after malloc_trim(0)', rss()))
traced_mb = tracemalloc.get_traced_memory()[0] / 2**20 if traced else None
print(json.dumps({'rows': rows, 'load_s': load_s, 'traced_mb': traced_mb, 'tokens': tokens}))
""".replace("SAMPLE", repr(SAMPLE))

VARIANTS = ("jieba", "compact")


def _child(variant: str, *, traced: bool) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, variant, "1" if traced else "0"],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _memory() -> list[str]:
    rss: dict[str, list[list[float]]] = {v: [] for v in VARIANTS}
    steps: dict[str, list[str]] = {}
    load: dict[str, list[float]] = {v: [] for v in VARIANTS}
    tokens: dict[str, object] = {}
    for rnd in range(ROUNDS):
        for variant in VARIANTS if rnd % 2 == 0 else VARIANTS[::-1]:
            got = _child(variant, traced=False)
            rows = [(str(a), float(b)) for a, b in got["rows"]]  # type: ignore[attr-defined]
            steps[variant] = [a for a, _ in rows]
            rss[variant].append([b for _, b in rows])
            load[variant].append(float(got["load_s"]))  # type: ignore[arg-type]
            tokens[variant] = got["tokens"]
    traced = {v: float(_child(v, traced=True)["traced_mb"]) for v in VARIANTS}  # type: ignore[arg-type]
    lines = [
        f"jieba in a process: VmRSS MB, mean of {ROUNDS} fresh children per variant "
        f"(numpy and opencc imported first; tokens of the sample identical: {tokens['jieba'] == tokens['compact']})",
        "",
    ]
    for variant in VARIANTS:
        means = [statistics.mean(col) for col in zip(*rss[variant], strict=True)]
        rows_out = [
            (step, f"{m:.1f}", "" if i == 0 else f"+{m - means[0]:.1f}")
            for i, (step, m) in enumerate(zip(steps[variant], means, strict=True))
        ]
        lines.append(
            f"{variant}: load {statistics.mean(load[variant]):.2f} s; Python objects kept "
            f"(tracemalloc) {traced[variant]:.1f} MB"
        )
        lines.append(table(("step", "VmRSS MB", "over 'before'"), rows_out))
        lines.append("")
    return lines


def _timed(
    texts: list[str], segmenters: dict[str, Callable[[str], Iterable[str]]], *, passes: int
) -> dict[str, list[float]]:
    import random

    from careerwise.knowledge.lexical import tokenize_with

    rng = random.Random(7)
    out: dict[str, list[float]] = {name: [] for name in segmenters}
    names = list(segmenters)
    for _ in range(passes):
        order = texts[:]
        rng.shuffle(order)
        for i, text in enumerate(order):
            for name in names if i % 2 == 0 else names[::-1]:
                t = time.perf_counter()
                tokenize_with(text, segment=segmenters[name])
                out[name].append((time.perf_counter() - t) * 1e6)
    return out


def _speed() -> list[str]:
    import logging

    import jieba

    from careerwise.knowledge.chunking import chunk_document
    from careerwise.knowledge.documents import load_document
    from careerwise.knowledge.jieba_compact import CompactJieba
    from careerwise.knowledge.lexical import chunk_text
    from careerwise.knowledge.service import BUNDLED_CORPUS

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    segmenters: dict[str, Callable[[str], Iterable[str]]] = {
        "jieba": jieba.cut_for_search,
        "compact": CompactJieba.load().cut_for_search,
    }
    work = _query_kinds.workload()
    queries = [q for kind in _query_kinds.KINDS for q in work.get(kind, [])]
    chunks = [
        chunk_text(c.title, c.section, c.text)
        for p in sorted(BUNDLED_CORPUS.iterdir())
        for c in chunk_document(load_document(p, root=BUNDLED_CORPUS))
    ]
    rows = []
    for label, texts, passes in (
        (f"queries ({len(queries)} distinct: user, tool, model's)", queries, PASSES),
        (f"corpus chunks ({len(chunks)})", chunks, 3),
    ):
        got = _timed(texts, segmenters, passes=passes)
        base = statistics.mean(got["jieba"])
        for name, us in got.items():
            rows.append(
                (
                    label,
                    name,
                    f"{statistics.mean(us):.0f}",
                    f"{pct(us, 50):.0f}",
                    f"{pct(us, 90):.0f}",
                    f"{statistics.mean(us) / base:.2f}",
                )
            )
    return [
        "lexical tokenizing per text, µs (both segmenters alternating, text by text, in one process)",
        "",
        table(("texts", "segmenter", "mean", "p50", "p90", "mean vs jieba"), rows),
    ]


def run() -> list[str]:
    return [*_memory(), *_speed()]


if __name__ == "__main__":
    print("\n".join(run()))
