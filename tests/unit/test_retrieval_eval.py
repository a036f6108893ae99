"""The retrieval evaluation: question files, the dev/test split, the metrics, the methods on a toy
index, the relevance gate, and the shipped configuration on the real corpus (a regression guard)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from careerwise.knowledge.embeddings import Embedder
from careerwise.knowledge.evaluation import (
    EvalQuestion,
    MethodRankings,
    Metrics,
    default_eval_dir,
    distinct_documents,
    first_relevant,
    load_questions,
    rank_all,
    select,
    split_of,
)
from careerwise.knowledge.index import FusionConfig, IndexedChunk, KnowledgeIndex
from careerwise.knowledge.service import BUNDLED_CORPUS, KnowledgeBase
from careerwise.knowledge.topic import TopicAnchors
from careerwise.store import Database

EVAL_DIR = default_eval_dir()


def test_metrics_count_distinct_documents() -> None:
    rankings = [
        ["a", "a", "b"],  # relevant b: second distinct document
        ["c", "d", "e", "f", "g", "h"],  # relevant h: sixth
        ["x"],  # relevant z: never
        ["z", "y"],  # relevant z: first
    ]
    relevant = [["b"], ["h"], ["z"], ["z", "y"]]
    m = Metrics.of(rankings, relevant)
    assert m.n == 4
    assert m.recall_at_1 == pytest.approx(1 / 4)
    assert m.recall_at_5 == pytest.approx(2 / 4)
    assert m.mrr == pytest.approx((1 / 2 + 1 / 6 + 0 + 1) / 4)
    assert distinct_documents(["a", "b", "a", "c"]) == ["a", "b", "c"]
    assert first_relevant(["a", "b"], ["b", "c"]) == 1 and first_relevant(["a"], ["q"]) is None
    assert Metrics.of([], []) == Metrics(0, 0.0, 0.0, 0.0)


def test_split_is_stable_and_both_halves_are_used() -> None:
    assert split_of("薪水談判技巧") == split_of("薪水談判技巧")
    questions = load_questions([EVAL_DIR])
    dev, test = select(questions, "dev"), select(questions, "test")
    assert len(dev) + len(test) == len(questions) == len(select(questions, "all"))
    assert 0.35 < len(dev) / len(questions) < 0.65
    assert any(q.negative for q in dev) and any(q.negative for q in test)
    with pytest.raises(ValueError, match="split"):
        select(questions, "train")


def test_the_question_files_are_well_formed_and_cover_the_corpus() -> None:
    corpus_ids = {p.stem for p in BUNDLED_CORPUS.glob("*.md")}
    questions = load_questions([EVAL_DIR])
    users = [q for q in questions if not q.negative and q.source != "queries_tool.jsonl"]
    assert len(users) >= 100
    assert {q.lang for q in users} == {"zh-TW", "en"}
    assert len({q.question for q in questions}) == len(questions)  # no duplicates
    for q in questions:
        assert set(q.relevant) <= corpus_ids, q.question
    assert {d for q in users for d in q.relevant} == corpus_ids  # every article is asked about
    assert sum(q.negative for q in questions) >= 10


def test_bad_question_lines_name_the_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "q.jsonl"
    f.write_text(json.dumps({"question": "ok", "lang": "en", "relevant": ["a"]}) + "\n\n{broken\n")
    with pytest.raises(ValueError, match=r"q\.jsonl:3"):
        load_questions([f])


def _toy_index() -> KnowledgeIndex:
    texts = {
        "pay": "salary negotiation offer raise",
        "cv": "resume length one page",
        "job": "interview questions answer",
    }
    chunks = [IndexedChunk(i, doc, doc, "", "other", text) for i, (doc, text) in enumerate(texts.items())]
    return KnowledgeIndex(chunks, np.eye(3, 8, dtype=np.float32), version="t")


def test_methods_on_a_toy_index() -> None:
    index = _toy_index()
    questions = [
        EvalQuestion("salary offer", "en", ("pay",)),
        EvalQuestion("resume pages", "en", ("cv",)),
        EvalQuestion("zzz", "en", ()),
    ]
    qvecs = np.zeros((3, 8), np.float32)
    qvecs[0, 0] = 1.0  # dense agrees with lexical
    qvecs[1, 2] = 1.0  # dense points at "job"; BM25 at "cv"
    qvecs[2, 7] = 1.0  # orthogonal to everything, and no shared word
    fusion = FusionConfig(lexical_weight=0.5, rrf_k=1, min_dense=0.5, domain_weight=0.0, min_lexical=0.5)
    out = rank_all(index, questions, qvecs, fusion=fusion, reranker=None)
    assert out.rankings["dense"][1][0] == "job" and out.rankings["lexical"][1][0] == "cv"
    assert out.rankings["hybrid"][0][0] == "pay"
    assert out.metrics("lexical").recall_at_1 == 1.0 and out.metrics("dense").recall_at_1 == 0.5
    assert out.matched == [True, True, False]  # the negative matched nothing
    gate = out.gate()
    assert gate["false_match_rate"] == 0.0 and gate["positives_unmatched"] == []
    assert out.rankings["hybrid+rerank"] == out.rankings["hybrid"]  # no reranker


def test_the_gate_and_domain_filter_on_a_toy_index() -> None:
    index = _toy_index()
    q = np.zeros(8, np.float32)
    q[0] = 1.0
    strict = FusionConfig(min_dense=2.0, domain_weight=0.0, min_lexical=100.0)
    assert index.search("salary", q, top_k=3, candidates=3, fusion=strict).hits == []
    loose = replace(strict, gate=False)
    assert len(index.search("salary", q, top_k=3, candidates=3, fusion=loose).hits) == 3
    lexical_only = replace(strict, min_lexical=0.1)
    result = index.search("salary", q, top_k=3, candidates=3, fusion=lexical_only)
    assert result.matched == 1 and len(result.hits) == 3  # one relevant chunk opens the gate
    other = index.search("salary", q, top_k=3, candidates=3, fusion=lexical_only, domains=["resume"])
    assert other.hits == [] and other.matched == 0


def test_a_message_closer_to_off_topic_questions_than_to_career_ones_matches_nothing() -> None:
    career, offtopic = np.zeros((3, 8), np.float32), np.zeros((3, 8), np.float32)
    career[:, 0] = 1.0
    offtopic[:, 7] = 1.0
    index = _toy_index()
    index.topic = TopicAnchors(career=career, offtopic=offtopic)
    fusion = FusionConfig(min_dense=-1.0, domain_weight=0.0, min_topic_margin=0.0)  # every chunk relevant
    on_topic, off_topic = np.zeros(8, np.float32), np.zeros(8, np.float32)
    on_topic[0], off_topic[7] = 1.0, 1.0
    assert len(index.search("salary", on_topic, top_k=3, candidates=3, fusion=fusion).hits) == 3
    assert index.search("salary", off_topic, top_k=3, candidates=3, fusion=fusion).hits == []
    unchecked = replace(fusion, min_topic_margin=None)
    assert len(index.search("salary", off_topic, top_k=3, candidates=3, fusion=unchecked).hits) == 3
    # a message that shares an article's own words strongly enough is about that article
    overridden = replace(fusion, topic_lexical_override=0.1)
    assert len(index.search("salary", off_topic, top_k=3, candidates=3, fusion=overridden).hits) == 3


def test_results_by_kind_count_the_tools_default_passages_and_off_topic_matches() -> None:
    index = _toy_index()
    questions = [
        EvalQuestion("salary offer", "en", ("pay",), kind="direct"),
        EvalQuestion("resume pages", "en", ("cv",), kind="direct"),
        EvalQuestion("salary", "en", (), kind="offtopic"),
        EvalQuestion("zzz", "en", (), kind="offtopic"),
    ]
    qvecs = np.zeros((4, 8), np.float32)
    qvecs[0, 0] = qvecs[1, 2] = qvecs[2, 0] = qvecs[3, 7] = 1.0
    fusion = FusionConfig(lexical_weight=0.5, rrf_k=1, min_dense=0.5, domain_weight=0.0, min_lexical=0.5)
    kinds = rank_all(index, questions, qvecs, fusion=fusion, reranker=None).by_kind()
    # "resume pages": dense ranks "job" first, BM25 "cv": R@1 misses it, the 3 default passages hold it
    assert kinds["direct"] == {"n": 2, "recall_at_1": 0.5, "tool_passages": 1.0}
    assert kinds["offtopic"] == {"n": 2, "matched": 0.5}


async def _shipped_rankings(
    tmp_path: Path, corpus_db: Path, embedder: Embedder, questions: list[EvalQuestion], *, rerank: bool
) -> MethodRankings:
    """``questions`` ranked by the bundled corpus's knowledge base as the app loads it."""
    path = tmp_path / "kb.db"
    shutil.copy(corpus_db, path)
    db = Database(f"sqlite+aiosqlite:///{path}")
    try:
        kb = KnowledgeBase(db, embedder=embedder)
        await kb.load()
        index = kb.index
        assert isinstance(index, KnowledgeIndex)
        qvecs = kb.embedder.embed_queries([q.question for q in questions])
        return rank_all(index, questions, qvecs, fusion=kb.fusion, reranker=kb.reranker if rerank else None)
    finally:
        await db.dispose()


@pytest.mark.timeout(900)  # the first use of corpus_db ingests the corpus with the real model
async def test_the_topic_margin_keeps_career_questions_and_stops_off_topic_ones(
    tmp_path: Path, corpus_db: Path, embedder: Embedder
) -> None:
    """On the tuning set the margin was fitted on (eval/retrieval/tuning): what it was fitted to keep
    holding. The blind set is reported by `careerwise eval retrieval`, never read by a test."""
    questions = load_questions([EVAL_DIR / "tuning"])
    kinds = (await _shipped_rankings(tmp_path, corpus_db, embedder, questions, rerank=False)).by_kind()
    assert kinds["offtopic"]["matched"] <= 2 / 30, kinds
    for kind in ("direct", "cross"):
        assert kinds[kind]["tool_passages"] >= 0.6, kinds
    # what the title signal (knowledge/titles.py) was fitted to give across languages, a question below
    # (with its lead limit it gave R@1 0.667 and passages 0.800; 0.467 and 0.700 without it:
    # docs/retrieval.md)
    assert kinds["cross"]["recall_at_1"] >= 0.6 and kinds["cross"]["tool_passages"] >= 0.75, kinds
    # Situation questions name no topic and sit at the gate's bars, where the same code and data gave
    # different shares on two machines (docs/retrieval.md, "The topic margin across machines"): their bar
    # is what both machines hold, until the margin is re-fitted with a safety distance (issue #23).
    assert kinds["situation"]["tool_passages"] >= 0.45, kinds


@pytest.mark.timeout(900)  # the first use of corpus_db ingests the corpus with the real model
async def test_shipped_configuration_on_the_test_split(
    tmp_path: Path, corpus_db: Path, embedder: Embedder
) -> None:
    questions = select(load_questions([EVAL_DIR]), "test")
    out = await _shipped_rankings(tmp_path, corpus_db, embedder, questions, rerank=True)
    users = out.metrics("hybrid", source=lambda s: s != "queries_tool.jsonl")
    assert users.n >= 40
    assert users.recall_at_5 >= 0.95, users
    assert out.metrics("hybrid", source=lambda s: s == "queries_tool.jsonl").recall_at_5 >= 0.9
    gate = out.gate()
    assert gate["negatives_matched"] == [], gate
    assert len(gate["positives_unmatched"]) <= 1, gate
