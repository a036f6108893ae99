"""Fusing the model's search with a search of the user's own message (issue #3, decision 0010).

The embedded model's ``searchKnowledge`` queries are short keyword strings that often lose what the
user asked ("summer career change tips" for a question about quantifying a resume). The user's message
is in the turn anyway, so the tool searches it too and fuses the two ranked lists by reciprocal rank:
the model's list leads, the user's list adds ``weight`` of a vote. docs/retrieval.md has the
measurements that chose the weight and the kind of second search.

The relevance gate keeps its meaning: a list the gate emptied (no chunk relevant) votes for nothing,
and the fused result is empty only when both are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from careerwise.knowledge.dense import stable_top
from careerwise.knowledge.index import FusionConfig, Hit, IndexedChunk, SearchResult


class LexicalSearchable(Protocol):
    """What a BM25-only search needs from an index (``KnowledgeIndex`` and ``PgVectorIndex`` both)."""

    chunks: list[IndexedChunk]

    def lexical_scores(self, query: str) -> npt.NDArray[np.float32]: ...

    def domain_mask_for(self, domains: Sequence[str] | None) -> npt.NDArray[np.bool_]: ...


@dataclass(frozen=True)
class MessageFusion:
    """How the user's message joins the search. ``mode``: "off" (the model's query alone), "lexical"
    (+ BM25 of the message: no second embedding), "hybrid" (+ the message searched like the query, in
    the same embedding batch) or "message" (the message searched hybrid, + BM25 of the query). ``weight``
    is the second list's share against the first list's 1.0."""

    mode: str = "off"
    weight: float = 1.0
    rrf_k: int = 5


def lexical_search(
    index: LexicalSearchable,
    query: str,
    *,
    pool: int,
    fusion: FusionConfig,
    domains: Sequence[str] | None = None,
    lexical: npt.NDArray[np.float32] | None = None,
) -> SearchResult:
    """BM25 alone: the best ``pool`` chunks with any BM25 score, gated like the hybrid search's lexical
    arm (``matched`` counts chunks at or above ``min_lexical``; none: no hits when the gate is on)."""
    scores = index.lexical_scores(query) if lexical is None else lexical
    mask = index.domain_mask_for(domains) & (scores > 0)
    matched = int((mask & (scores >= fusion.min_lexical)).sum())
    if fusion.gate and matched == 0:
        return SearchResult(query=query, hits=[], matched=0)
    rows = np.flatnonzero(mask)
    best = rows[stable_top(-scores[rows], pool)[:pool]]
    hits = [
        Hit(chunk=index.chunks[int(r)], score=float(scores[r]), dense=0.0, lexical=float(scores[r]))
        for r in best
    ]
    return SearchResult(query=query, hits=hits, matched=matched)


def fuse_results(
    primary: SearchResult, secondary: SearchResult, *, weight: float, rrf_k: int
) -> SearchResult:
    """Reciprocal-rank fusion of two hit lists over the same chunks: 1/(k+rank) from ``primary`` plus
    ``weight``/(k+rank) from ``secondary``; ties keep ``primary``'s order, then ``secondary``'s.

    ``matched`` is the larger of the two: the chunks each search found relevant are not kept, and the
    larger count is a true lower bound of their union (what the tool reports as "matched")."""
    scores: dict[int, float] = {}
    hits: dict[int, Hit] = {}
    for share, result in ((1.0, primary), (weight, secondary)):
        for rank, hit in enumerate(result.hits):
            cid = hit.chunk.id
            scores[cid] = scores.get(cid, 0.0) + share / (rrf_k + rank)
            hits.setdefault(cid, hit)
    order = sorted(scores, key=lambda cid: -scores[cid])  # stable: first-seen order breaks ties
    fused = [
        Hit(chunk=hits[c].chunk, score=scores[c], dense=hits[c].dense, lexical=hits[c].lexical) for c in order
    ]
    return SearchResult(query=primary.query, hits=fused, matched=max(primary.matched, secondary.matched))
