"""The compact deep design (decision 0016) and the report streamed by section, against the scripted
provider. The design is forced with ``deep_design`` or picked by the provider profile's rule."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from careerwise.events import (
    DeltaEvent,
    DoneEvent,
    ProgressEvent,
    ReportEvent,
    RouteEvent,
    SectionEvent,
)
from careerwise.flows import compact
from careerwise.flows.compact import AGENT_SCHEMA, COMPACT_MAX_TOKENS, REMOVED
from careerwise.flows.compact_items import INSIGHT_MAX_TOKENS, SUMMER_FINDINGS, insight_schema
from careerwise.services import Services
from careerwise.store import Trace, TraceEvent
from tests.conftest import LiveServer, parse_sse
from tests.fakes.fake_llm import FakeLLM, Reply, text
from tests.integration.test_deep_answers import (
    AGENTS,
    COMPLEX,
    FAST,
    MEDIUM,
    FixedRouter,
    as_json,
    degraded,
    report_of,
    requests_of,
    responder,
    run_turn,
    services_for,
)

HEADINGS = ["市場分析", "成長建議", "實戰準備", "行動建議"]


def grounded_agent(body: dict[str, Any]) -> Reply:
    """An agent that answers with sentences of its own prompt's passages: nothing for the check to drop."""
    prompt = str(body["messages"][-1]["content"])
    passages = re.findall(r"<<<\n(.*?)\n>>>", prompt, flags=re.S)
    said = [
        p.strip()
        for text in passages
        for p in re.split(r"(?<=[。！？.])\s*|…|\n", text)
        if 6 <= len(p.strip()) <= 240
    ]
    assert said, prompt
    return as_json({"findings": said[:2], "insights": said[-1:], "risk_level": "low"})


@pytest.fixture
def model_findings(monkeypatch: pytest.MonkeyPatch) -> None:
    """No sentence of the passages can be chosen (as for passages in another language than the
    question): the facet calls write the findings too."""

    def no_findings(*args: Any, **kwargs: Any) -> list[str]:
        return []

    monkeypatch.setattr(compact, "summer_findings", no_findings)


def article_text(services: Services) -> dict[str, str]:
    """Each article's text by title, without emphasis marks (as the quotes read it)."""
    text_of: dict[str, str] = {}
    for c in services.kb.index.chunks:
        text_of[c.title] = text_of.get(c.title, "") + c.text.replace("**", "")
    return text_of


def sections_of_articles(services: Services) -> set[str]:
    return {c.section for c in services.kb.index.chunks if c.section}


def sections_of(events: list[Any]) -> list[SectionEvent]:
    return [e for e in events if isinstance(e, SectionEvent)]


def assert_sections_match_report(events: list[Any]) -> ReportEvent:
    """Every section event is the report's section at its index, each index once, all before the report."""
    report = report_of(events)
    sent = sections_of(events)
    assert [s.index for s in sent] == list(range(len(report.sections)))
    for s in sent:
        r = report.sections[s.index]
        assert (s.heading, s.body, s.risk_level, s.sources) == (r.heading, r.body, r.risk_level, r.sources)
    kinds = [e.type for e in events]
    assert max(i for i, k in enumerate(kinds) if k == "section") < kinds.index("report")
    return report


async def test_compact_design_sends_each_facet_section_as_soon_as_its_short_call_is_checked(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    # each call writes an insight of its own (market's reply also carries a finding, which is not used)
    written = {**AGENTS["market"], "findings": ["這一句是模型自己寫的發現"]}

    def insight(said: str) -> Reply:
        return as_json({"insights": [said], "risk_level": "low"})

    fake_llm.responder = responder(
        {
            "market": as_json(written),
            "growth": insight("先盤點目前的技能缺口，再排出每週固定的練習時間。"),
            "practice": insight("每次練習後寫下卡住的地方，隔幾天再重做一次。"),
        }
    )
    services = services_for(make_services, "complex", deep_design="compact")
    events = await run_turn(services, COMPLEX)

    route = events[0]
    assert isinstance(route, RouteEvent) and route.flow == "career-parallel"
    assert any(r.startswith("deep design: compact") for r in route.reasons)
    report = assert_sections_match_report(events)
    assert [s.heading for s in report.sections] == HEADINGS
    assert report.path == "compact" and report.missing_facets == []
    # a facet with Summer's sentences is sent before any call starts, practice's too: its article is in
    # English, and its sentences are shown as she wrote them (decision 0023)
    started = {
        e.detail: i
        for i, e in enumerate(events)
        if isinstance(e, ProgressEvent) and e.stage == "agent_started"
    }
    at = {e.index: i for i, e in enumerate(events) if isinstance(e, SectionEvent)}
    assert at[0] < at[1] < at[2] < started["market"] < started["growth"] < started["practice"] < at[3]
    # three short calls, no merge, no reflection; each writes only the insight and the risk level
    assert requests_of(fake_llm, "merge") == [] and requests_of(fake_llm, "reflection") == []
    calls = {role: requests_of(fake_llm, role) for role in ("market", "growth", "practice")}
    assert [len(c) for c in calls.values()] == [1, 1, 1]
    # every facet has Summer's sentences, in either language: each call is constrained to the insight's
    # schema (a grammar on the embedded model) and reads them; practice's are English
    for _role, (call,) in calls.items():
        assert (call["max_tokens"], call["response_format"]["json_schema"]["schema"]) == (
            INSIGHT_MAX_TOKENS,
            insight_schema(True),
        )
    insight_only = list(calls)
    said = [
        line.rpartition("】")[2] for line in report.sections[2].body.split("\n") if "》的重點：" not in line
    ]
    assert said and not any(re.search(r"[\u4e00-\u9fff]", line) for line in said), said
    # the findings are Summer's sentences, verbatim from the section's own articles (the model's
    # findings in its reply are not used), from anywhere in those articles, at most three, with no quote
    # line after them
    text_of = article_text(services)
    # the facets' risk levels are reported once, on 行動建議: the highest (market's "medium")
    assert [x.risk_level for x in report.sections] == [None, None, None, "medium"]
    roles = ("market", "growth", "practice")
    for facet in [s for s, role in zip(report.sections, roles, strict=False) if role in insight_only]:
        lines = facet.body.split("\n")
        assert all(line.startswith("- ") for line in lines), facet.body
        # after them, the rest of the first article's headings (its method at a glance)
        outline = [line for line in lines if "》的重點：" in line]
        for line in outline:
            title, _, points = line.removeprefix("- 《").removesuffix("。").partition("》的重點：")
            assert title in {s.title for s in facet.sources}
            assert set(points.split("；")) <= sections_of_articles(services), line
        lines = [line for line in lines if line not in outline]
        assert 1 <= len(lines) <= SUMMER_FINDINGS and len(outline) <= 1, facet.body
        for line in lines:
            # after its section's heading when it has one: 【heading】sentence
            heading, _, said = line.removeprefix("- ").rpartition("】")
            pieces = [p for p in said.split("…") if p]
            assert any(all(p in text_of[s.title] for p in pieces) for s in facet.sources), line
            assert not heading or heading.removeprefix("【") in sections_of_articles(services), line
    shown = "\n".join(s.body for s in report.sections[:3])
    assert "模型自己寫的發現" not in shown
    assert "> 「" not in "\n".join(s.body for s in report.sections[:2])
    # the actions section: one checked insight per facet, sources from the facets that gave them
    actions = [line.removeprefix("- ") for line in report.sections[3].body.split("\n")]
    assert len(actions) >= 2
    for heading_index in (1, 2):  # each grounded facet's insight is the last line it gave
        body = report.sections[heading_index].body
        assert report.sections[heading_index].sources and body.startswith("- ")
    # each call reads its own facet's passages only
    domain_of = {c.document_id: c.domain for c in services.kb.index.chunks}
    title_of = {c.document_id: c.title for c in services.kb.index.chunks}
    for role, section in zip(("market", "growth", "practice"), report.sections, strict=False):
        prompt = requests_of(fake_llm, role)[0]["messages"][-1]["content"]
        assert all(title_of[s.id] in prompt for s in section.sources)
        assert {domain_of[s.id] for s in section.sources} == {
            {"market": "market_salary", "growth": "growth_skills", "practice": "interview_practice"}[role]
        }
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.status == "ok" and done.path == "compact"
    assert done.usage["llm_calls"] == 3 and degraded(events) == []
    async with services.db.session() as s:
        trace = (await s.scalars(select(Trace))).one()
        rows = (await s.scalars(select(TraceEvent).where(TraceEvent.type == "section"))).all()
    assert trace.path == "compact" and [r.payload["index"] for r in rows] == [0, 1, 2, 3]
    assert {"facet_search_ms", "agent_market_ms", "first_section_ms"} <= set(trace.timings)


async def test_an_insight_its_passages_do_not_support_is_dropped_and_counted(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    market = {**AGENTS["market"], "findings": ["平均月薪是 98,765 元"], "insights": ["到 Google 上班"]}
    fake_llm.responder = responder(
        {"market": as_json(market), "growth": grounded_agent, "practice": grounded_agent}
    )
    events = await run_turn(services_for(make_services, "complex", deep_design="compact"), COMPLEX)
    report = assert_sections_match_report(events)
    shown = "\n".join(s.body for s in report.sections)
    assert "98,765" not in shown and "Google" not in shown
    assert report.sections[0].body.startswith("- ") and report.sections[3].risk_level == "medium"
    assert report.dropped_statements == 1  # the insight; the model's finding was never used
    detail = next(e.detail for e in events if isinstance(e, ProgressEvent) and e.stage == "fact_check")
    assert detail is not None and detail.startswith("dropped 1") and "market:" in detail


@pytest.mark.usefixtures("model_findings")
async def test_when_no_sentence_can_be_chosen_the_call_writes_findings_and_they_are_checked(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    market = {
        **AGENTS["market"],
        "findings": ["台灣工程師平均月薪是 98,765 元", "2026 年起基本工資為每月 29,500 元"],
        "insights": ["Google 正在大量招募，趕快投履歷"],
    }
    fake_llm.responder = responder(
        {"market": as_json(market), "growth": grounded_agent, "practice": grounded_agent}
    )
    services = services_for(make_services, "complex", deep_design="compact")
    events = await run_turn(services, COMPLEX)
    report = assert_sections_match_report(events)
    calls = [r for role in ("market", "growth", "practice") for r in requests_of(fake_llm, role)]
    assert {r["max_tokens"] for r in calls} == {COMPACT_MAX_TOKENS}
    assert all(r["response_format"]["json_schema"]["schema"] == AGENT_SCHEMA for r in calls)
    shown = "\n".join(s.body for s in report.sections)
    assert "98,765" not in shown and "Google" not in shown and "29,500" in shown
    assert report.dropped_statements == 2  # the invented figure and name; the passages' own words stay
    # a facet section whose passages clear the gate's bars ends with one of their sentences, verbatim,
    # under its article's title (market's do); the actions section quotes nothing
    text_of = article_text(services)
    quoted = [s for s in report.sections[:3] if s.body.split("\n")[-1].startswith("> 「")]
    assert report.sections[0] in quoted
    for section in quoted:
        last = section.body.split("\n")[-1]
        cut = last.index("」——《")
        said, title = last[3:cut].strip("…"), last[cut + len("」——《") : -1]
        assert title in {s.title for s in section.sources} and said in text_of[title], last
    assert "> 「" not in report.sections[3].body
    assert any(
        e.stage == "fact_check" and "dropped 2" in (e.detail or "")
        for e in events
        if isinstance(e, ProgressEvent)
    )


@pytest.mark.usefixtures("model_findings")
async def test_a_facet_whose_every_finding_is_dropped_says_so_instead_of_inventing(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    market = {**AGENTS["market"], "findings": ["平均月薪是 98,765 元"], "insights": ["到 Google 上班"]}
    fake_llm.responder = responder(
        {"market": as_json(market), "growth": grounded_agent, "practice": grounded_agent}
    )
    events = await run_turn(services_for(make_services, "complex", deep_design="compact"), COMPLEX)
    report = assert_sections_match_report(events)
    assert report.sections[0].body.split("\n\n> ")[0] == REMOVED[0]
    assert report.sections[0].risk_level is None and report.sections[0].sources
    assert report.sections[3].risk_level == "medium"
    assert report.dropped_statements == 2 and "Google" not in report.sections[3].body


async def test_a_facet_whose_insight_call_fails_keeps_summers_findings_and_says_so(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.responder = responder({"market": text("我覺得你應該先想清楚。")})
    events = await run_turn(services_for(make_services, "complex", deep_design="compact"), COMPLEX)
    report = assert_sections_match_report(events)
    assert report.sections[0].body.startswith("- ") and report.sections[0].sources
    assert report.missing_facets == ["market: invalid_json"]
    assert degraded(events) == ["deep_agent_failed"]
    assert len(requests_of(fake_llm, "market")) == 2  # retried once with the error, as in the full design


@pytest.mark.usefixtures("model_findings")
async def test_a_failed_facet_is_sent_in_its_place_before_the_next_good_section(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.responder = responder({"market": text("我覺得你應該先想清楚。")})
    events = await run_turn(services_for(make_services, "complex", deep_design="compact"), COMPLEX)
    report = assert_sections_match_report(events)
    assert report.sections[0].body == "此面向暫無分析資料"
    assert report.missing_facets == ["market: invalid_json"]
    assert degraded(events) == ["deep_agent_failed"]
    sent = sections_of(events)
    assert sent[0].index == 0 and sent[1].index == 1  # the missing one first, then growth, in order
    assert len(requests_of(fake_llm, "market")) == 2  # retried once with the error, as in the full design


async def test_when_every_call_fails_summers_findings_still_make_the_report(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    bad = text("不是 JSON")
    fake_llm.responder = responder({"market": bad, "growth": bad, "practice": bad})
    events = await run_turn(services_for(make_services, "complex", deep_design="compact"), COMPLEX)
    report = assert_sections_match_report(events)
    assert report.sections[0].body.startswith("- ") and report.sections[1].body.startswith("- ")
    assert report.sections[3].body == "此面向暫無分析資料" and report.sections[3].risk_level is None
    assert degraded(events) == ["deep_agent_failed"] * 3  # each facet's failure; the report stands
    assert not any(isinstance(e, DeltaEvent) for e in events)


@pytest.mark.usefixtures("model_findings")
async def test_when_every_compact_call_fails_no_section_is_sent_and_the_streamed_answer_follows(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    bad = text("不是 JSON")
    fake_llm.responder = responder(
        {"market": bad, "growth": bad, "practice": bad, "simple": text("先盤點你的技能。")}
    )
    events = await run_turn(services_for(make_services, "complex", deep_design="compact"), COMPLEX)
    assert sections_of(events) == [] and not any(isinstance(e, ReportEvent) for e in events)
    assert degraded(events) == ["deep_agent_failed"] * 3 + ["deep_agents_failed"]
    assert "".join(e.text for e in events if isinstance(e, DeltaEvent))
    assert requests_of(fake_llm, "background") == []  # not the slow chain


async def test_auto_picks_the_compact_design_for_a_slow_single_request_provider(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.responder = responder({})
    slow = services_for(make_services, "complex", llm_gen_tps=8.0, llm_concurrency=1)
    events = await run_turn(slow, COMPLEX)
    route = events[0]
    assert isinstance(route, RouteEvent)
    assert any("deep design: compact (provider profile: 8 tokens/s" in r for r in route.reasons)
    assert report_of(events).path == "compact"


async def test_auto_keeps_the_full_design_on_a_fast_provider_and_it_sends_its_sections_too(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.responder = responder({})
    events = await run_turn(services_for(make_services, "complex"), COMPLEX)
    route = events[0]
    assert isinstance(route, RouteEvent) and any(r.startswith("deep design: full") for r in route.reasons)
    report = assert_sections_match_report(events)
    assert report.path == "parallel" and len(requests_of(fake_llm, "merge")) == 1
    # the full design sends its sections when the merge is complete: after the merge's progress
    kinds = [e.type for e in events]
    merge_at = max(i for i, e in enumerate(events) if isinstance(e, ProgressEvent) and e.stage == "merge")
    assert kinds.index("section") > merge_at


async def test_the_chain_sends_its_three_sections_before_its_report(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.responder = responder(
        {
            "background": text("- 背景：沒有相關經驗\n搜尋：轉職 前端 工程師"),
            "compare": text("- 知識庫建議先評估可轉移的技能〔1〕"),
            "advice": text("結論：先試學再決定。"),
            "reflection": as_json({"corrections": []}),
        }
    )
    events = await run_turn(services_for(make_services, "medium"), MEDIUM)
    report = assert_sections_match_report(events)
    assert report.path == "chain" and [s.index for s in sections_of(events)] == [0, 1, 2]


def test_sse_carries_section_frames_and_full_mode_leaves_them_out(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    fake_llm.responder = responder({})
    server = live_server(deep_design="compact", **FAST)
    server.services.engine.router = FixedRouter("complex")
    with httpx.Client(base_url=server.url, timeout=30) as c:
        streamed = c.post("/api/chat", json={"message": COMPLEX})
        full = c.post("/api/chat", json={"message": COMPLEX, "mode": "full"})
    frames = parse_sse(streamed.text)
    names = [name for name, _ in frames]
    assert names.count("section") == 4 and names.index("section") < names.index("report")
    assert [data["index"] for name, data in frames if name == "section"] == [0, 1, 2, 3]
    assert names[-1] == "done"
    body = full.json()
    assert body["report"]["path"] == "compact"
    assert not any(k.startswith("section") for k in body)


@pytest.mark.usefixtures("model_findings")
async def test_a_finding_must_share_wording_with_its_passages_an_insight_only_its_facts(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    market = {
        "findings": ["2026 年起基本工資為每月 29,500 元", "今天天氣晴朗適合帶著小狗去海邊散步"],
        "insights": ["每天睡前寫下當天完成的小事，一週後再回頭整理"],
        "risk_level": "low",
    }
    fake_llm.responder = responder(
        {"market": as_json(market), "growth": grounded_agent, "practice": grounded_agent}
    )
    events = await run_turn(services_for(make_services, "complex", deep_design="compact"), COMPLEX)
    report = assert_sections_match_report(events)
    assert "海邊" not in report.sections[0].body and "29,500" in report.sections[0].body
    assert "每天睡前寫下當天完成的小事" in report.sections[3].body  # advice in its own words, no new facts
    assert report.dropped_statements == 1
    detail = next(e.detail for e in events if isinstance(e, ProgressEvent) and e.stage == "fact_check")
    assert detail is not None and "market: little in common" in detail


@pytest.mark.usefixtures("model_findings")
async def test_a_finding_that_only_echoes_the_users_question_is_not_a_fact(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    market = {
        "findings": ["該不該離職？值得嗎？我現在該不該離職呢", "2026 年起基本工資為每月 29,500 元"],
        "insights": ["先用基本工資倍數法評估目前薪資的位置"],
        "risk_level": "low",
    }
    fake_llm.responder = responder(
        {"market": as_json(market), "growth": grounded_agent, "practice": grounded_agent}
    )
    events = await run_turn(services_for(make_services, "complex", deep_design="compact"), COMPLEX)
    report = assert_sections_match_report(events)
    assert report.sections[0].body.split("\n\n> ")[0] == "- 2026 年起基本工資為每月 29,500 元"
    assert report.dropped_statements == 1
