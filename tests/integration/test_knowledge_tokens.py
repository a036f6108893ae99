"""BM25 tokens stored at ingest (migration 0013): a load reads them instead of running jieba again;
rows without them, or with another tokenizer version's, are tokenized once and written back."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import select, text

from careerwise.knowledge.embeddings import Matrix
from careerwise.knowledge.ingest import TOKENIZER_KEY, ingest_paths
from careerwise.knowledge.lexical import TOKENIZER_VERSION, chunk_text, token_string
from careerwise.knowledge.service import KnowledgeBase
from careerwise.store import Chunk, Database, KnowledgeMeta


class HashEmbedder:
    """Deterministic vectors from a hash of the text: these tests are about tokens, not meaning."""

    name, dim = "hash", 16

    def _embed(self, texts: Sequence[str]) -> Matrix:
        rows = [
            np.frombuffer(hashlib.sha256(t.encode()).digest()[: self.dim], np.uint8).astype(np.float32) - 127
            for t in texts
        ]
        m = np.vstack(rows) if rows else np.zeros((0, self.dim), np.float32)
        out: Matrix = m / np.linalg.norm(m, axis=1, keepdims=True)
        return out

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self._embed(texts)

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        return self._embed(texts)


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "salary.md").write_text(
        "# 薪資談判\n\n## 準備\n\n談薪水之前先查行情。面試時不要先開價。\n", encoding="utf-8"
    )
    (corpus / "remote.md").write_text(
        "# Remote work\n\n## Habits\n\nKeep regular hours. Write things down for your team.\n",
        encoding="utf-8",
    )
    database = Database(f"sqlite+aiosqlite:///{tmp_path / 'kb.db'}")
    database.migrate()
    report = await ingest_paths(database, HashEmbedder(), [corpus])
    assert report.chunks_written >= 2 and not report.failed
    yield database
    await database.dispose()


async def _rows(db: Database) -> list[Chunk]:
    async with db.session() as s:
        return list((await s.scalars(select(Chunk).order_by(Chunk.id))).all())


async def _marker(db: Database) -> str | None:
    async with db.session() as s:
        row = await s.get(KnowledgeMeta, TOKENIZER_KEY)
        return row.value if row else None


async def test_ingest_stores_each_chunks_tokens(db: Database) -> None:
    rows = await _rows(db)
    assert all(r.lexical_tokens == token_string(chunk_text(r.title, r.section, r.text)) for r in rows)
    assert "谈" in " ".join(r.lexical_tokens or "" for r in rows)  # jieba's, over the Simplified text
    assert await _marker(db) == TOKENIZER_VERSION


async def test_a_load_uses_the_stored_tokens(db: Database) -> None:
    # stored tokens that tokenizing the text could never give: if the load re-tokenized, no match
    async with db.session() as s, s.begin():
        await s.execute(text("UPDATE chunks SET lexical_tokens = 'zzqtoken' WHERE text LIKE '%查行情%'"))
    kb = KnowledgeBase(db, embedder=HashEmbedder())
    await kb.load()
    assert kb.index is not None
    scores = kb.index.bm25.scores("zzqtoken")
    assert scores.max() > 0


async def test_rows_without_tokens_are_tokenized_once_and_written_back(db: Database) -> None:
    async with db.session() as s, s.begin():
        await s.execute(text("UPDATE chunks SET lexical_tokens = NULL"))
    kb = KnowledgeBase(db, embedder=HashEmbedder())
    await kb.load()
    assert kb.index is not None and kb.index.bm25.scores("薪水").max() > 0
    rows = await _rows(db)
    assert all(r.lexical_tokens == token_string(chunk_text(r.title, r.section, r.text)) for r in rows)


async def test_another_tokenizer_version_redoes_every_chunk(db: Database) -> None:
    async with db.session() as s, s.begin():
        await s.execute(text("UPDATE chunks SET lexical_tokens = 'stale'"))
        marker = await s.get(KnowledgeMeta, TOKENIZER_KEY)
        assert marker is not None
        marker.value = "0-old"
    kb = KnowledgeBase(db, embedder=HashEmbedder())
    await kb.load()
    assert kb.index is not None and kb.index.bm25.scores("stale").max() == 0
    rows = await _rows(db)
    assert all(r.lexical_tokens == token_string(chunk_text(r.title, r.section, r.text)) for r in rows)
    assert await _marker(db) == TOKENIZER_VERSION
