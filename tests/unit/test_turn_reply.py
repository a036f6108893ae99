"""One typed reply (careerwise.reply) for the full-JSON body, LINE and the OpenAI-compatible endpoint;
a report kept as its structure and every text of it made from that (careerwise.reports); and no channel
importing the API layer."""

from __future__ import annotations

import ast
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, get_args

import pytest

import careerwise
from careerwise.api._message_views import _view
from careerwise.api.openai_compat import _tail, careerwise_field
from careerwise.channels.text import reply_plain_text
from careerwise.events import (
    DegradedEvent,
    DeltaEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    ProgressEvent,
    ReportEvent,
    ReportSection,
    RouteEvent,
    SectionEvent,
    Source,
    ToolCallEvent,
    ToolResultEvent,
)
from careerwise.reply import TurnReply
from careerwise.reports import StoredReport, legacy_bodies, message_markdown, report_text
from careerwise.store import Message, TraceEvent

SALARY = Source(id="salary", title="薪資談判", section="先探", score=0.81)
OFFER = Source(id="offer", title="談 offer 三步驟", section=None, score=0.5)
REPORT = ReportEvent(
    title="轉職評估",
    sections=[
        ReportSection(
            heading="市場分析",
            body="- 需求**穩定**\n- 月薪中位數 29,500",
            risk_level="medium",
            sources=[SALARY, OFFER],
        ),
        ReportSection(heading="行動建議", body="先做一個作品。"),
    ],
    path="parallel",
    missing_facets=["practice: timeout"],
    dropped_statements=1,
    guards={"duplicate_items": 0},
)

# one event of every type, in the order a turn sends them
SAMPLE: list[Event] = [
    RouteEvent(intent="career", tier="complex", layer="rules", flow="parallel", reasons=["rule"]),
    ProgressEvent(stage="facet_search", detail="3 facets"),
    ToolCallEvent(
        call_id="c1",
        name="searchKnowledge",
        requested_arguments={"query": "薪水", "top_k": 3},
        effective_arguments={"query": "薪水", "top_k": 5},
        reason="full retrieval",
    ),
    ToolResultEvent(call_id="c1", name="searchKnowledge", ok=True, returned=2, sources=[SALARY, SALARY]),
    DegradedEvent(reason="agent_timeout", message="實戰教練逾時。"),
    DeltaEvent(text="先看", phase=1),
    DeltaEvent(text="行情。", phase=1),
    SectionEvent(index=0, heading="市場分析", body="預覽", risk_level="medium"),
    REPORT,
    ErrorEvent(code="llm_timeout", message="回覆逾時。", retryable=True),
    DoneEvent(
        trace_id="t1",
        conversation_id="c" * 32,
        message_id="m" * 32,
        status="ok",
        path="parallel",
        usage={"prompt_tokens": 10, "completion_tokens": 4},
    ),
]


def test_the_sample_has_one_event_of_every_type() -> None:
    union = get_args(get_args(Event)[0])
    assert {type(e) for e in SAMPLE} == set(union)


def test_the_full_json_body_is_each_event_as_the_stream_carried_it() -> None:
    body = TurnReply.from_events(SAMPLE).model_dump(mode="json")
    route, _, call, result, degraded, _, _, _, report, error, _ = SAMPLE
    assert body == {
        "conversation_id": "c" * 32,
        "message_id": "m" * 32,
        "trace_id": "t1",
        "status": "ok",
        "path": "parallel",
        "answer": "先看行情。",
        "route": route.model_dump(mode="json"),
        "tool_calls": [call.model_dump(mode="json")],
        "tool_results": [result.model_dump(mode="json")],
        "report": report.model_dump(mode="json"),
        "degraded": [degraded.model_dump(mode="json")],
        "error": error.model_dump(mode="json"),
        "usage": {"prompt_tokens": 10, "completion_tokens": 4},
    }
    assert json.loads(json.dumps(body)) == body


def test_a_turn_without_its_done_event_is_refused() -> None:
    with pytest.raises(ValueError, match="done"):
        TurnReply.from_events(SAMPLE[:-1])


def test_line_text_has_notices_answer_report_error_and_sources() -> None:
    reply = TurnReply.from_events(SAMPLE)
    assert reply.sources() == [SALARY, OFFER]
    assert reply_plain_text(reply, zh=True) == (
        "實戰教練逾時。\n\n先看行情。\n\n轉職評估\n\n【市場分析（風險：中）】\n・需求穩定\n・月薪中位數 29,500"
        "\n\n【行動建議】\n先做一個作品。\n\n回覆逾時。\n\n參考資料：\n・薪資談判 — 先探\n・談 offer 三步驟"
    )


def test_the_openai_content_tail_and_careerwise_field() -> None:
    reply = TurnReply.from_events(SAMPLE)
    assert _tail(reply, zh=False) == (
        "## 轉職評估\n\n### 市場分析 (medium risk)\n- 需求**穩定**\n- 月薪中位數 29,500\n\n### 行動建議\n"
        "先做一個作品。\n\nSources:\n- 薪資談判 — 先探\n- 談 offer 三步驟"
    )
    field = careerwise_field(reply)
    assert field["tool_calls"] == [
        {"name": "searchKnowledge", "arguments": {"query": "薪水", "top_k": 5}, "ok": True, "returned": 2}
    ]
    assert field["sources"] == [SALARY.model_dump(mode="json"), OFFER.model_dump(mode="json")]
    assert field["route"]["flow"] == "parallel" and field["report"]["title"] == "轉職評估"
    assert field["degraded"] == [{"reason": "agent_timeout", "message": "實戰教練逾時。"}]
    assert field["error"]["code"] == "llm_timeout"


def test_a_call_whose_result_never_came_has_no_outcome() -> None:
    call, done = SAMPLE[2], SAMPLE[-1]
    field = careerwise_field(TurnReply.from_events([call, done]))
    assert field["tool_calls"][0]["ok"] is None and field["tool_calls"][0]["returned"] is None
    assert field["route"] is None and field["report"] is None and field["error"] is None


# ---------------------------------------------------------------- reports: stored as JSON, rendered from it


def test_a_report_round_trips_through_its_json_and_renders_the_same_text() -> None:
    stored = StoredReport.of(REPORT)
    back = StoredReport.model_validate(json.loads(json.dumps(stored.to_json())))
    assert back == stored and back.sections[0].sources == [SALARY, OFFER]
    assert "guards" not in stored.to_json()  # the event's diagnostics stay in the trace
    # the message text as it always was: '# title', then '## heading' and the body per section
    text = "# 轉職評估\n\n## 市場分析\n- 需求**穩定**\n- 月薪中位數 29,500\n\n## 行動建議\n先做一個作品。"
    assert message_markdown(back) == message_markdown(REPORT) == text
    for zh in (True, False):
        for markdown in (True, False):
            assert report_text(back, zh, markdown=markdown) == report_text(REPORT, zh, markdown=markdown)


def test_legacy_bodies_are_cut_at_the_headings() -> None:
    text = message_markdown(REPORT)
    assert legacy_bodies(text, ["市場分析", "行動建議"]) == [s.body for s in REPORT.sections]
    assert legacy_bodies(text, ["行動建議", "市場分析"]) is None


def _message(report: dict[str, Any] | None, content: str) -> Message:
    return Message(
        id="m" * 32,
        conversation_id="c" * 32,
        role="assistant",
        content=content,
        status="ok",
        trace_id="t1",
        created_at=datetime(2026, 12, 1, tzinfo=UTC),
        report=report,
    )


def _report_row(report: ReportEvent) -> TraceEvent:
    return TraceEvent(trace_id="t1", seq=1, t_ms=1.0, type="report", payload=report.model_dump(mode="json"))


def test_the_view_reads_a_stored_report_not_its_text() -> None:
    # a body with a line that looks like the next section's heading: cutting the text at '## ' headings
    # would end the first section there
    tricky = REPORT.model_copy(
        update={
            "sections": [
                ReportSection(heading="市場分析", body="先看這段：\n## 行動建議\n這仍是市場分析。"),
                ReportSection(heading="行動建議", body="先做一個作品。"),
            ]
        }
    )
    text = message_markdown(tricky)
    view = _view(_message(StoredReport.of(tricky).to_json(), text), [_report_row(tricky)], None)
    assert view.report is not None
    assert [s.body for s in view.report.sections] == [s.body for s in tricky.sections]
    assert view.report.path == "parallel" and view.report.missing_facets == ["practice: timeout"]
    # the same message as stored before the structure was kept: the text is still cut at the headings
    legacy = _view(_message(None, text), [_report_row(tricky)], None)
    assert legacy.report is not None and legacy.report.sections[0].body == "先看這段："


def test_a_report_stored_before_its_structure_was_kept_still_displays() -> None:
    text = message_markdown(REPORT)
    masked = REPORT.model_copy(
        update={"sections": [s.model_copy(update={"body": "[masked]"}) for s in REPORT.sections]}
    )
    legacy = _view(_message(None, text), [_report_row(masked)], None)
    stored = _view(_message(StoredReport.of(REPORT).to_json(), text), [_report_row(masked)], None)
    assert legacy.report == stored.report
    assert legacy.report is not None
    assert [s.body for s in legacy.report.sections] == [s.body for s in REPORT.sections]
    assert [s.risk_level for s in legacy.report.sections] == ["medium", None]
    assert legacy.report.sections[0].sources == [SALARY, OFFER]


# ---------------------------------------------------------------- layering


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_no_channel_imports_the_api_layer() -> None:
    package = Path(careerwise.__file__).parent
    below_api = [*sorted((package / "channels").rglob("*.py"))]
    below_api += [package / name for name in ("reply.py", "reports.py", "markdown_text.py")]
    assert len(below_api) > 4
    for path in below_api:
        upward = {
            name for name in _imports(path) if name == "careerwise.api" or name.startswith("careerwise.api.")
        }
        assert not upward, f"{path.relative_to(package)} imports {sorted(upward)}"
