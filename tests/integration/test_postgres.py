"""PostgreSQL + pgvector as the second storage backend: migrations, ingest, and search that agrees with
SQLite's in-process index on the bundled corpus."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect, text

from careerwise.knowledge.embeddings import Embedder
from careerwise.knowledge.pg_index import VECTOR_DIM, PgVectorIndex, vector_literal
from careerwise.knowledge.service import KnowledgeBase
from careerwise.store import Database
from careerwise.store.db import _MIGRATIONS, async_url, sync_url
from tests.integration.conftest import admin_connection

QUERIES = [
    "薪水談判技巧",
    "怎麼談薪水？",
    "面試 準備",
    "履歷 量化 成果",
    "跳槽 加薪",
    "主管很難相處怎麼辦",
    "how to ask for a promotion",
    "frontend or backend",
    "working abroad in Japan",
    "bootcamp vs self study",
]


def _alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(_MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", sync_url(url))
    return cfg


def _head() -> str | None:
    return ScriptDirectory.from_config(_alembic_config("sqlite://")).get_current_head()


@pytest.fixture
def sqlite_corpus(tmp_path: Path, corpus_db: Path) -> str:
    path = tmp_path / "careerwise.db"
    shutil.copy(corpus_db, path)
    return f"sqlite+aiosqlite:///{path}"


@pytest.mark.parametrize("domains", [None, ["market_salary", "growth_skills"]], ids=["all", "domains"])
@pytest.mark.parametrize("mode", ["exact", "hnsw"])
async def test_search_agrees_with_sqlite_on_the_bundled_corpus(
    pg_database: str, sqlite_corpus: str, embedder: Embedder, domains: list[str] | None, mode: str
) -> None:
    """exact: every chunk scored in the database (the default for a corpus this size): the same result
    as SQLite's in-process index. hnsw: only the nearest through the HNSW index (the large-corpus path):
    the same top 3."""
    pg, lite = Database(pg_database), Database(sqlite_corpus)
    try:
        pg_kb = KnowledgeBase(pg, embedder=embedder)
        await pg_kb.load()
        assert isinstance(pg_kb.index, PgVectorIndex), pg_kb.status()
        if mode == "hnsw":
            pg_kb.index.exact_up_to = 0
        pg_kb_results = await _search_all(pg_kb, domains)
        lite_kb = KnowledgeBase(lite, embedder=embedder)
        await lite_kb.load()
        lite_results = await _search_all(lite_kb, domains)
    finally:
        await pg.dispose()
        await lite.dispose()
    assert pg_kb.backend == "pgvector" and lite_kb.backend == "in-process"
    assert pg_kb.status().chunks == lite_kb.status().chunks > 100
    assert sum(len(r.hits) for r in lite_results) >= 3 * len(QUERIES)
    for q, p, s in zip(QUERIES, pg_kb_results, lite_results, strict=True):
        assert [h.chunk.id for h in p.hits[:3]] == [h.chunk.id for h in s.hits[:3]], q
        for a, b in zip(p.hits[:3], s.hits[:3], strict=True):
            assert a.dense == pytest.approx(b.dense, abs=1e-4), q
            assert a.lexical == pytest.approx(b.lexical, rel=1e-6), q
        if domains:
            assert all(h.chunk.domain in domains for h in p.hits), q
        if mode == "exact":
            assert [h.chunk.id for h in p.hits] == [h.chunk.id for h in s.hits], q
            assert p.matched == s.matched, q
        else:
            assert 0 < p.matched <= s.matched, q


async def _search_all(kb: KnowledgeBase, domains: list[str] | None) -> list[Any]:
    return await kb.search_many(QUERIES, top_k=3, candidates=12, domains=[domains] * len(QUERIES))


async def test_nonsense_matches_nothing_on_postgres(pg_database: str, embedder: Embedder) -> None:
    db = Database(pg_database)
    try:
        kb = KnowledgeBase(db, embedder=embedder)
        await kb.load()
        result = await kb.search("qwzx blorfquux", top_k=3, candidates=12)
    finally:
        await db.dispose()
    assert result.hits == [] and result.matched == 0


def test_migrations_add_pgvector_column_and_hnsw_index(pg_database: str) -> None:
    engine = create_engine(sync_url(pg_database))
    try:
        with engine.connect() as conn:
            assert conn.scalar(text("SELECT version_num FROM alembic_version")) == _head()
            col_type = conn.scalar(
                text(
                    "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                    "WHERE attrelid = 'chunks'::regclass AND attname = 'embedding_vec'"
                )
            )
            assert col_type == f"vector({VECTOR_DIM})"
            # migration 0013: vectors are stored inline (a scan reads no TOAST), tokens stored at ingest
            storage = conn.scalar(
                text(
                    "SELECT attstorage FROM pg_attribute "
                    "WHERE attrelid = 'chunks'::regclass AND attname = 'embedding_vec'"
                )
            )
            assert storage == "p"
            assert conn.scalar(text("SELECT count(*) FROM chunks WHERE lexical_tokens IS NULL")) == 0
            indexdef = conn.scalar(
                text("SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_chunks_embedding_vec_hnsw'")
            )
            assert "USING hnsw" in indexdef and "vector_cosine_ops" in indexdef
            # every chunk has its vector in pgvector, equal to the portable float32 copy
            assert conn.scalar(text("SELECT count(*) FROM chunks WHERE embedding_vec IS NULL")) == 0
            row = conn.execute(text("SELECT embedding, embedding_vec::text AS v FROM chunks LIMIT 1")).one()
            stored = np.array([float(x) for x in row.v.strip("[]").split(",")], dtype=np.float32)
            assert np.array_equal(stored, np.frombuffer(row.embedding, dtype=np.float32))
            # the nearest-neighbour query can run on the HNSW index
            conn.execute(text("SET LOCAL enable_seqscan = off"))
            plan = "\n".join(
                r[0]
                for r in conn.execute(
                    text(
                        "EXPLAIN SELECT id FROM chunks ORDER BY embedding_vec <=> CAST(:q AS vector) LIMIT 5"
                    ),
                    {"q": vector_literal(np.ones(VECTOR_DIM, np.float32))},
                )
            )
            assert "ix_chunks_embedding_vec_hnsw" in plan, plan
    finally:
        engine.dispose()


def test_migrations_on_sqlite_leave_no_pgvector_trace(tmp_path: Path) -> None:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'x.db'}")
    db.migrate()
    engine = create_engine(sync_url(db.url))
    try:
        with engine.connect() as conn:
            assert conn.scalar(text("SELECT version_num FROM alembic_version")) == _head()
            columns = {c["name"] for c in inspect(conn).get_columns("chunks")}
        assert "embedding" in columns and "embedding_vec" not in columns
    finally:
        engine.dispose()
        asyncio.run(db.dispose())


def test_migrations_run_on_an_empty_postgres_database_and_downgrade(pg_empty_database: str) -> None:
    Database(pg_empty_database).migrate()
    cfg = _alembic_config(pg_empty_database)
    command.downgrade(cfg, "0001")
    engine = create_engine(sync_url(pg_empty_database))
    try:
        with engine.connect() as conn:
            columns = {c["name"] for c in inspect(conn).get_columns("chunks")}
        assert "embedding_vec" not in columns
    finally:
        engine.dispose()
    command.upgrade(cfg, "head")


_STORAGE = text(
    "SELECT attstorage FROM pg_attribute WHERE attrelid = 'chunks'::regclass AND attname = 'embedding_vec'"
)
_HAS_TOKENS = text(
    "SELECT count(*) FROM information_schema.columns WHERE table_name = 'chunks' AND column_name = 'lexical_tokens'"
)


async def test_upgrading_past_0013_keeps_vectors_and_stores_them_inline(pg_database: str) -> None:
    """A database from before 0013: vectors TOASTed (EXTENDED), no token column. The upgrade switches
    the column to PLAIN and rewrites every vector (CAST through real[]), which must not change one."""
    cfg = _alembic_config(pg_database)
    await asyncio.to_thread(command.downgrade, cfg, "0012")
    engine = create_engine(sync_url(pg_database))
    same = text(
        "SELECT count(*) FILTER (WHERE embedding_vec = CAST(CAST(embedding_vec AS real[]) AS vector)),"
        " count(*) FROM chunks"
    )
    try:
        with engine.connect() as conn:
            assert conn.scalar(_STORAGE) == "x"
            assert not conn.scalar(_HAS_TOKENS)
            before = {
                int(r.id): r.v for r in conn.execute(text("SELECT id, embedding_vec::text AS v FROM chunks"))
            }
        await asyncio.to_thread(command.upgrade, cfg, "head")
        with engine.connect() as conn:
            assert conn.scalar(_STORAGE) == "p" and conn.scalar(_HAS_TOKENS)
            after = {
                int(r.id): r.v for r in conn.execute(text("SELECT id, embedding_vec::text AS v FROM chunks"))
            }
            equal, total = conn.execute(same).one()
        assert len(before) > 100 and after == before and equal == total
    finally:
        engine.dispose()


async def test_vectors_missing_from_pgvector_are_filled_in_on_load(
    pg_database: str, embedder: Embedder
) -> None:
    db = Database(pg_database)
    try:
        async with db.session() as s, s.begin():
            await s.execute(text("UPDATE chunks SET embedding_vec = NULL WHERE id % 3 = 0"))
        kb = KnowledgeBase(db, embedder=embedder)
        await kb.load()
        assert isinstance(kb._index, PgVectorIndex)
        async with db.session() as s:
            missing = await s.scalar(text("SELECT count(*) FROM chunks WHERE embedding_vec IS NULL"))
        assert missing == 0
        result = await kb.search("薪水談判技巧", top_k=3, candidates=12)
        assert len(result.hits) == 12 and result.matched > 0
    finally:
        await db.dispose()


async def test_reingest_on_postgres_replaces_vectors(
    pg_database: str, embedder: Embedder, tmp_path: Path
) -> None:
    from careerwise.knowledge.ingest import ingest_paths

    doc = tmp_path / "corpus" / "z-test-note.md"
    doc.parent.mkdir()
    doc.write_text(
        "---\nid: z-test-note\ntitle: Remote work stipend\ndomain: other\nlang: en\n---\n"
        "# Remote work stipend\n\nAsk for a home-office stipend of a fixed monthly amount.\n",
        encoding="utf-8",
    )
    db = Database(pg_database)
    try:
        report = await ingest_paths(db, embedder, [doc.parent])
        assert report.added == ["z-test-note"]
        doc.write_text(doc.read_text(encoding="utf-8") + "\nA second paragraph about coworking spaces.\n")
        report = await ingest_paths(db, embedder, [doc.parent])
        assert report.updated == ["z-test-note"]
        async with db.session() as s:
            rows = (
                await s.execute(
                    text(
                        "SELECT count(*) AS n, count(embedding_vec) AS v FROM chunks "
                        "WHERE document_id = 'z-test-note'"
                    )
                )
            ).one()
        assert rows.n == rows.v >= 1
        kb = KnowledgeBase(db, embedder=embedder)
        await kb.load()
        hits = (await kb.search("home office stipend", top_k=3, candidates=12)).hits
        assert hits and hits[0].chunk.document_id == "z-test-note"
    finally:
        await db.dispose()


def test_database_urls_pick_the_drivers() -> None:
    assert async_url("postgresql://u:p@h:5/db") == "postgresql+asyncpg://u:p@h:5/db"
    assert async_url("postgres://u@h/db") == "postgresql+asyncpg://u@h/db"
    assert async_url("postgresql+psycopg://u@h/db") == "postgresql+psycopg://u@h/db"
    assert sync_url("postgresql://u:p@h:5/db") == "postgresql+psycopg://u:p@h:5/db"
    assert sync_url("postgresql+asyncpg://u@h/db") == "postgresql+psycopg://u@h/db"
    assert sync_url("sqlite+aiosqlite:////x/y.db") == "sqlite:////x/y.db"


def test_the_server_has_pgvector(pg_url: str) -> None:
    with admin_connection(pg_url) as conn:
        version = conn.execute("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'")
        row = version.fetchone()
    assert row is not None and tuple(int(p) for p in row[0].split(".")[:2]) >= (0, 8)
