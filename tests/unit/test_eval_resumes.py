"""The resume evaluation's scoring (`careerwise eval resumes`): what it reads from a review's events."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

from careerwise.evals import resumes as ev
from careerwise.events import DegradedEvent, ReportEvent, ReportSection
from careerwise.resume.extract import ExtractLimits, extract_resume

ITEM = ev.ResumeItem(
    file="x.txt",
    lang="zh",
    sections=frozenset({"contact", "experience", "skills", "education"}),
    kinds=(),
    figures=("40%",),
)
REPORT = ReportEvent(
    title="履歷健檢報告",
    path="resume",
    sections=[
        ReportSection(heading="總評", body="整體分數：3.4 / 5\n目標職位：未提供"),
        ReportSection(heading="聯絡資訊 5/5", body=""),
        ReportSection(heading="自我介紹 3/5", body=""),
        ReportSection(heading="經歷 3/5", body=""),
        ReportSection(heading="技能 4/5", body=""),
        ReportSection(
            heading="改寫建議",
            body="- 原句：負責社群\n  改寫：經營社群，追蹤數提升 [X]%\n  原因：—\n- 原句：協助採購\n  改寫：規劃採購，節省 25% 成本\n  原因：—",
        ),
    ],
)


async def _events(*events: Any) -> AsyncIterator[Any]:
    for e in events:
        yield e


async def test_a_review_is_scored_from_its_events() -> None:
    text = "王小明\n經歷\n負責社群，追蹤數成長 40%\n協助採購\n技能\nExcel"
    result = await ev.score_events(
        ITEM,
        _events(DegradedEvent(reason="resume_rewrites_failed", message="m"), REPORT),
        resume_text=text,
        started=time.perf_counter(),
    )
    assert result.completed and not result.without_fallback and result.fallbacks == ["resume_rewrites_failed"]
    assert result.detected == ["contact", "experience", "skills", "summary"]
    # summary found but not there, education there but not found; experience and skills right
    assert (result.section_hits, result.section_total) == (2, 4)
    assert result.rewrites == ["經營社群，追蹤數提升 [X]%", "規劃採購，節省 25% 成本"]
    assert result.invented == ["25"] and result.overall == 3.4
    summary = ev.summarise([result])
    assert summary["invented_figures"] == 1 and summary["without_fallback"] == 0
    assert summary["overall_with_numbers"] == 3.4 and summary["overall_without_numbers"] is None


async def test_a_review_without_a_report_is_not_completed() -> None:
    result = await ev.score_events(ITEM, _events(), resume_text="", started=time.perf_counter())
    assert not result.completed and ev.summarise([result])["without_fallback_share"] == 0.0


def test_the_sets_sections_are_found_without_the_model() -> None:
    items = ev.load_items(ev.REPO_EVAL_DIR / "labels.jsonl")
    assert len(items) >= 15
    found = [
        ev.offline(
            i,
            extract_resume(
                (ev.REPO_EVAL_DIR / i.file).read_bytes(), filename=i.file, limits=ExtractLimits()
            ).text,
        )
        for i in items
    ]
    assert sum(r.hits for r in found) / sum(r.total for r in found) >= 0.95
    assert all(r.pasted_reviewed for r in found if r.pasted_reviewed is not None)
