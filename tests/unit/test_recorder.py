"""The trace recorder stores what the user read."""

from __future__ import annotations

from careerwise.events import DeltaEvent, ReportEvent, ReportSection
from careerwise.tracing.recorder import TraceRecorder


def test_streamed_text_is_the_stored_answer() -> None:
    rec = TraceRecorder("t")
    rec.observe(DeltaEvent(text="先", phase=1))
    rec.observe(DeltaEvent(text="做功課。", phase=1))
    assert rec.text == "先做功課。"
    assert len(rec.rows) == 1  # only the first delta's timing is kept as a row


def test_a_report_is_stored_as_markdown() -> None:
    rec = TraceRecorder("t")
    rec.observe(
        ReportEvent(
            title="職涯建議報告",
            sections=[
                ReportSection(heading="市場分析", body="前端需求穩定。"),
                ReportSection(heading="行動建議", body="先做一個作品。"),
            ],
        )
    )
    assert rec.text == "# 職涯建議報告\n\n## 市場分析\n前端需求穩定。\n\n## 行動建議\n先做一個作品。"
