"""Fusing the model's search with the user's message, and the top_k floor (issue #3)."""

from __future__ import annotations

import numpy as np
import pytest

from careerwise.assistant_settings import AssistantSettings
from careerwise.knowledge.fusion import fuse_results, lexical_search
from careerwise.knowledge.index import FusionConfig, Hit, IndexedChunk, KnowledgeIndex, SearchResult
from careerwise.tools.search_knowledge import SearchKnowledgeTool


def _chunk(i: int, text: str = "", domain: str = "other") -> IndexedChunk:
    return IndexedChunk(i, f"d{i}", f"t{i}", "", domain, text or f"text {i}")


def _result(ids: list[int], matched: int | None = None) -> SearchResult:
    hits = [Hit(_chunk(i), score=1.0 / (n + 1), dense=0.5, lexical=0.0) for n, i in enumerate(ids)]
    return SearchResult("q", hits, len(ids) if matched is None else matched)


def test_fusion_lifts_what_both_lists_found() -> None:
    fused = fuse_results(_result([1, 2, 3]), _result([3, 4]), weight=1.0, rrf_k=5)
    assert [h.chunk.id for h in fused.hits] == [3, 1, 2, 4]
    assert fused.query == "q" and fused.matched == 3


def test_fusion_weight_and_ties_favour_the_model_query() -> None:
    # equal votes: the primary's chunk stays ahead of the secondary's at the same rank
    assert [h.chunk.id for h in fuse_results(_result([1]), _result([2]), weight=1.0, rrf_k=5).hits] == [1, 2]
    # a light message list adds its own chunks after the query's; a heavy one puts them first
    light = fuse_results(_result([1, 2]), _result([9]), weight=0.25, rrf_k=5)
    assert [h.chunk.id for h in light.hits] == [1, 2, 9]
    heavy = fuse_results(_result([1, 2]), _result([9]), weight=2.0, rrf_k=5)
    assert [h.chunk.id for h in heavy.hits] == [9, 1, 2]
    # a chunk both lists found passes the query's own first one, even with a light vote
    both = fuse_results(_result([1, 2]), _result([2]), weight=0.25, rrf_k=5)
    assert [h.chunk.id for h in both.hits] == [2, 1]


def test_an_empty_list_votes_for_nothing() -> None:
    only = fuse_results(_result([]), _result([7, 8]), weight=0.5, rrf_k=5)
    assert [h.chunk.id for h in only.hits] == [7, 8] and only.matched == 2
    assert fuse_results(_result([]), _result([]), weight=1.0, rrf_k=5).hits == []


def _index() -> KnowledgeIndex:
    chunks = [
        _chunk(0, "薪水 談判 技巧 salary negotiation", "market_salary"),
        _chunk(1, "履歷 格式 resume format", "resume"),
        _chunk(2, "面試 準備 interview preparation", "interview"),
        _chunk(3, "薪水 salary raise", "resume"),
    ]
    vectors = np.eye(4, 8, dtype=np.float32)
    return KnowledgeIndex(chunks, vectors, version="v")


def test_lexical_search_ranks_by_bm25_within_the_domains_and_gates() -> None:
    index = _index()
    open_gate = FusionConfig(min_lexical=0.0)
    found = lexical_search(index, "salary negotiation", pool=10, fusion=open_gate)
    assert [h.chunk.id for h in found.hits] == [0, 3] and found.matched == 2
    assert all(h.dense == 0.0 and h.lexical > 0 for h in found.hits)
    only_resume = lexical_search(index, "salary negotiation", pool=10, fusion=open_gate, domains=["resume"])
    assert [h.chunk.id for h in only_resume.hits] == [3]
    assert len(lexical_search(index, "salary negotiation", pool=1, fusion=open_gate).hits) == 1
    # nothing reaches min_lexical: the gate empties the list, as the hybrid search's lexical arm would
    shut = lexical_search(index, "salary", pool=10, fusion=FusionConfig(min_lexical=1e9))
    assert shut.hits == [] and shut.matched == 0
    assert (
        len(lexical_search(index, "salary", pool=10, fusion=FusionConfig(min_lexical=1e9, gate=False)).hits)
        == 2
    )


class _KB:
    available = True


@pytest.mark.parametrize(
    ("asked", "effective", "why"),
    [(1, 3, "raised to the minimum 3"), (2, 3, "raised to the minimum 3"), (5, 5, "as requested")],
)
def test_the_floor_raises_small_top_k_with_a_reason(asked: int, effective: int, why: str) -> None:
    tool = SearchKnowledgeTool(_KB(), min_top_k=3)  # type: ignore[arg-type]
    r = tool.resolve({"query": "q", "top_k": asked}, AssistantSettings())
    assert r.requested == {"query": "q", "top_k": asked}
    assert r.effective == {"query": "q", "top_k": effective} and why in r.reason


def test_the_admin_override_wins_over_the_floor() -> None:
    tool = SearchKnowledgeTool(_KB(), min_top_k=3)  # type: ignore[arg-type]
    settings = AssistantSettings(use_full_retrieval_range=True, configured_top_k=2)
    r = tool.resolve({"query": "q", "top_k": 1}, settings)
    assert r.effective["top_k"] == 2
    assert "minimum 3" in r.reason and "configured_top_k=2" in r.reason
