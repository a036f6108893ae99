"""The report guards through the engine and the scripted provider: a deep report with a duplicated item,
a statement the user never made and a wrong comparison reaches the client cleaned, with the guards'
counts on the report event, on the stored trace, in a ``guards`` progress event and in /metrics."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import select

from careerwise.engine import HistoryItem, TurnRequest
from careerwise.events import ProgressEvent
from careerwise.flows import report_guards
from careerwise.flows.facets import SITUATION_K, best_of_articles
from careerwise.services import Services
from careerwise.store import TraceEvent
from tests.conftest import ready
from tests.fakes.fake_llm import FakeLLM, text
from tests.integration.test_deep_answers import (
    AGENTS,
    GOOD_MERGE,
    as_json,
    progress,
    report_of,
    responder,
    run_turn,
    section,
    services_for,
)

ACCOUNTANT = "我是會計師，月薪 4 萬，做了三年，該不該離職？"
AVERAGE = "會計人員的平均月薪約 4.5–4.7 萬，是衡量薪資水準的參考"
INVENTED = "使用者提到自己想要提升溝通能力"
WRONG = "你目前月薪 4 萬，已經接近或高於平均月薪水準"
REPEATED = "先用基本工資倍數法評估目前薪資的位置"

MARKET = {
    **AGENTS["market"],
    "findings": [*AGENTS["market"]["findings"], AVERAGE, "溝通能力是換工作時常被問到的能力"],
}
# A1-A5 findings (A4: the average, A5: communication), A6-A7 insights
MERGE: dict[str, Any] = {
    **GOOD_MERGE,
    "market": [
        *GOOD_MERGE["market"],
        {"text": INVENTED, "cites": ["A5"]},
        {"text": WRONG, "cites": ["A4"]},
    ],
    "actions": [
        {"text": REPEATED, "cites": ["A6"]},
        {"text": REPEATED + "。", "cites": ["A6"]},
        {"text": "列出目前技能的資產與負債，選一個方向深耕一年", "cites": ["B4", "B5"]},
    ],
}


async def test_the_parallel_report_reaches_the_client_cleaned_with_the_counts(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.responder = responder({"market": as_json(MARKET), "merge": as_json(MERGE)})
    services = services_for(make_services, "complex")
    found: list[Any] = []
    original = services.kb.search_many

    situation: list[str] = []

    async def spy(queries: Any, **kw: Any) -> Any:
        results = await original(queries, **kw)
        found.extend(results[:3])  # the facets' own searches; the last is the user's message
        situation.extend(h.chunk.document_id for h in best_of_articles(results[3].hits, SITUATION_K))
        return results

    services.kb.search_many = spy
    events = await run_turn(services, ACCOUNTANT)

    report = report_of(events)
    # the merge guard lets every statement pass but the practice one: it cites C items, and no interview
    # article is among those the accountant's message finds, so that facet has none
    assert report.path == "parallel" and report.dropped_statements == 1
    market = section(report, "市場分析")
    assert "溝通能力" not in market  # the user never said it
    assert "高於平均" not in market and "平均約 4.5–4.7 萬；你的 4 萬低於這個水準" in market
    assert "29,500" in market  # the rest stays
    actions = section(report, "行動建議")
    assert actions.count(REPEATED) == 1 and "深耕一年" in actions
    assert report.guards is not None
    assert report.guards["invented_user_statements"] == 1
    assert report.guards["wrong_comparisons"] == 1
    assert report.guards["duplicate_items"] == 1
    # the facet hits an agent would have seen that were written for engineers, or that lie outside the
    # articles the user's message finds: not cited, counted
    engineers = [
        h.chunk.document_id
        for res in found
        for h in res.hits[:2]
        if report_guards.article_audiences(h.chunk.title) == {"software"}
    ]
    elsewhere = [
        h.chunk.document_id for res in found for h in res.hits[:2] if h.chunk.document_id not in situation
    ]
    assert engineers and set(engineers) <= set(elsewhere) | set(situation)
    assert report.guards["off_domain_hits"] >= len(elsewhere) > 0
    assert report.missing_facets == ["practice: no_knowledge"]  # no interview article is about this
    cited = {src.id for sec in report.sections for src in sec.sources}
    assert cited and not cited & set(engineers)
    # the section events carry the same guarded text as the report
    sections = [e for e in events if e.type == "section"]
    assert [s.body for s in sections] == [s.body for s in report.sections]
    # one progress event says what the guards did, before the report
    guards = [e for e in events if isinstance(e, ProgressEvent) and e.stage == "guards"]
    assert len(guards) == 1 and events.index(guards[0]) < events.index(report)
    assert "invented_user_statements=1" in (guards[0].detail or "")
    # the trace stores the counts with the report
    async with services.db.session() as s:
        row = (await s.scalars(select(TraceEvent).where(TraceEvent.type == "report"))).one()
    assert row.payload["guards"] == report.guards
    # and /metrics counts each guard's actions
    metrics = services.engine.telemetry.metrics.render().decode()
    assert 'careerwise_report_guard_actions_total{guard="invented_user_statements"} 1.0' in metrics
    assert 'careerwise_report_guard_actions_total{guard="duplicate_items"} 1.0' in metrics


async def test_without_anything_to_guard_the_report_says_so_with_zeros(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.responder = responder({})
    events = await run_turn(services_for(make_services, "complex"), "該不該離職")
    report = report_of(events)
    assert report.guards is not None
    assert report.guards["invented_user_statements"] == 0 and report.guards["wrong_comparisons"] == 0
    assert report.guards["duplicate_items"] == 0
    assert "29,500" in section(report, "市場分析")


async def test_the_chain_report_is_guarded_too(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.responder = responder(
        {
            "background": text(f"- 想離開會計工作\n- {INVENTED}。\n搜尋：會計 轉職 薪資"),
            "compare": text("- 〔1〕這篇文章不適用於你的情況。\n- 轉職前先盤點可轉移的技能。"),
            "advice": text("1. 先盤點可轉移的技能。\n2. 先盤點可轉移的技能。\n3. 和主管談談，準備"),
            "reflection": as_json({"corrections": []}),
        }
    )
    services = services_for(make_services, "medium")
    events = await run_turn(services, ACCOUNTANT)
    report = report_of(events)
    assert report.path == "chain"
    assert section(report, "背景分析") == "- 想離開會計工作"
    assert "不適用" not in section(report, "知識庫比對")
    assert section(report, "個人化建議") == "1. 先盤點可轉移的技能。"
    assert report.guards is not None
    assert report.guards["invented_user_statements"] == 1 and report.guards["not_applicable"] == 1
    assert report.guards["duplicate_items"] == 1 and report.guards["truncated_items"] == 1
    assert any(s == "guards" for s, _ in progress(events))


async def test_the_merge_guard_takes_the_users_earlier_words_as_a_source(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    # the user named Figma one message earlier; the merge repeats it about the user's situation
    merge = {
        **GOOD_MERGE,
        "growth": [
            *GOOD_MERGE["growth"],
            {"text": "你會用 Figma，轉職前先評估可轉移的技能", "cites": ["B3"]},
        ],
    }
    fake_llm.responder = responder({"merge": as_json(merge)})
    services = services_for(make_services, "complex")
    await ready(services)
    history = [
        HistoryItem(role="user", content="我平常用 Figma 做簡報"),
        HistoryItem(role="assistant", content="了解。"),
    ]
    events = [e async for e in services.engine.run(TurnRequest(message="該不該離職", history=history))]
    report = report_of(events)
    assert "Figma" in section(report, "成長建議") and report.dropped_statements == 0
