"""A rewrite asks for a result only on an achievement line: the section a line belongs to decides.

An experience (or project) bullet that states no result gets one to fill in (「，讓[成果指標]提升 [X]%」,
", raising [metric] by [X]%"); a Summary / 自我介紹 line, an objective or a skills list never does, whether
the rewrite is the model's or the rules' template. The chain runs on a scripted provider: no model.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator

import pytest

from careerwise.events import Event
from careerwise.flows.base import FlowContext, FlowOptions
from careerwise.llm.types import CompletionRequest, StreamChunk, Usage
from careerwise.resume.chain import ReviewRequest, ReviewResult, run_review
from careerwise.resume.contact import ContactSummary, mask_contact
from careerwise.resume.rewrites import Rewrite, rewrite_problem, template_rewrite, with_result_placeholder
from careerwise.resume.structure import detect_sections
from careerwise.tools.registry import ToolRegistry

RESULT_ASKED = ("[metric]", "[成果指標]", "%", "baseline", "比較基準")

RESUME_EN = """Sam Park
sam.park@example.com
Summary
Backend engineer who builds payment and settlement systems
Experience
Acme Pay, Backend Engineer, 2019 - 2024
Responsible for the settlement service
Built the refund API for the mobile app
Skills
Python, Go, PostgreSQL
Education
National Taiwan University, BSc Computer Science, 2015 - 2019"""

RESUME_ZH = """陳志明
Email：zhiming@example.com
自我介紹
後端工程師，五年金流系統開發經驗
工作經歷
藍海支付 後端工程師 2019-2024
負責對帳服務的維護
開發行動 App 的退款 API
專業技能
Python、Go、PostgreSQL
學歷
國立臺灣大學 資訊工程學系 2015-2019"""

SUMMARY_EN = "Backend engineer who builds payment and settlement systems"
SUMMARY_ZH = "後端工程師，五年金流系統開發經驗"
# the model's rewrites, none stating a result: which of them then gets one to fill in is the point
MODEL_REWRITES = {
    SUMMARY_EN: "Backend engineer building payment and settlement systems",
    "Responsible for the settlement service": "Ran the settlement service",
    "Built the refund API for the mobile app": "Built and shipped the refund API for the mobile app",
    SUMMARY_ZH: "後端工程師，具五年金流系統開發經驗",
    "負責對帳服務的維護": "維護對帳服務",
    "開發行動 App 的退款 API": "開發並上線行動 App 的退款 API",
}
SCORES = {
    "sections": [
        {"section": "summary", "wording": 3, "comment": "a"},
        {"section": "experience", "wording": 2, "comment": "b"},
        {"section": "skills", "comment": "c"},
        {"section": "education", "comment": "d"},
    ]
}
_ASKED_LINE = re.compile(r"^\d+\. (.+)$", re.MULTILINE)


class StepProvider:
    """Answers each resume step by its system prompt: the scores above, and either each asked line's
    rewrite from :data:`MODEL_REWRITES` or (``rewrites_fail``) a reply that is no JSON at all."""

    name = "scripted"
    model = "scripted"

    def __init__(self, *, rewrites_fail: bool = False) -> None:
        self.rewrites_fail = rewrites_fail
        self.asked: list[list[str]] = []

    def _reply(self, request: CompletionRequest) -> str:
        system, user = request.messages[0].content or "", request.messages[-1].content or ""
        if "各改寫成一行更有力" in system or "Rewrite each of the resume lines" in system:
            lines = _ASKED_LINE.findall(user)
            self.asked.append(lines)
            if self.rewrites_fail:
                return "sorry"
            return json.dumps(
                {"rewrites": [{"rewrite": MODEL_REWRITES[line], "why": "ok"} for line in lines]},
                ensure_ascii=False,
            )
        return json.dumps(SCORES)

    async def stream(self, request: CompletionRequest) -> AsyncIterator[StreamChunk]:
        yield StreamChunk(text=self._reply(request), usage=Usage(prompt_tokens=10, completion_tokens=5))

    async def aclose(self) -> None:
        return None


async def _review(text: str, zh: bool, provider: StepProvider) -> dict[str, Rewrite]:
    ctx = FlowContext(
        message="",
        history=[],
        zh=zh,
        provider=provider,
        tools=ToolRegistry(),
        intent="resume",
        options=FlowOptions(llm_retries=0),
    )
    masked, contact = mask_contact(text)
    result = ReviewResult()
    events: list[Event] = []
    await run_review(ctx, ReviewRequest(text=masked, contact=contact, zh=zh), events.append, result)
    assert provider.asked, "the rewrite step was not asked"
    return {r.original: r for r in result.rewrites}


def _asks_result(rewrite: Rewrite) -> bool:
    return rewrite.rewrite is not None and any(mark in rewrite.rewrite for mark in RESULT_ASKED)


@pytest.mark.parametrize(
    ("text", "zh", "summary", "bullet"),
    [
        (RESUME_EN, False, SUMMARY_EN, "Built the refund API for the mobile app"),
        (RESUME_ZH, True, SUMMARY_ZH, "開發行動 App 的退款 API"),
    ],
)
async def test_the_models_rewrite_of_a_summary_line_gets_no_result_placeholder(
    text: str, zh: bool, summary: str, bullet: str
) -> None:
    provider = StepProvider()
    rewrites = await _review(text, zh, provider)
    assert summary in rewrites and bullet in rewrites, rewrites
    assert not rewrites[summary].by_rules and rewrites[summary].rewrite == MODEL_REWRITES[summary]
    assert not rewrites[bullet].by_rules and _asks_result(rewrites[bullet])
    assert rewrites[bullet].rewrite == (
        "開發並上線行動 App 的退款 API，讓[成果指標]提升 [X]%"
        if zh
        else "Built and shipped the refund API for the mobile app, raising [metric] by [X]%"
    )


@pytest.mark.parametrize(
    ("text", "zh", "summary", "bullet"),
    [
        (RESUME_EN, False, SUMMARY_EN, "Responsible for the settlement service"),
        (RESUME_ZH, True, SUMMARY_ZH, "負責對帳服務的維護"),
    ],
)
async def test_the_rules_template_of_a_summary_line_asks_for_no_result(
    text: str, zh: bool, summary: str, bullet: str
) -> None:
    rewrites = await _review(text, zh, StepProvider(rewrites_fail=True))
    assert all(r.by_rules for r in rewrites.values())
    assert not _asks_result(rewrites[summary]), rewrites[summary]
    assert rewrites[summary].rewrite != summary  # still a rewrite, not the line again
    assert _asks_result(rewrites[bullet]), rewrites[bullet]


@pytest.mark.parametrize(
    ("line", "zh", "kind"),
    [
        (SUMMARY_EN, False, "summary"),
        ("Backend engineer with 5 years of experience in payments", False, "summary"),  # no baseline either
        (SUMMARY_ZH, True, "summary"),
        ("Seeking a backend role in fintech", False, "summary"),  # an objective is the summary's
        ("Python, Go, PostgreSQL, Kafka", False, "skills"),
        ("Python、Go、PostgreSQL、Kafka", True, "skills"),
        ("National Taiwan University, BSc Computer Science", False, "education"),
        ("Backend engineer who enjoys payments", False, None),  # no section found: no claim asked for
    ],
)
def test_only_an_achievement_line_is_asked_for_a_result(line: str, zh: bool, kind: str | None) -> None:
    assert with_result_placeholder(line, zh, kind=kind) == line
    template = template_rewrite(line, zh, kind=kind)
    assert template.rewrite is not None and not _asks_result(template), template
    assert rewrite_problem(line, template.rewrite, resume=line, role=None) is None


@pytest.mark.parametrize(
    ("line", "zh", "shown"),
    [
        ("Built the refund API", False, "Built the refund API, raising [metric] by [X]%"),
        ("開發退款 API", True, "開發退款 API，讓[成果指標]提升 [X]%"),
    ],
)
def test_an_experience_line_is_still_asked_for_its_result(line: str, zh: bool, shown: str) -> None:
    assert with_result_placeholder(line, zh, kind="experience") == shown
    assert _asks_result(template_rewrite(line, zh, kind="experience"))


def test_the_resumes_sections_are_what_the_tests_assume() -> None:
    for text, summary in ((RESUME_EN, SUMMARY_EN), (RESUME_ZH, SUMMARY_ZH)):
        structure = detect_sections(mask_contact(text)[0])
        assert structure.text("summary") == summary
        assert structure.present() == ["contact", "summary", "experience", "skills", "education"]
        assert ContactSummary() != mask_contact(text)[1]  # the email was found and masked
