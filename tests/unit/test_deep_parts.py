"""The deep answers' parts on their own: JSON extraction and schemas, situation queries, the merge guard,
the report builder, the reflection's revisions, deadlines, the event pump and one LLM step."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from careerwise.errors import LLMTimeoutError, LLMUnavailableError, StepFailed
from careerwise.events import Event, ProgressEvent
from careerwise.flows import deep_steps
from careerwise.flows.base import FlowContext, FlowOptions
from careerwise.flows.career_chain import Draft, ReflectionOutput, apply_review, split_query
from careerwise.flows.deep_steps import Budget, orchestration
from careerwise.flows.facets import FACETS, AgentOutput, AgentResult, facet_queries, items_of
from careerwise.flows.merge import MergeOutput, build_report, check_statements
from careerwise.knowledge.index import Hit, IndexedChunk
from careerwise.llm.types import ChatMessage, CompletionRequest, StreamChunk, Usage
from careerwise.tools.registry import ToolRegistry
from careerwise.tracing.background import DEEP_TASK_AFTER_CLOSE, failure_counts

# --------------------------------------------------------------------------- JSON


@pytest.mark.parametrize(
    "reply",
    [
        '{"a": 1}',
        '```json\n{"a": 1}\n```',
        '好的，以下是結果：\n{"a": 1}\n希望有幫助',
        '{not json} then {"a": 1}',
        '[1, 2] and {"a": 1}',
    ],
)
def test_extract_json_finds_the_object(reply: str) -> None:
    assert deep_steps.extract_json(reply) == {"a": 1}


def test_extract_json_says_why_it_failed() -> None:
    with pytest.raises(ValueError, match="empty"):
        deep_steps.extract_json("   ")
    with pytest.raises(ValueError, match="no JSON object"):
        deep_steps.extract_json("我覺得你應該先想清楚。")


def test_agent_output_is_strict_but_tidies_what_is_harmless() -> None:
    ok = deep_steps.parse_model(
        AgentOutput,
        '{"findings": [" a ", "", "b", "c", "d", "e", "f"], "insights": ["x"], "risk_level": " High "}',
    )
    assert ok.findings == ["a", "b", "c", "d", "e"] and ok.risk_level == "high"
    with pytest.raises(ValueError, match=r"risk_level"):
        deep_steps.parse_model(AgentOutput, '{"findings": ["a"], "insights": ["x"], "risk_level": "purple"}')
    with pytest.raises(ValueError, match=r"findings"):
        deep_steps.parse_model(AgentOutput, '{"findings": ["", " "], "insights": ["x"], "risk_level": "low"}')
    with pytest.raises(ValueError, match=r"insights"):
        deep_steps.parse_model(AgentOutput, '{"findings": ["a"], "risk_level": "low"}')


def test_merge_output_normalises_cites_and_refuses_an_empty_report() -> None:
    merge = deep_steps.parse_model(MergeOutput, '{"market": [{"text": "x", "cites": "[a1], b2"}]}')
    assert merge.market[0].cites == ["A1", "B2"]
    with pytest.raises(ValueError, match="no statements"):
        deep_steps.parse_model(MergeOutput, '{"market": [], "actions": []}')


# --------------------------------------------------------------------------- queries


@pytest.mark.parametrize(
    ("message", "zh", "expected"),
    [
        ("該不該離職", True, "離職"),
        ("我想轉職前端但沒有相關經驗", True, "轉職前端 沒有相關經驗"),
        ("Summer，前端還是後端？該不該離職？", True, "前端 後端 離職"),
        ("Should I quit my job to switch to frontend?", False, "quit job switch frontend"),
    ],
)
def test_situation_keywords(message: str, zh: bool, expected: str) -> None:
    assert deep_steps.situation_keywords(message, zh) == expected


def test_facet_queries_combine_each_angle_with_the_situation() -> None:
    queries = facet_queries("我該不該從金融業轉職到前端工程師？值得嗎？", True)
    assert len(queries) == len(FACETS) == 3 and len(set(queries)) == 3
    for facet, query in zip(FACETS, queries, strict=True):
        assert query.startswith(facet.angle[0]) and "金融業" in query and "該不該" not in query


def test_split_query_takes_the_last_search_line() -> None:
    text = "- 想轉職\n- 沒經驗\n搜尋：前端 轉職 作品集"
    assert split_query(text) == ("- 想轉職\n- 沒經驗", "前端 轉職 作品集")
    assert split_query("- wants a change\nSEARCH: frontend switch") == ("- wants a change", "frontend switch")
    assert split_query("- 只有分析") == ("- 只有分析", None)
    local = "1. **目前的背景**：想轉職\n5. **搜尋**：React, Vue.js"  # what the embedded model wrote
    assert split_query(local) == ("1. **目前的背景**：想轉職", "React, Vue.js")


# --------------------------------------------------------------------------- the guard


def test_numbers_ignore_thousands_separators_and_list_marks() -> None:
    assert deep_steps.numbers("每月 29,500 元、時薪 196 元，約 1.5 倍") == {"29500", "196", "1.5"}
    assert deep_steps.numbers("２９，５００") == {"29500"}  # full-width


def test_named_tokens_in_chinese_and_english() -> None:
    assert deep_steps.named_tokens("學 React 和 Node.js，再投 LinkedIn") == {"react", "node.js", "linkedin"}
    assert deep_steps.named_tokens("Learn React first. Then apply on LinkedIn and AWS.") == {
        "react",
        "linkedin",
        "aws",
    }
    assert deep_steps.named_tokens("Your salary is below the market.") == set()


def test_unsupported_catches_numbers_names_and_unrelated_text() -> None:
    cited = ["2026 年起基本工資為每月 29,500 元"]
    chunks = ["第一條是基本工資。2026 年起調升為每月 29,500 元、時薪 196 元。"]
    assert deep_steps.unsupported("2026 年起基本工資每月 29500 元", cited, chunks) is None
    assert (
        deep_steps.unsupported("時薪 196 元，2026 年起基本工資 29,500 元", cited, chunks) is None
    )  # from the chunk
    assert "98765" in (deep_steps.unsupported("平均月薪 98,765 元", cited, chunks) or "")
    assert "google" in (deep_steps.unsupported("Google 調高了基本工資", cited, chunks) or "")
    assert "little in common" in (deep_steps.unsupported("面試時先講結論再講過程和細節", cited, chunks) or "")
    assert (
        deep_steps.unsupported("1. 2026 年起基本工資為每月 29,500 元", cited, []) is None
    )  # a list number is not a fact


def _hit(chunk_id: int, doc: str, domain: str, text: str, score: float = 0.2) -> Hit:
    return Hit(IndexedChunk(chunk_id, doc, f"title {doc}", "section", domain, text), score, score, 0.0)


def _results() -> list[AgentResult]:
    market = AgentResult(
        FACETS[0],
        [_hit(1, "a-salary", "market_salary", "2026 年起基本工資調升為每月 29,500 元，時薪 196 元。")],
        AgentOutput(
            findings=["2026 年起基本工資為每月 29,500 元"],
            insights=["用基本工資倍數法看薪資位置"],
            risk_level="medium",
        ),
    )
    growth = AgentResult(FACETS[1], [], None)
    practice = AgentResult(
        FACETS[2],
        [_hit(3, "b-interview", "interview_practice", "STAR+ 有五個步驟")],
        None,
        StepFailed("timeout"),
    )
    return [market, growth, practice]


def test_items_are_numbered_per_agent_findings_first() -> None:
    items = items_of(_results())
    assert [(i.id, i.kind) for i in items.values()] == [("A1", "finding"), ("A2", "insight")]


def test_check_statements_and_the_report() -> None:
    results = _results()
    items = items_of(results)
    merge = MergeOutput.model_validate(
        {
            "market": [
                {"text": "2026 年起基本工資為每月 29,500 元", "cites": ["A1"]},
                {
                    "text": "時薪是 196 元，2026 年起基本工資為每月 29,500 元",
                    "cites": ["A1"],
                },  # 196: A's chunk
                {"text": "前端工程師平均月薪 70,000 元", "cites": ["A1"]},
                {"text": "基本工資會一直漲", "cites": []},
            ],
            "growth": [{"text": "2026 年起基本工資為每月 29,500 元", "cites": ["A1"]}],  # not growth's
            "actions": [{"text": "用基本工資倍數法看薪資位置", "cites": ["A2"]}],
        }
    )
    checked = check_statements(merge, items, "該不該離職")
    assert [t for t, _ in checked.kept["market"]] == [
        "2026 年起基本工資為每月 29,500 元",
        "時薪是 196 元，2026 年起基本工資為每月 29,500 元",
    ]
    assert [why for _, why in checked.dropped] == [
        "numbers not in its sources: 70000",
        "cites nothing",
        "cites nothing from the growth facet",
    ]

    ctx = _ctx()
    report, notes = build_report(ctx, results, checked)
    assert [s.heading for s in report.sections] == ["市場分析", "成長建議", "實戰準備", "行動建議"]
    assert [s.body for s in report.sections[1:3]] == ["此面向暫無分析資料"] * 2
    assert report.missing_facets == ["growth: no_knowledge", "practice: timeout"]
    assert report.dropped_statements == 3 and notes == []
    assert [s.id for s in report.sections[0].sources] == ["a-salary"] and report.sections[
        0
    ].risk_level == "medium"
    assert report.sections[3].body == "- 用基本工資倍數法看薪資位置"


def test_without_a_merge_the_findings_and_insights_are_shown_as_they_are() -> None:
    report, _ = build_report(_ctx(), _results(), None)
    assert report.sections[0].body == "- 2026 年起基本工資為每月 29,500 元"
    assert report.sections[3].body == "- 用基本工資倍數法看薪資位置"
    assert report.dropped_statements is None


def test_a_facet_whose_statements_were_all_dropped_falls_back_to_its_findings() -> None:
    results = _results()
    merge = MergeOutput.model_validate({"market": [{"text": "月薪 12 萬", "cites": ["A1"]}]})
    report, notes = build_report(_ctx(), results, check_statements(merge, items_of(results), "x"))
    assert report.sections[0].body == "- 2026 年起基本工資為每月 29,500 元"
    assert report.dropped_statements == 1 and len(notes) == 2


# --------------------------------------------------------------------------- the reflection's revisions


def test_apply_review_takes_a_supported_fix_and_records_it() -> None:
    draft = Draft("背景", "2026 年基本工資是每月 25,000 元", "建議")
    review = ReflectionOutput(corrections=["改為 29,500 元"], comparison="2026 年基本工資是每月 29,500 元")
    final, changes, refused = apply_review(draft, review, allowed=["2026 年 29,500 元"])
    assert (
        final.comparison == "2026 年基本工資是每月 29,500 元"
        and changes == ["改為 29,500 元"]
        and refused == []
    )


@pytest.mark.parametrize(
    ("revision", "corrections", "why"),
    [
        ("2026 年基本工資是每月 29,500 元，前端平均 87,654 元", ["加上平均"], "87654"),
        ("修正後的完整內容（沒改就省略）", ["改了"], "template phrase"),
        ("面試時先講結論，再講過程和學到的東西", ["重寫"], "a rewrite"),
        ("2026 年基本工資是每月 29,500 元，可以當作底線", [], "without stating a correction"),
    ],
)
def test_apply_review_refuses_what_is_not_a_grounded_correction(
    revision: str, corrections: list[str], why: str
) -> None:
    draft = Draft("背景", "2026 年基本工資是每月 29,500 元", "建議")
    review = ReflectionOutput(corrections=corrections, comparison=revision)
    final, changes, refused = apply_review(draft, review, allowed=["29,500"])
    assert final == draft and changes == [] and len(refused) == 1 and why in refused[0]


def test_a_revised_section_may_come_as_a_list_of_lines() -> None:
    review = deep_steps.parse_model(
        ReflectionOutput, '{"corrections": ["x"], "advice": ["- 第一步", " ", "- 第二步"]}'
    )
    assert review.advice == "- 第一步\n- 第二步" and review.background is None
    with pytest.raises(ValueError, match="advice"):
        deep_steps.parse_model(ReflectionOutput, '{"corrections": [], "advice": {"text": "x"}}')


def test_claimed_corrections_without_a_change_are_not_recorded() -> None:
    draft = Draft("背景", "基本工資 29,500 元", "建議")
    same = ReflectionOutput(corrections=["沒問題"], comparison="基本工資 29,500 元")
    assert apply_review(draft, same, allowed=[]) == (draft, [], [])


def test_placeholders_from_the_schema_are_not_findings() -> None:
    with pytest.raises(ValueError, match="findings"):
        deep_steps.parse_model(
            AgentOutput, '{"findings": ["具體發現1", "具體發現2"], "insights": ["x"], "risk_level": "low"}'
        )
    merge = deep_steps.parse_model(
        MergeOutput, '{"market": [{"text": "…", "cites": ["A1"]}, {"text": "ok", "cites": []}]}'
    )
    assert [s.text for s in merge.market] == ["", "ok"]


# --------------------------------------------------------------------------- deadlines, pump, one step


def test_budget_gives_each_step_the_smaller_of_its_deadline_and_what_is_left() -> None:
    assert Budget(30, 10).step_timeout() <= 10
    assert Budget(2, 10).step_timeout() == 2
    spent = Budget(2, 0.0)
    time.sleep(0.001)
    with pytest.raises(StepFailed) as exc:
        spent.step_timeout()
    assert exc.value.code == "turn_deadline"


async def test_pump_yields_events_as_they_come_then_raises_the_tasks_error() -> None:
    async def run(emit: deep_steps.Emit) -> None:
        emit(ProgressEvent(stage="merge", detail="1"))
        await asyncio.sleep(0)
        emit(ProgressEvent(stage="merge", detail="2"))
        raise RuntimeError("boom")

    seen: list[str | None] = []
    with pytest.raises(RuntimeError, match="boom"):
        async for event in deep_steps.pump(run):
            assert isinstance(event, ProgressEvent)
            seen.append(event.detail)
    assert seen == ["1", "2"]


async def test_closing_the_pump_cancels_its_task() -> None:
    cancelled = asyncio.Event()

    async def run(emit: deep_steps.Emit) -> None:
        emit(ProgressEvent(stage="merge"))
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    gen = deep_steps.pump(run)
    first: Event = await gen.__anext__()
    assert first.type == "progress"
    await gen.aclose()
    assert cancelled.is_set()


async def test_a_task_that_fails_as_the_pump_closes_is_logged_and_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def run(emit: deep_steps.Emit) -> None:
        emit(ProgressEvent(stage="merge"))
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            raise RuntimeError("cleanup failed") from None

    before = failure_counts()[DEEP_TASK_AFTER_CLOSE]
    gen = deep_steps.pump(run)
    await gen.__anext__()
    with caplog.at_level(logging.ERROR, logger=orchestration.log.name):
        await gen.aclose()
    assert failure_counts()[DEEP_TASK_AFTER_CLOSE] == before + 1
    assert any("after its reader had gone" in r.getMessage() and r.exc_info for r in caplog.records)


class ScriptedProvider:
    """A provider that answers from a list: a string (streamed in two pieces), an exception, or a delay."""

    name = "scripted"
    model = "scripted"

    def __init__(self, *replies: object) -> None:
        self.replies = list(replies)
        self.requests: list[CompletionRequest] = []

    async def stream(self, request: CompletionRequest) -> AsyncIterator[StreamChunk]:
        self.requests.append(request)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, float):
            await asyncio.sleep(reply)
            reply = "{}"
        assert isinstance(reply, str)
        half = len(reply) // 2
        yield StreamChunk(text=reply[:half])
        yield StreamChunk(text=reply[half:], usage=Usage(prompt_tokens=10, completion_tokens=5))

    async def aclose(self) -> None:
        return None


def _ctx(provider: Any = None, *, retries: int = 1) -> FlowContext:
    return FlowContext(
        message="該不該離職",
        history=[],
        zh=True,
        provider=provider or ScriptedProvider(),
        tools=ToolRegistry(),
        intent="career",
        options=FlowOptions(llm_retries=retries),
    )


GOOD = '{"findings": ["a"], "insights": ["b"], "risk_level": "low"}'
ASK = [ChatMessage(role="system", content="s"), ChatMessage(role="user", content="u")]


async def _ask(ctx: FlowContext, budget: Budget | None = None) -> AgentOutput:
    return await deep_steps.ask_json(
        ctx, ASK, AgentOutput, temperature=0.3, max_tokens=100, budget=budget or Budget(5, 5), label="agent_x"
    )


async def test_ask_json_retries_once_with_the_error_then_succeeds() -> None:
    provider = ScriptedProvider('{"findings": []}', GOOD)
    ctx = _ctx(provider)
    out = await _ask(ctx)
    assert out.risk_level == "low"
    retry = provider.requests[1].messages
    assert retry[-2].content == '{"findings": []}' and "findings" in retry[-1].content
    assert ctx.state.llm_calls == 2 and ctx.state.prompt_tokens == 20 and ctx.state.retries == 1
    assert "agent_x_ms" in ctx.state.timings


async def test_ask_json_fails_after_the_second_invalid_reply() -> None:
    ctx = _ctx(ScriptedProvider("nope", "still nope"))
    with pytest.raises(StepFailed) as exc:
        await _ask(ctx)
    assert exc.value.code == "invalid_json" and not exc.value.unreachable


async def test_ask_json_maps_provider_failures() -> None:
    with pytest.raises(StepFailed) as exc:
        await _ask(_ctx(ScriptedProvider(LLMUnavailableError("down"), LLMUnavailableError("down"))))
    assert exc.value.code == "llm_unavailable" and exc.value.unreachable
    # a retryable error is retried once (llm_retries), then the reply is used
    assert (await _ask(_ctx(ScriptedProvider(LLMTimeoutError("slow"), GOOD)))).findings == ["a"]
    with pytest.raises(StepFailed) as exc:
        await _ask(_ctx(ScriptedProvider(LLMTimeoutError("slow")), retries=0))
    assert exc.value.code == "timeout"


async def test_ask_json_stops_at_the_step_deadline() -> None:
    ctx = _ctx(ScriptedProvider(2.0))
    with pytest.raises(StepFailed) as exc:
        await _ask(ctx, Budget(0.1, 5))
    assert exc.value.code == "timeout"  # not "empty": the step did not wait for the provider's reply
