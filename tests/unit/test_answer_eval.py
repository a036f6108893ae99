"""The answer evaluation's scoring (careerwise.evals.answers), on hand-made events: no model involved."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from careerwise.evals import answers as ev
from careerwise.evals.answer_summary import summarise
from careerwise.events import (
    DeltaEvent,
    DoneEvent,
    Event,
    RouteEvent,
    Source,
    ToolCallEvent,
    ToolResultEvent,
)

ITEM = ev.AnswerItem(
    id="x1",
    question="怎麼談薪水？",
    lang="zh-TW",
    covered=True,
    gold=("a-offer-negotiation-three-steps",),
    key_points=(
        ev.KeyPoint("anchor 10-15%", ("10%到15%", "1.1到1.15")),
        ev.KeyPoint("24-hour rule", ("24小時",)),
        ev.KeyPoint("探錨換", ("探、錨、換",)),
    ),
    must_not=(ev.Contradiction("never accept on the spot", ("當場(就)?答應",)),),
)


async def events(*items: Event) -> AsyncIterator[Event]:
    for item in items:
        yield item


def done(status: str = "ok") -> DoneEvent:
    return DoneEvent(
        trace_id="t", conversation_id="c", message_id="m", status=status, path="A", usage={"llm_calls": 2}
    )  # type: ignore[arg-type]


async def score(*items: Event) -> ev.AnswerResult:
    return await ev.score_events(
        ITEM,
        events(*items),
        started=time.perf_counter(),
        terms=["數據庫", "項目經理"],
        detect_simplified=ev.simplified_detector(),
    )


async def test_a_grounded_answer_scores_its_search_its_source_and_its_points() -> None:
    result = await score(
        RouteEvent(intent="career", tier="simple", layer="rules", flow="tool_use"),
        ToolCallEvent(
            call_id="c1",
            name="searchKnowledge",
            requested_arguments={"query": "談薪水"},
            effective_arguments={"query": "談薪水", "top_k": 3},
            reason="as requested",
        ),
        ToolResultEvent(
            call_id="c1",
            name="searchKnowledge",
            ok=True,
            returned=1,
            sources=[Source(id="a-offer-negotiation-three-steps", title="談薪水不是喊價")],
        ),
        DeltaEvent(text="先用「探、錨、換」：開口比目標高 10% 到 15%，", phase=3),
        DeltaEvent(text="而且先說要和家人討論。", phase=3),
        done(),
    )
    assert result.searched and result.queries == ["談薪水"]
    assert result.cited_gold
    assert result.points_hit == ["anchor 10-15%", "探錨換"] and result.points_missed == ["24-hour rule"]
    assert result.coverage == pytest.approx(2 / 3)
    assert result.grounded
    assert result.contradictions == []
    assert result.first_text_s is not None and result.status == "ok"


async def test_an_answer_without_the_gold_source_is_not_grounded_and_contradictions_count() -> None:
    result = await score(
        DeltaEvent(text="收到 offer 就當場答應吧，24 小時內不要拖。", phase=1),
        done(),
    )
    assert not result.searched and not result.cited_gold and not result.grounded
    assert result.points_hit == ["24-hour rule"]
    assert result.contradictions == ["never accept on the spot"]


async def test_leaks_simplified_and_mainland_wording_are_found() -> None:
    result = await score(
        DeltaEvent(text='{"name": "poemAboutCat", "arguments": {}} 这个項目經理<|im_end|>', phase=1),
        done(),
    )
    assert set(result.leaks) >= {"json_call", "template_token"}
    assert result.simplified == ["这", "个"]
    assert result.mainland == ["項目經理"]


def test_traditional_text_has_no_simplified_characters() -> None:
    detect = ev.simplified_detector()
    corpus = Path(__file__).resolve().parents[2] / "src" / "careerwise" / "data" / "corpus"
    for path in corpus.glob("*.md"):
        text = path.read_text(encoding="utf-8")
        assert detect(text) == [], path.name


async def test_notice_lines_are_neither_first_text_nor_answer() -> None:
    result = await score(DeltaEvent(text="（我先查一下）", phase=1, notice=True), done())
    assert result.first_text_s is None and result.answer == ""


async def test_quoted_sentences_count_for_the_answer_and_apart_from_the_models_own_text() -> None:
    """Decision 0023: the phase-2 quote block is part of what the user reads, so it counts for the key
    points and the first text; the model's own share is reported beside it."""
    result = await score(
        DeltaEvent(
            text="**Summer 的文章怎麼說**\n> 「開口比目標高 10% 到 15%」——《談薪水不是喊價》\n\n", phase=2
        ),
        DeltaEvent(text="先用「探、錨、換」三步。", phase=3),
        done(),
    )
    assert result.quoted
    assert result.points_hit == ["anchor 10-15%", "探錨換"] and result.points_in_model_text == ["探錨換"]
    assert result.first_text_s is not None and result.first_model_text_s is not None
    assert result.first_text_s <= result.first_model_text_s
    summary = summarise([result])
    assert summary["quoted_answers"] == 1
    assert summary["key_point_coverage_pct"] > summary["key_point_coverage_model_text_pct"]


def test_the_committed_sets_load_and_name_real_articles() -> None:
    corpus = Path(__file__).resolve().parents[2] / "src" / "careerwise" / "data" / "corpus"
    ids = {p.stem for p in corpus.glob("*.md")}
    for name in ("test.jsonl", "tuning.jsonl"):
        items = ev.load_items(ev.REPO_EVAL_DIR / name)
        assert items
        for item in items:
            assert set(item.gold) <= ids, item.id
            assert item.covered == bool(item.gold) == bool(item.key_points), item.id
    test, tuning = (ev.load_items(ev.REPO_EVAL_DIR / n) for n in ("test.jsonl", "tuning.jsonl"))
    assert len(test) + len(tuning) >= 40
    assert sum(not i.covered for i in test) >= 8
    assert not {i.question for i in test} & {i.question for i in tuning}
    assert len(ev.load_mainland_terms(ev.REPO_EVAL_DIR / "mainland_terms.tsv")) >= 40


def test_summary_splits_first_text_by_path() -> None:
    a = ev.AnswerResult(id="a", lang="zh-TW", covered=True, searched=True, first_text_s=6.0, total_s=20.0)
    b = ev.AnswerResult(id="b", lang="en", covered=False, searched=False, first_text_s=2.0, total_s=9.0)
    a.status = b.status = "ok"
    s = summarise([a, b])
    assert s["first_text_a_s"]["p50"] == 6.0 and s["first_text_b_s"]["p50"] == 2.0
    assert s["searched_covered_pct"] == 100.0 and s["searched_uncovered_pct"] == 0.0
    json.dumps(s)  # printable as JSON
