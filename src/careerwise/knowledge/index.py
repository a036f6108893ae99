"""The in-process search index: exact dense search (numpy) + BM25, fused, then reranked."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from careerwise.knowledge.embeddings import Matrix
from careerwise.knowledge.lexical import BM25Index


@dataclass(frozen=True)
class IndexedChunk:
    id: int
    document_id: str
    title: str
    section: str
    domain: str
    text: str


@dataclass(frozen=True)
class Hit:
    chunk: IndexedChunk
    score: float
    dense: float
    lexical: float


@dataclass(frozen=True)
class SearchResult:
    query: str
    hits: list[Hit]
    matched: int = field(metadata={"doc": "candidates that passed the relevance floor"})


@dataclass(frozen=True)
class FusionConfig:
    dense_weight: float = 1.0
    lexical_weight: float = 0.5
    rrf_k: int = 60
    min_dense: float = 0.83  # e5 cosine floor (nonsense queries score ~0.80, real ones ~0.90) for "matches at all" when BM25 finds nothing either


class KnowledgeIndex:
    def __init__(self, chunks: Sequence[IndexedChunk], vectors: Matrix, *, version: str) -> None:
        if len(chunks) != len(vectors):
            raise ValueError("chunks and vectors differ in length")
        self.chunks = list(chunks)
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.version = version
        self.bm25 = BM25Index([f"{c.title} {c.section} {c.text}" for c in chunks])
        self._domains = np.array([c.domain for c in chunks]) if chunks else np.array([], dtype=str)

    def __len__(self) -> int:
        return len(self.chunks)

    def search(
        self,
        query: str,
        qvec: npt.NDArray[np.float32],
        *,
        top_k: int,
        candidates: int,
        fusion: FusionConfig,
        domains: Sequence[str] | None = None,
    ) -> SearchResult:
        if not self.chunks:
            return SearchResult(query=query, hits=[], matched=0)
        dense = self.vectors @ qvec
        lexical = self.bm25.scores(query)
        mask = np.ones(len(self.chunks), dtype=bool)
        if domains:
            mask &= np.isin(self._domains, list(domains))
        relevant = mask & ((dense >= fusion.min_dense) | (lexical > 0))
        idx = np.flatnonzero(relevant)
        if idx.size == 0:
            return SearchResult(query=query, hits=[], matched=0)
        # weighted reciprocal rank fusion over the relevant subset
        d_rank = np.empty(idx.size)
        d_rank[np.argsort(-dense[idx], kind="stable")] = np.arange(idx.size)
        l_rank = np.empty(idx.size)
        l_rank[np.argsort(-lexical[idx], kind="stable")] = np.arange(idx.size)
        fused = fusion.dense_weight / (fusion.rrf_k + d_rank) + np.where(
            lexical[idx] > 0, fusion.lexical_weight / (fusion.rrf_k + l_rank), 0.0
        )
        pool = max(candidates, top_k)
        order = np.argsort(-fused, kind="stable")[:pool]
        hits = [
            Hit(
                chunk=self.chunks[int(idx[o])],
                score=float(fused[o]),
                dense=float(dense[idx[o]]),
                lexical=float(lexical[idx[o]]),
            )
            for o in order
        ]
        return SearchResult(query=query, hits=hits, matched=int(idx.size))
