"""Deep answers through the engine: the medium chain with reflection, the complex parallel flow with a
guarded merge, and the degradation ladder, against the scripted fake provider (a real HTTP server).

Agents run concurrently, so the fake answers by request content (``fake.responder``), never by order.
Routing is forced to the tier under test; the router's own tier rules are tested elsewhere.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Callable
from typing import Any

import httpx
from sqlalchemy import delete, select

from careerwise.engine import TurnRequest
from careerwise.events import (
    DegradedEvent,
    DeltaEvent,
    DoneEvent,
    ErrorEvent,
    ProgressEvent,
    ReportEvent,
    RouteEvent,
)
from careerwise.routing.router import RouteDecision
from careerwise.services import Services
from careerwise.store import Chunk, Resume, Trace, TraceEvent, User
from tests.conftest import LiveServer, parse_sse, ready
from tests.fakes.fake_llm import FakeLLM, Reply, error, stall, text

COMPLEX = "我是工程師，月薪只有基本工資多一點，該不該離職？技能要怎麼盤點？面試行為題怎麼答？"
MEDIUM = "我想轉職前端但沒有相關經驗"
FAST = {"deep_step_timeout": 3.0, "deep_turn_timeout": 15.0}


class FixedRouter:
    """Routing forced to one career tier."""

    def __init__(self, tier: str) -> None:
        self.tier = tier

    async def route(self, message: str) -> RouteDecision:
        return RouteDecision(
            intent="career", tier=self.tier, layer="default", reasons=[f"forced {self.tier}"]
        )


def services_for(make_services: Callable[..., Services], tier: str, **overrides: Any) -> Services:
    services = make_services(**(FAST | overrides))
    services.engine.router = FixedRouter(tier)
    return services


async def run_turn(services: Services, message: str) -> list[Any]:
    await ready(services)
    return [e async for e in services.engine.run(TurnRequest(message=message))]


def report_of(events: list[Any]) -> ReportEvent:
    reports = [e for e in events if isinstance(e, ReportEvent)]
    assert len(reports) == 1, [e.type for e in events]
    return reports[0]


def degraded(events: list[Any]) -> list[str]:
    return [e.reason for e in events if isinstance(e, DegradedEvent)]


def progress(events: list[Any]) -> list[tuple[str, str | None]]:
    return [(e.stage, e.detail) for e in events if isinstance(e, ProgressEvent)]


def section(report: ReportEvent, heading: str) -> str:
    return str(next(s.body for s in report.sections if s.heading == heading))


# --------------------------------------------------------------------------- the scripted provider

ROLES = (
    ("market", ("你是市場分析師", "You are the market analyst")),
    ("growth", ("你是成長顧問", "You are the growth coach")),
    ("practice", ("你是實戰教練", "You are the practice coach")),
    ("merge", ("總編輯",)),
    ("background", ("第一步：背景分析", "step 1 of 3")),
    ("compare", ("第二步：知識庫比對", "step 2 of 3")),
    ("advice", ("第三步：個人化建議", "step 3 of 3")),
    ("reflection", ("嚴格的審稿人", "strict reviewer")),
)


def role_of(body: dict[str, Any]) -> str:
    system = str(body["messages"][0]["content"])
    for role, markers in ROLES:
        if any(m in system for m in markers):
            return role
    return "simple"


def is_retry(body: dict[str, Any]) -> bool:
    return len(body["messages"]) > 2 and body["messages"][-2]["role"] == "assistant"


def requests_of(fake: FakeLLM, role: str) -> list[dict[str, Any]]:
    return [r for r in fake.requests if role_of(r) == role]


def as_json(value: object, **kw: Any) -> Reply:
    return text(json.dumps(value, ensure_ascii=False), chunks=3, **kw)


AGENTS: dict[str, dict[str, Any]] = {
    "market": {
        "findings": [
            "2026 年起基本工資為每月 29,500 元",
            "全年總薪資的中位數大約在 50 萬出頭",
            "市場冷熱分明",
        ],
        "insights": ["先用基本工資倍數法評估目前薪資的位置", "離職前先查清楚同職位的行情"],
        "risk_level": "medium",
    },
    "growth": {
        "findings": [
            "技能盤點可以用技能資產負債表",
            "每年採用 1 深 2 寬的學習規則",
            "轉職前先評估可轉移的技能",
        ],
        "insights": ["列出目前技能的資產與負債", "選一個方向深耕一年"],
        "risk_level": "low",
    },
    "practice": {
        "findings": ["被問離職原因時要避開三不說", "STAR+ 有五個步驟", "準備 6 個故事可以應對 12 種題目"],
        "insights": ["準備離職原因的正向講法", "用 STAR+ 寫下 6 個故事"],
        "risk_level": "high",
    },
}

GOOD_MERGE: dict[str, Any] = {
    "market": [
        {"text": "2026 年起基本工資為每月 29,500 元，可以當作衡量薪資的尺", "cites": ["A1"]},
        {"text": "全年總薪資的中位數大約在 50 萬出頭", "cites": ["A2"]},
    ],
    "growth": [{"text": "用技能資產負債表盤點技能，並採用 1 深 2 寬的學習規則", "cites": ["B1", "B2"]}],
    "practice": [
        {"text": "被問離職原因時要避開三不說，並準備 6 個故事應對 12 種題目", "cites": ["C1", "C3"]}
    ],
    "actions": [
        {"text": "先用基本工資倍數法評估目前薪資的位置", "cites": ["A4"]},
        {"text": "列出目前技能的資產與負債，再準備離職原因的正向講法", "cites": ["B4", "C4"]},
    ],
}


def responder(
    replies: dict[str, Reply | Callable[[dict[str, Any]], Reply]], *, agent_delay: float = 0.0
) -> Callable[[dict[str, Any]], Reply]:
    """Answers by role; agents default to AGENTS (after ``agent_delay``), the merge to GOOD_MERGE."""

    def respond(body: dict[str, Any]) -> Reply:
        role = role_of(body)
        reply = replies.get(role)
        if callable(reply):
            return reply(body)
        if reply is not None:
            return reply
        if role in AGENTS:
            return as_json(AGENTS[role], first_token_delay=agent_delay)
        if role == "merge":
            return as_json(GOOD_MERGE)
        return text(f"（沒有為 {role} 準備回覆）")

    return respond


# --------------------------------------------------------------------------- complex: the parallel flow


async def test_complex_question_gets_a_four_section_report_from_three_concurrent_agents(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    # each agent's answer starts 0.5 s after its request: if the agents ran one after another, the fake
    # would never have more than one response open at a time
    fake_llm.responder = responder({}, agent_delay=0.5)
    services = services_for(make_services, "complex")
    searches: list[list[str]] = []
    original = services.kb.search_many

    async def spy(queries: Any, **kw: Any) -> Any:
        searches.append(list(queries))
        return await original(queries, **kw)

    services.kb.search_many = spy
    events = await run_turn(services, COMPLEX)

    route = events[0]
    assert isinstance(route, RouteEvent) and route.flow == "career-parallel"
    assert fake_llm.max_open_streams >= 3  # all three agent requests were open at once
    report = report_of(events)
    assert [s.heading for s in report.sections] == ["市場分析", "成長建議", "實戰準備", "行動建議"]
    assert report.path == "parallel" and report.missing_facets == [] and report.dropped_statements == 0
    assert "29,500" in section(report, "市場分析")
    assert [s.risk_level for s in report.sections] == ["medium", "low", "high", None]
    # one batched search: three queries written for the situation, each in its own domain, and the
    # user's message itself, whose articles the facets keep to
    assert len(searches) == 1 and len(searches[0]) == 4 and searches[0][3] == COMPLEX
    facet_queries = searches[0][:3]
    assert len(set(facet_queries)) == 3 and all("離職" in q and q != COMPLEX for q in facet_queries)
    domain_of = {c.document_id: c.domain for c in services.kb.index.chunks}
    for heading, domain in (
        ("市場分析", "market_salary"),
        ("成長建議", "growth_skills"),
        ("實戰準備", "interview_practice"),
    ):
        sources = next(s.sources for s in report.sections if s.heading == heading)
        assert sources and {domain_of[s.id] for s in sources} == {domain}
    # the agents: temperature 0.3, their facet's passages; the merge: 0.5, only the agents' outputs
    agent_requests = [r for role in ("market", "growth", "practice") for r in requests_of(fake_llm, role)]
    assert len(agent_requests) == 3 and {r["temperature"] for r in agent_requests} == {0.3}
    assert '"risk_level"' in agent_requests[0]["messages"][0]["content"]
    merge = requests_of(fake_llm, "merge")
    assert len(merge) == 1 and merge[0]["temperature"] == 0.5
    merge_input = merge[0]["messages"][-1]["content"]
    assert "A1（發現）2026 年起基本工資為每月 29,500 元" in merge_input and "<<<" not in merge_input
    # progress before the report, nothing degraded, four LLM calls
    stages = [s for s, _ in progress(events)]
    assert stages[0] == "facet_search" and stages.count("agent_started") == 3
    assert stages.count("agent_finished") == 3 and "merge" in stages
    kinds = [e.type for e in events]
    assert kinds.index("report") > max(i for i, k in enumerate(kinds) if k == "progress")
    assert degraded(events) == []
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.status == "ok" and done.path == "parallel"
    assert done.usage["llm_calls"] == 4
    async with services.db.session() as s:
        trace = (await s.scalars(select(Trace))).one()
        rows = (await s.scalars(select(TraceEvent).where(TraceEvent.type == "report"))).all()
    assert trace.path == "parallel" and trace.flow == "career-parallel" and not trace.degraded
    assert rows[0].payload["dropped_statements"] == 0
    assert {"facet_search_ms", "agent_market_ms", "merge_ms"} <= set(trace.timings)


async def test_merge_statements_that_invent_facts_or_cite_nothing_are_dropped(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    invented = {
        **GOOD_MERGE,
        "market": [
            *GOOD_MERGE["market"],
            {"text": "台灣工程師平均月薪是 98,765 元", "cites": ["A1"]},  # a number A1 does not contain
        ],
        "growth": [
            *GOOD_MERGE["growth"],
            {"text": "Google 正在大量招募轉職的工程師", "cites": ["B3"]},  # a name from nowhere
            {"text": "轉職一定會成功，不用擔心", "cites": []},  # cites nothing
            {"text": "每年採用 1 深 2 寬的學習規則", "cites": ["Z9"]},  # cites an id that does not exist
        ],
    }
    fake_llm.responder = responder({"merge": as_json(invented)})
    events = await run_turn(services_for(make_services, "complex"), COMPLEX)
    report = report_of(events)
    shown = "\n".join(s.body for s in report.sections)
    assert "98,765" not in shown and "Google" not in shown and "不用擔心" not in shown
    assert "29,500" in shown and "1 深 2 寬" in shown  # the supported statements stay
    assert report.dropped_statements == 4
    assert any(s == "merge" and d and "dropped 4" in d for s, d in progress(events))


async def test_invalid_json_is_retried_once_with_the_error_then_the_agent_counts_as_failed(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    def market(body: dict[str, Any]) -> Reply:  # wrong first, right when told why
        if is_retry(body):
            return as_json(AGENTS["market"])
        return as_json({"findings": "not a list", "risk_level": "purple"})

    fake_llm.responder = responder({"market": market, "practice": text("我覺得你應該先想清楚。")})
    services = services_for(make_services, "complex")
    events = await run_turn(services, COMPLEX)

    market_requests = requests_of(fake_llm, "market")
    assert len(market_requests) == 2
    note = market_requests[1]["messages"][-1]["content"]
    assert "findings" in note and "risk_level" in note  # the validation error went back to the model
    practice_requests = requests_of(fake_llm, "practice")
    assert len(practice_requests) == 2  # retried once, then failed
    report = report_of(events)
    assert section(report, "實戰準備") == "此面向暫無分析資料"
    assert report.missing_facets == ["practice: invalid_json"]
    assert "29,500" in section(report, "市場分析")
    assert degraded(events) == ["deep_agent_failed"]
    failed = next(e for e in events if isinstance(e, DegradedEvent))
    assert "實戰準備" in failed.message and "格式" in failed.message
    assert "[C] 實戰教練：此面向暫無資料" in requests_of(fake_llm, "merge")[0]["messages"][-1]["content"]
    async with services.db.session() as s:
        trace = (await s.scalars(select(Trace))).one()
    assert trace.degraded is True and trace.timings["retries"] >= 2


async def test_an_agent_that_times_out_and_one_that_returns_nothing_leave_a_report_from_the_rest(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.responder = responder({"growth": stall(5.0), "practice": text("")})
    events = await run_turn(services_for(make_services, "complex", deep_step_timeout=0.8), COMPLEX)
    report = report_of(events)
    assert report.missing_facets == ["growth: timeout", "practice: empty"]
    assert section(report, "成長建議") == section(report, "實戰準備") == "此面向暫無分析資料"
    assert "29,500" in section(report, "市場分析")
    actions = section(report, "行動建議")
    assert "基本工資倍數法" in actions and "資產與負債" not in actions  # B4 was never there to cite
    assert degraded(events) == ["deep_agent_failed", "deep_agent_failed"]
    assert len(requests_of(fake_llm, "growth")) == 1  # a timeout is not retried: the deadline is spent
    assert events[-1].status == "ok"


async def test_a_facet_without_knowledge_is_marked_and_costs_no_llm_call(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.responder = responder({})
    services = services_for(make_services, "complex")
    async with services.db.session() as s, s.begin():
        await s.execute(delete(Chunk).where(Chunk.domain == "market_salary"))
    events = await run_turn(services, COMPLEX)
    report = report_of(events)
    assert section(report, "市場分析") == "此面向暫無分析資料"
    assert report.missing_facets == ["market: no_knowledge"]
    assert requests_of(fake_llm, "market") == [] and events[-1].usage["llm_calls"] == 3
    assert degraded(events) == []  # no knowledge for a facet is normal, not a failure (seed 001)
    assert ("agent_finished", "market: skipped (no_knowledge)") in progress(events)


async def test_english_question_gets_english_headings(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.responder = responder({"practice": text("")})
    events = await run_turn(
        services_for(make_services, "complex"), "Should I quit my job to switch to frontend?"
    )
    report = report_of(events)
    assert [s.heading for s in report.sections] == [
        "Market analysis",
        "Growth advice",
        "Practical preparation",
        "Next steps",
    ]
    assert section(report, "Practical preparation") == "No analysis is available for this facet."
    assert "You are the market analyst" in requests_of(fake_llm, "market")[0]["messages"][0]["content"]


# --------------------------------------------------------------------------- the ladder


async def test_all_agents_failing_steps_down_to_the_chain(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.responder = responder(
        {
            "market": text("不是 JSON"),
            "growth": text(""),
            "practice": error(400),
            "background": text("- 想離職\n- 還沒有下一份工作\n搜尋：離職 時機"),
            "compare": text("- 〔1〕說明了離職前要想清楚"),
            "advice": text("先別急著離職，先盤點。"),
            "reflection": as_json({"corrections": []}),
        }
    )
    events = await run_turn(services_for(make_services, "complex"), COMPLEX)
    assert degraded(events) == ["deep_agent_failed"] * 3 + ["deep_agents_failed"]
    report = report_of(events)
    assert report.path == "chain" and [s.heading for s in report.sections] == [
        "背景分析",
        "知識庫比對",
        "個人化建議",
    ]
    assert report.reflection == []
    assert events[-1].path == "chain" and events[-1].status == "ok"
    assert len(requests_of(fake_llm, "merge")) == 0


async def test_when_the_deep_time_runs_out_every_step_down_is_reported(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.responder = responder(
        {"market": stall(5.0), "growth": stall(5.0), "practice": stall(5.0), "simple": text("先別急著離職。")}
    )
    services = services_for(make_services, "complex", deep_step_timeout=5.0, deep_turn_timeout=0.8)
    events = await run_turn(services, COMPLEX)
    assert degraded(events) == ["deep_agent_failed"] * 3 + ["deep_agents_failed", "deep_chain_failed"]
    assert "".join(e.text for e in events if isinstance(e, DeltaEvent)) == "先別急著離職。"
    assert not [e for e in events if isinstance(e, ReportEvent)]
    assert requests_of(fake_llm, "background") == []  # no time was left for the chain
    assert events[-1].path == "B" and events[-1].status == "ok"


async def test_a_failed_chain_steps_down_to_the_streamed_answer(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.responder = responder({"background": stall(5.0), "simple": text("先做一個小作品。")})
    services = services_for(make_services, "medium", deep_step_timeout=0.6)
    events = await run_turn(services, MEDIUM)
    assert events[0].flow == "career-chain"
    assert degraded(events) == ["deep_chain_failed"]
    assert "逾時" in next(e for e in events if isinstance(e, DegradedEvent)).message
    assert "".join(e.text for e in events if isinstance(e, DeltaEvent)) == "先做一個小作品。"
    assert events[-1].path == "B" and events[-1].status == "ok"
    async with services.db.session() as s:
        trace = (await s.scalars(select(Trace))).one()
    assert trace.degraded is True and trace.flow == "career-chain"


def _closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"  # nothing listens there any more


async def test_provider_down_on_a_complex_question_shows_knowledge_base_excerpts(
    make_services: Callable[..., Services],
) -> None:
    events = await run_turn(services_for(make_services, "complex", llm_base_url=_closed_port_url()), COMPLEX)
    assert degraded(events) == ["deep_agent_failed"] * 3 + ["deep_agents_failed", "llm_unreachable"]
    notice = next(e for e in events if isinstance(e, DegradedEvent) and e.reason == "llm_unreachable")
    assert "無法連線" in notice.message
    report = report_of(events)
    assert report.path == "excerpts" and 1 <= len(report.sections) <= 3
    assert all(s.sources and s.body for s in report.sections)
    assert events[-1].path == "excerpts" and events[-1].status == "ok"


async def test_provider_down_on_a_medium_question_shows_excerpts_for_the_message(
    make_services: Callable[..., Services],
) -> None:
    events = await run_turn(services_for(make_services, "medium", llm_base_url=_closed_port_url()), MEDIUM)
    assert degraded(events) == ["deep_chain_failed", "llm_unreachable"]
    report = report_of(events)
    assert report.path == "excerpts" and report.sections
    assert not [e for e in events if isinstance(e, ErrorEvent)]


async def test_provider_down_and_no_knowledge_is_an_error_not_silence(
    make_services: Callable[..., Services],
) -> None:
    services = services_for(make_services, "medium", llm_base_url=_closed_port_url())
    events = await run_turn(services, "qwzx blorfquux zzzq vvvv kkkk")
    assert degraded(events) == ["deep_chain_failed"]
    err = next(e for e in events if isinstance(e, ErrorEvent))
    assert err.code == "llm_unavailable" and events[-1].status == "error"


async def test_unavailable_knowledge_base_goes_to_the_streamed_answer_and_says_so_once(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.responder = responder({"simple": text("一般建議。")})
    services = services_for(make_services, "complex")
    await ready(services)
    services.kb.mark_failed("RuntimeError: index file corrupt")
    events = [e async for e in services.engine.run(TurnRequest(message=COMPLEX))]
    assert degraded(events) == ["deep_knowledge_unavailable"]
    assert "".join(e.text for e in events if isinstance(e, DeltaEvent)) == "一般建議。"


async def _raising(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("disk I/O error")


def search_failures(services: Services) -> float:
    registry = services.engine.telemetry.metrics.registry
    return registry.get_sample_value("careerwise_retrieval_failures_total", {"kind": "search_failed"}) or 0.0


async def test_a_failed_facet_search_is_said_and_counted_not_shown_as_unavailable(
    fake_llm: FakeLLM, make_services: Callable[..., Services], monkeypatch: Any
) -> None:
    fake_llm.responder = responder({"simple": text("一般建議。")})
    services = services_for(make_services, "complex")
    await ready(services)
    monkeypatch.setattr(services.kb, "search_many", _raising)
    before = search_failures(services)
    events = [e async for e in services.engine.run(TurnRequest(message=COMPLEX))]
    assert degraded(events) == ["deep_knowledge_search_failed"]
    assert "搜尋失敗" in next(e for e in events if isinstance(e, DegradedEvent)).message
    assert "".join(e.text for e in events if isinstance(e, DeltaEvent)) == "一般建議。"
    assert search_failures(services) == before + 1
    assert requests_of(fake_llm, "market") == []  # no agent ran without its passages


async def test_provider_down_and_a_failed_excerpt_search_is_said_and_counted(
    make_services: Callable[..., Services], monkeypatch: Any
) -> None:
    services = services_for(make_services, "medium", llm_base_url=_closed_port_url())
    await ready(services)
    monkeypatch.setattr(services.kb, "search", _raising)
    before = search_failures(services)
    events = [e async for e in services.engine.run(TurnRequest(message=MEDIUM))]
    assert degraded(events) == ["deep_chain_failed", "excerpts_search_failed"]
    err = next(e for e in events if isinstance(e, ErrorEvent))
    assert err.code == "llm_unavailable" and events[-1].status == "error"
    assert search_failures(services) == before + 1


# --------------------------------------------------------------------------- medium: the chain


async def test_medium_chain_reflection_corrects_a_draft_that_contradicts_the_knowledge(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    wrong = "- 〔1〕2026 年的基本工資是每月 25,000 元，轉職期間的收入底線可以抓這個數字"
    fixed = "- 〔1〕2026 年起基本工資調升為每月 29,500 元，轉職期間的收入底線可以抓這個數字"
    correction = "知識庫比對：基本工資原寫 25,000 元，依〔1〕改為 29,500 元"
    fake_llm.responder = responder(
        {
            "background": text(
                "- 想轉職前端\n- 沒有相關經驗\n- 擔心轉職期間的收入\n搜尋：基本工資 新鮮人 起薪"
            ),
            "compare": text(wrong),
            "advice": text("先估算轉職期間的生活費，再開始學前端。"),
            "reflection": as_json({"corrections": [correction], "comparison": fixed}),
        }
    )
    services = services_for(make_services, "medium")
    events = await run_turn(services, MEDIUM)

    assert events[0].flow == "career-chain"
    report = report_of(events)
    assert [s.heading for s in report.sections] == ["背景分析", "知識庫比對", "個人化建議"]
    assert section(report, "知識庫比對") == fixed  # the reflection's fix, not the draft
    assert report.reflection == [correction]
    assert section(report, "背景分析").startswith("- 想轉職前端") and "搜尋：" not in section(
        report, "背景分析"
    )
    assert report.sections[1].sources and report.sections[1].sources[0].id == "a-taiwan-salary-2025-2026"
    # the reflection saw the draft and the retrieved passage it contradicts
    review = requests_of(fake_llm, "reflection")[0]
    assert review["temperature"] == 0.3
    assert "25,000" in review["messages"][-1]["content"] and "29,500" in review["messages"][-1]["content"]
    # the comparison step got the passages found with the query the background step wrote
    assert "29,500" in requests_of(fake_llm, "compare")[0]["messages"][-1]["content"]
    assert [d for s, d in progress(events) if s == "chain_step"][1] == "compare: 基本工資 新鮮人 起薪"
    assert events[-1].usage["llm_calls"] == 4 and events[-1].path == "chain"
    async with services.db.session() as s:
        row = (await s.scalars(select(TraceEvent).where(TraceEvent.type == "report"))).one()
    assert row.payload["reflection"] == [correction]


async def test_a_failed_chain_search_is_not_passed_off_as_nothing_found(
    fake_llm: FakeLLM, make_services: Callable[..., Services], monkeypatch: Any
) -> None:
    fake_llm.responder = responder(
        {"background": text("- 想轉職前端\n搜尋：前端 轉職"), "simple": text("先做一個小作品。")}
    )
    services = services_for(make_services, "medium")
    await ready(services)
    monkeypatch.setattr(services.kb, "search", _raising)
    before = search_failures(services)
    events = [e async for e in services.engine.run(TurnRequest(message=MEDIUM))]
    assert degraded(events) == ["deep_knowledge_search_failed"]
    assert requests_of(fake_llm, "compare") == []  # no comparison against "nothing matched"
    assert not [e for e in events if isinstance(e, ReportEvent)]
    assert "".join(e.text for e in events if isinstance(e, DeltaEvent)) == "先做一個小作品。"
    assert search_failures(services) == before + 1
    async with services.db.session() as s:
        trace = (await s.scalars(select(Trace))).one()
        reasons = (await s.scalars(select(TraceEvent.payload).where(TraceEvent.type == "degraded"))).all()
    assert trace.degraded is True and trace.flow == "career-chain"
    assert [r["reason"] for r in reasons] == ["deep_knowledge_search_failed"]


async def test_a_reflection_that_brings_outside_numbers_is_refused(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    draft = "- 〔1〕2026 年起基本工資為每月 29,500 元"
    fake_llm.responder = responder(
        {
            "background": text("- 想轉職前端\n搜尋：基本工資 新鮮人 起薪"),
            "compare": text(draft),
            "advice": text("先存半年生活費。"),
            "reflection": as_json(
                {"corrections": ["補上前端平均薪資"], "comparison": draft + "；前端平均月薪 87,654 元"}
            ),
        }
    )
    events = await run_turn(services_for(make_services, "medium"), MEDIUM)
    report = report_of(events)
    assert section(report, "知識庫比對") == draft and report.reflection == []
    assert any(s == "reflection" and d and "refused" in d and "87654" in d for s, d in progress(events))


async def test_a_failed_reflection_keeps_the_draft_and_says_so(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.responder = responder(
        {
            "background": text("- 想轉職前端\n搜尋：前端 轉職"),
            "compare": text("- 〔1〕前端回饋很快"),
            "advice": text("先花兩週試試看。"),
            "reflection": text("看起來不錯！"),
        }
    )
    events = await run_turn(services_for(make_services, "medium"), MEDIUM)
    assert degraded(events) == ["deep_reflection_failed"]
    report = report_of(events)
    assert report.reflection is None and section(report, "個人化建議") == "先花兩週試試看。"


# --------------------------------------------------------------------------- over HTTP


def test_sse_shows_progress_then_the_report_and_full_mode_returns_it_in_one_body(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    fake_llm.responder = responder({})
    server = live_server(**FAST)
    server.services.engine.router = FixedRouter("complex")
    with httpx.Client(base_url=server.url, timeout=30) as c:
        streamed = c.post("/api/chat", json={"message": COMPLEX})
        full = c.post("/api/chat", json={"message": COMPLEX, "mode": "full"})
    assert streamed.status_code == 200 and streamed.headers["content-type"].startswith("text/event-stream")
    names = [name for name, _ in parse_sse(streamed.text)]
    assert names[0] == "route" and names[1] == "progress" and names[-2:] == ["report", "done"]
    assert all(n in ("route", "progress", "section", "report", "done") for n in names)
    body = full.json()
    assert full.status_code == 200 and body["status"] == "ok" and body["path"] == "parallel"
    assert [s["heading"] for s in body["report"]["sections"]] == [
        "市場分析",
        "成長建議",
        "實戰準備",
        "行動建議",
    ]
    assert body["answer"] == "" and body["degraded"] == []


# --------------------------------------------------------------------------- the chain's fact check


async def test_the_chain_drops_a_salary_figure_found_in_no_passage(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.responder = responder(
        {
            "background": text("- 想轉職前端\n- 擔心轉職期間的收入\n搜尋：基本工資 新鮮人 起薪"),
            "compare": text("- 〔1〕2026 年起基本工資為每月 29,500 元"),
            "advice": text("先估算轉職期間的生活費。前端新人月薪約 61,234 元，轉職後很快就能回本。"),
            "reflection": as_json({"corrections": []}),  # the reviewer misses it
        }
    )
    services = services_for(make_services, "medium")
    events = await run_turn(services, MEDIUM)
    report = report_of(events)
    advice = section(report, "個人化建議")
    assert advice == "先估算轉職期間的生活費。"  # the invented figure's sentence is gone, the rest stays
    assert "29,500" in section(report, "知識庫比對")
    assert report.dropped_statements == 1 and report.reflection == []
    checks = [d for s, d in progress(events) if s == "fact_check"]
    assert len(checks) == 1 and checks[0] and "dropped 1" in checks[0] and "61234" in checks[0]
    kinds = [e.type for e in events]
    assert kinds.index("report") > max(i for i, e in enumerate(events) if isinstance(e, ProgressEvent))
    async with services.db.session() as s:
        row = (await s.scalars(select(TraceEvent).where(TraceEvent.type == "report"))).one()
    assert row.payload["dropped_statements"] == 1


# --------------------------------------------------------------------------- the practice coach reads the resume

STORED_RESUME = """王小明
電話：0912-345-678
Email: ming@example.com
經歷：三年 Java 後端工程師，負責訂單系統
技能：Java、Spring、SQL"""
OTHER_RESUME = "陳大華\n經歷：十年 COBOL 銀行系統維護"


async def _user_with_resume(services: Services, email: str, resume: str | None) -> str:
    async with services.db.session() as s, s.begin():
        user = User(email=email, password_hash="x")
        s.add(user)
        await s.flush()
        if resume is not None:
            # stored as it is (not masked), so the test also shows the flow masks what it reads
            s.add(
                Resume(
                    owner_key=f"user:{user.id}",
                    user_id=user.id,
                    version=1,
                    kind="text",
                    chars=len(resume),
                    sha256="0" * 64,
                    text=resume,
                )
            )
        return str(user.id)


async def test_the_practice_coach_reads_the_users_stored_resume_and_only_that_user_s(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.responder = responder({})
    services = services_for(make_services, "complex")
    await ready(services)
    ming = await _user_with_resume(services, "ming@example.com", STORED_RESUME)
    await _user_with_resume(services, "hua@example.com", OTHER_RESUME)
    events = [e async for e in services.engine.run(TurnRequest(message=COMPLEX, user_id=ming))]

    practice = requests_of(fake_llm, "practice")
    assert len(practice) == 1
    prompt = practice[0]["messages"][-1]["content"]
    assert "三年 Java 後端工程師" in prompt and "<<<" in prompt
    assert "0912" not in prompt and "ming@example.com" not in prompt  # contact details masked
    assert "COBOL" not in json.dumps(fake_llm.requests, ensure_ascii=False)  # the other user's: never
    for role in ("market", "growth", "merge"):
        assert "Java 後端" not in json.dumps(requests_of(fake_llm, role), ensure_ascii=False)
    used = [d for s, d in progress(events) if s == "resume"]
    assert len(used) == 1 and used[0] and "practice" in used[0] and "Java" not in used[0]
    assert report_of(events).path == "parallel" and degraded(events) == []
    async with services.db.session() as s:
        rows = (await s.scalars(select(TraceEvent))).all()
    stored = json.dumps([r.payload for r in rows], ensure_ascii=False)
    assert "the stored resume is used" in stored and "Java 後端" not in stored  # recorded, never its text


async def test_without_a_stored_resume_the_agents_prompts_do_not_change(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.responder = responder({})
    services = services_for(make_services, "complex")
    await ready(services)
    await _user_with_resume(services, "ming@example.com", STORED_RESUME)
    nobody = await _user_with_resume(services, "new@example.com", None)
    as_user = [e async for e in services.engine.run(TurnRequest(message=COMPLEX, user_id=nobody))]
    with_user = {r: requests_of(fake_llm, r)[0]["messages"] for r in ("market", "growth", "practice")}
    fake_llm.requests.clear()
    anonymous = [e async for e in services.engine.run(TurnRequest(message=COMPLEX))]
    without = {r: requests_of(fake_llm, r)[0]["messages"] for r in ("market", "growth", "practice")}
    assert with_user == without  # a user without a resume gets exactly the anonymous prompts
    assert "三年 Java" not in json.dumps(with_user, ensure_ascii=False)
    assert "履歷（若有）" not in with_user["practice"][0]["content"]
    for events in (as_user, anonymous):
        assert not [d for s, d in progress(events) if s == "resume"] and report_of(events).path == "parallel"


# --------------------------------------------------------------------------- the heartbeat


def _windows(events: list[Any], starts: dict[str, str]) -> dict[str, tuple[int, int]]:
    """For each step, the index of the progress event that starts it and of the next progress event that
    is not a beat: its beats must lie in between."""
    real = [i for i, e in enumerate(events) if isinstance(e, ProgressEvent) and e.stage != "waiting"]
    out: dict[str, tuple[int, int]] = {}
    for step, prefix in starts.items():
        start = next(i for i in real if (events[i].detail or "").startswith(prefix))
        end = next((i for i in real if i > start), len(events))
        out[step] = (start, end)
    return out


async def test_a_slow_chain_step_sends_waiting_beats_inside_its_own_window(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.responder = responder(
        {
            "background": text("- 想轉職前端\n搜尋：前端 轉職", first_token_delay=0.5),
            "compare": text("- 〔1〕前端回饋很快", first_token_delay=0.3),
            "advice": text("先花兩週試試看。", first_token_delay=0.3),
            "reflection": as_json({"corrections": []}),
        }
    )
    services = services_for(make_services, "medium", deep_heartbeat_interval=0.05)
    events = await run_turn(services, MEDIUM)
    beats = [(i, e) for i, e in enumerate(events) if isinstance(e, ProgressEvent) and e.stage == "waiting"]
    steps = {e.step for _, e in beats}
    assert {"chain_background", "chain_compare", "chain_advice"} <= steps
    windows = _windows(
        events,
        {"chain_background": "background", "chain_compare": "compare:", "chain_advice": "advice"},
    )
    for i, beat in beats:
        if beat.step in windows:
            start, end = windows[beat.step]
            assert start < i < end, (beat.step, i, start, end)
    for step in steps:
        elapsed = [e.elapsed_s or 0 for _, e in beats if e.step == step]
        assert elapsed == sorted(elapsed)
    report_at = next(i for i, e in enumerate(events) if isinstance(e, ReportEvent))
    assert all(i < report_at for i, _ in beats)  # none after the answer
    assert report_of(events).path == "chain" and events[-1].status == "ok"
    # each beat is cancelled and awaited before its step's caller goes on: none is left once the turn ended
    assert not [t for t in asyncio.all_tasks() if t.get_name().startswith("careerwise-heartbeat")]


async def test_concurrent_agents_beat_until_each_one_finishes(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.responder = responder({}, agent_delay=0.5)
    services = services_for(make_services, "complex", deep_heartbeat_interval=0.05)
    events = await run_turn(services, COMPLEX)
    for key in ("market", "growth", "practice"):
        finished = next(
            i
            for i, e in enumerate(events)
            if isinstance(e, ProgressEvent)
            and e.stage == "agent_finished"
            and (e.detail or "").startswith(key)
        )
        beats = [i for i, e in enumerate(events) if isinstance(e, ProgressEvent) and e.step == f"agent_{key}"]
        assert beats and max(beats) < finished
    assert report_of(events).path == "parallel" and degraded(events) == []


def test_a_silent_stream_gets_sse_keepalive_comments_between_whole_frames(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    fake_llm.responder = responder({}, agent_delay=0.6)
    # beats off (a long interval): the agents' silence is filled by the transport's comments alone
    server = live_server(**FAST, sse_keepalive_interval=0.05, deep_heartbeat_interval=3600)
    server.services.engine.router = FixedRouter("complex")
    with httpx.Client(base_url=server.url, timeout=30) as c:
        streamed = c.post("/api/chat", json={"message": COMPLEX})
    assert streamed.status_code == 200
    frames = [f for f in streamed.text.split("\n\n") if f.strip()]
    comments = [f for f in frames if f.startswith(":")]
    assert comments and set(comments) == {": keep-alive"}
    events = parse_sse("\n\n".join(f for f in frames if not f.startswith(":")) + "\n\n")
    names = [name for name, _ in events]
    assert names[0] == "route" and names[-2:] == ["report", "done"]
    assert "waiting" not in [data.get("stage") for _, data in events]
    assert events[-1][1]["status"] == "ok"


async def test_a_provider_declared_or_measured_under_the_bar_streams_a_medium_question(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    """Issue #24: not only a provider declared slow: one whose speed is known to be under the full
    design's bar answers a medium question with the streamed flow, and the route says why."""
    fake_llm.script(text("先盤點可轉移的能力。", chunk_size=4))
    services = services_for(make_services, "medium", llm_gen_tps=8.0, llm_prompt_tps=100.0)
    events = await run_turn(services, MEDIUM)
    route = next(e for e in events if isinstance(e, RouteEvent))
    assert route.tier == "medium" and route.flow == "career-simple", route
    assert any("the provider is slow" in r for r in route.reasons), route.reasons
    assert not any(isinstance(e, ReportEvent) for e in events)
