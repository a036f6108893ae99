"""Documents' title vectors (migration 0021, knowledge/titles.py) on both backends: ingest stores them (an
uploaded document without an alt title gets one from its title alone); a load embeds and writes back
those missing or made by another model, once; a write-back never overwrites titles changed meanwhile."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import text

from careerwise.knowledge.embeddings import Matrix
from careerwise.knowledge.ingest import ingest_paths
from careerwise.knowledge.service import KnowledgeBase
from careerwise.knowledge.titles import decode_vectors, encode_vectors
from careerwise.store import Database
from careerwise.store.knowledge_writes import KnowledgeWrites

RAISE = "---\nid: raise\ntitle: 跟主管談加薪\nalt_title: Asking your manager for a raise\n---\n## 準備\n先查行情，再約主管談。\n"
REMOTE = (
    "---\nid: remote\ntitle: Remote work habits\n---\n## Habits\nKeep regular hours. Write things down.\n"
)


class HashEmbedder:
    """Deterministic vectors from a hash of the text, recording every text embedded as a query."""

    name, dim = "hash", 16

    def __init__(self) -> None:
        self.queries: list[str] = []

    def _embed(self, texts: Sequence[str]) -> Matrix:
        rows = [
            np.frombuffer(hashlib.sha256(t.encode()).digest()[: self.dim], np.uint8).astype(np.float32) - 127
            for t in texts
        ]
        m = np.vstack(rows) if rows else np.zeros((0, self.dim), np.float32)
        out: Matrix = m / np.linalg.norm(m, axis=1, keepdims=True)
        return out

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        self.queries.extend(texts)
        return self._embed(texts)

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        return self._embed(texts)


@pytest.fixture
async def db(empty_db_url: str, tmp_path: Path) -> AsyncIterator[Database]:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "raise.md").write_text(RAISE, encoding="utf-8")
    (corpus / "remote.md").write_text(REMOTE, encoding="utf-8")  # like an upload: no alt title
    database = Database(empty_db_url)
    report = await ingest_paths(database, HashEmbedder(), [corpus])
    assert sorted(report.added) == ["raise", "remote"] and not report.failed
    yield database
    await database.dispose()


async def _stored(db: Database) -> dict[str, tuple[str, Matrix | None, str | None]]:
    rows = await KnowledgeWrites(db).titles()
    return {
        i: (alt, decode_vectors(v, 2 if alt else 1, HashEmbedder.dim), model) for i, _, alt, v, model in rows
    }


async def test_ingest_stores_each_documents_title_vectors(db: Database) -> None:
    stored = await _stored(db)
    embedder = HashEmbedder()
    alt, vectors, model = stored["raise"]
    assert alt == "Asking your manager for a raise" and model == "hash" and vectors is not None
    assert np.array_equal(vectors, embedder.embed_queries(["跟主管談加薪", alt]))
    alt, vectors, model = stored["remote"]  # from its title alone
    assert alt == "" and model == "hash" and vectors is not None
    assert np.array_equal(vectors, embedder.embed_queries(["Remote work habits"]))


@pytest.mark.parametrize("stale", ["missing", "another model"])
async def test_a_load_embeds_missing_title_vectors_once_and_writes_them_back(
    db: Database, stale: str
) -> None:
    before = await _stored(db)
    change = "title_vectors = NULL, title_model = NULL" if stale == "missing" else "title_model = 'other'"
    async with db.session() as s, s.begin():
        await s.execute(text(f"UPDATE documents SET {change}"))
    embedder = HashEmbedder()
    kb = KnowledgeBase(db, embedder=embedder)
    await kb.load()
    assert kb.index is not None and kb.index.titles is not None, kb.status()
    assert {"跟主管談加薪", "Asking your manager for a raise", "Remote work habits"} <= set(embedder.queries)
    after = await _stored(db)
    for doc_id, (_, vectors, model) in after.items():
        old = before[doc_id][1]
        assert model == "hash" and vectors is not None and old is not None and np.array_equal(vectors, old)
    # an English question finds the Chinese article through its English title
    qvec = embedder.embed_queries(["Asking your manager for a raise"])[0]
    boosts = kb.index.title_boosts("Asking your manager for a raise", qvec, kb.fusion)
    assert [b.document_id for b in boosts] == ["raise"]
    embedder.queries.clear()
    again = KnowledgeBase(db, embedder=embedder)
    await again.load()
    assert "Remote work habits" not in embedder.queries  # stored: not embedded a second time


async def test_a_write_back_leaves_titles_changed_meanwhile_alone(db: Database) -> None:
    writes = KnowledgeWrites(db)
    vectors = encode_vectors(np.ones((1, HashEmbedder.dim), np.float32))
    assert await writes.store_title_vectors([("remote", "An older title", "", vectors)], model="other")
    assert (await _stored(db))["remote"][2] == "hash"  # not written: the title is not that one any more
    assert await writes.store_title_vectors([("remote", "Remote work habits", "", vectors)], model="other")
    assert (await _stored(db))["remote"][2] == "other"
