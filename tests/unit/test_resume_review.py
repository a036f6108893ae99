"""The review's behaviour on real resumes (issue #25): headings that share a line with their content,
resumes without headings, short resumes, the penalty for a resume without figures, rewrites that never
add a figure, and the model's replies constrained by a JSON schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from careerwise.flows.deep_steps import parse_model
from careerwise.llm.local import LocalProvider
from careerwise.llm.openai_provider import OpenAIProvider
from careerwise.llm.types import ChatMessage, CompletionRequest
from careerwise.resume.chain import ReviewResult
from careerwise.resume.contact import ContactSummary, mask_contact
from careerwise.resume.report import build_report
from careerwise.resume.rewrites import (
    placeholder_figures,
    rewrite_problem,
    rewrites_model,
    rewrites_schema,
    template_rewrite,
)
from careerwise.resume.scoring import (
    COMMENT_CHARS,
    COMMENT_CHARS_ZH,
    SectionScore,
    has_quantified_achievement,
    merge_scores,
    penalise_no_numbers,
    rule_score,
    scoring_model,
    scoring_schema,
    weakest_lines,
)
from careerwise.resume.structure import (
    blocks,
    by_content,
    detect_sections,
    inline_heading,
    labels_model,
    labels_schema,
    looks_like_resume,
    missing_for_review,
)

SHORT_EN = """Jordan Lee
jordan.lee@example.com
Summary: Junior backend developer who enjoys building small web services.
Experience: Intern at Northwind Apps, worked on the REST API and wrote unit tests.
Skills: Python, Django, PostgreSQL, Git
Target role: backend engineer"""

SHORT_ZH = """林雅婷
信箱：yating.lin@example.com
自我介紹：喜歡與人溝通，希望從事行政或客服工作。
經歷：曾在連鎖咖啡店擔任門市人員，負責點餐與收銀。
技能：Word、Excel、基礎英文會話"""

NO_HEADINGS_EN = """Casey Morgan
casey.morgan@example.com

Accountant with five years in audit, now looking for a controlling role.

Redwood Partners, Senior Auditor, 2019 - 2024
Led audits of 9 manufacturing clients
Responsible for the audit planning memos

Excel, SAP, IFRS, CPA candidate

University of Toronto, BCom Accounting, 2015 - 2019"""

NO_HEADINGS_ZH = """周美玲
meiling.chou@example.com
喜歡整理資料，個性細心負責，希望在會計事務所發展。
大安記帳士事務所 助理 2020-2024
負責整理客戶單據
協助申報營業稅
Excel、會計軟體、丙級會計事務技術士
國立臺北商業大學 會計系 2016-2020"""


# --------------------------------------------------------------------------- headings on the content's line


@pytest.mark.parametrize(
    ("line", "kind", "rest"),
    [
        ("Skills: Python, SQL", "skills", "Python, SQL"),
        ("技能：Word、Excel", "skills", "Word、Excel"),
        ("【技能】Java、Redis", "skills", "Java、Redis"),
        (
            "EXPERIENCE — Alpine Foods, Analyst, 2019 - 2024",
            "experience",
            "Alpine Foods, Analyst, 2019 - 2024",
        ),
        ("學歷 | 國立中央大學 碩士", "education", "國立中央大學 碩士"),
        ("Work Experience: Cascade Freight", "experience", "Cascade Freight"),
        ("求職目標：品牌行銷企劃", "summary", "品牌行銷企劃"),
        ("Skills & Tools: Figma", "skills", "Figma"),
    ],
)
def test_a_heading_sharing_its_line_is_found_with_its_content(line: str, kind: str, rest: str) -> None:
    assert inline_heading(line) == (kind, rest)


@pytest.mark.parametrize(
    "line",
    [
        "Email：ming@example.com",
        "負責社群經營與每月電子報",
        "Skilled at Python",
        "Target role: analyst",
        "技能",
    ],
)
def test_lines_that_are_not_inline_headings(line: str) -> None:
    assert inline_heading(line) is None


@pytest.mark.parametrize("text", [SHORT_EN, SHORT_ZH])
def test_a_short_resume_with_inline_headings_is_split_and_reviewed(text: str) -> None:
    structure = detect_sections(mask_contact(text)[0])
    assert structure.present() == ["contact", "summary", "experience", "skills"]
    assert structure.missing() == ["education"]
    assert looks_like_resume(text)  # a paste is reviewed, not answered with the how-to
    assert "Target role" not in structure.text("skills")  # the role line is no section's


def test_a_request_for_a_review_is_still_not_a_resume() -> None:
    for message in (
        "可以幫我看履歷嗎？",
        "Can you review my resume? It has skills and experience.",
        "Skills: Python",
    ):
        assert not looks_like_resume(message)
    assert missing_for_review("Skills: Python") == ["summary", "experience", "education"]


@pytest.mark.parametrize("text", [NO_HEADINGS_EN, NO_HEADINGS_ZH])
def test_a_resume_without_headings_is_split_by_its_content(text: str) -> None:
    masked = mask_contact(text)[0]
    structure = by_content(masked)
    assert structure.present() == ["contact", "summary", "experience", "skills", "education"]
    assert "2019 - 2024" in structure.text("experience") or "2020-2024" in structure.text("experience")
    assert detect_sections(masked).present() == structure.present()
    assert looks_like_resume(text)


def test_the_blocks_the_model_labels() -> None:
    lines = NO_HEADINGS_EN.split("\n")
    assert [len(b) for b in blocks(lines)] == [2, 1, 3, 1, 1]
    assert len(blocks(NO_HEADINGS_ZH.split("\n"))) == 8  # no blank lines: one block a line


# --------------------------------------------------------------------------- scores


def test_a_resume_without_a_figure_is_penalised() -> None:
    structure = detect_sections(mask_contact(SHORT_EN)[0])
    assert not has_quantified_achievement(structure)
    scores = {
        "experience": SectionScore(section="experience", quantified=3, relevance=5, wording=5, length=5)
    }
    assert scores["experience"].score == 5
    penalise_no_numbers(scores)
    assert scores["experience"].quantified == 1 and scores["experience"].score == 3
    result = ReviewResult(
        scores={**scores, "skills": SectionScore(section="skills", relevance=5, length=5)}, unquantified=True
    )
    assert result.overall == 3.0
    assert ReviewResult(scores=result.scores).overall == 4.0  # the cap is the penalty's alone
    report = build_report(
        structure=structure,
        scores=result.scores,
        scoring_source="llm",
        overall=result.overall,
        rewrites=[],
        hits=[],
        contact=ContactSummary(),
        target_role=None,
        previous=None,
        zh=False,
        unquantified=True,
    )
    overall = report.sections[0].body
    assert "no quantified achievement" in overall and "Missing sections: Education" in overall
    assert "- Education: school, field, degree and graduation year." in overall


def test_a_resume_with_a_figure_is_not_penalised() -> None:
    assert has_quantified_achievement(detect_sections(mask_contact(NO_HEADINGS_EN)[0]))


def test_the_models_judgement_joins_the_rules_counts() -> None:
    rules = rule_score("experience", "負責整理客戶單據\n協助申報營業稅", role=None, contact=ContactSummary())
    merged = merge_scores(
        SectionScore(section="experience", relevance=4, wording=2, comment="少了成果"), rules
    )
    assert (merged.quantified, merged.length) == (rules.quantified, rules.length)
    assert (merged.relevance, merged.wording, merged.comment) == (4, 2, "少了成果")


# --------------------------------------------------------------------------- rewrites


@pytest.mark.parametrize(
    ("original", "rewrite", "shown"),
    [
        ("負責社群經營", "經營社群，追蹤數提升 35%", "經營社群，追蹤數提升 [X]%"),
        ("負責社群經營", "經營社群，追蹤數提升 X%", "經營社群，追蹤數提升 [X]%"),
        (
            "Grew sales 40% in 2023",
            "Grew sales by 40% in 2023 across 12 stores",
            "Grew sales by 40% in 2023 across [X] stores",
        ),
        (
            "Cut reporting from 3 days to 6 hours",
            "Cut reporting time from 3 days to 6 hours",
            "Cut reporting time from 3 days to 6 hours",
        ),
    ],
)
def test_a_figure_the_line_lacks_becomes_a_placeholder(original: str, rewrite: str, shown: str) -> None:
    assert placeholder_figures(rewrite, original) == shown
    assert rewrite_problem(original, shown, resume=original, role=None) is None


def test_a_figure_in_words_the_line_lacks_is_still_refused() -> None:
    hidden = placeholder_figures("經營社群，追蹤數成長三成", "負責社群經營")
    assert rewrite_problem("負責社群經營", hidden, resume="負責社群經營", role=None) == "invents figures: 30"


@pytest.mark.parametrize(
    ("line", "zh", "start"),
    [
        ("負責麵包陳列與門市清潔", True, "主責麵包陳列與門市清潔，讓[成果指標]"),
        ("協助店長盤點與叫貨", True, "協同店長盤點與叫貨，"),
        ("Responsible for onboarding new drivers", False, "Managed onboarding new drivers, raising [metric]"),
        ("Helped with office purchasing", False, "Contributed to office purchasing, raising"),
        ("Experience: Intern at Northwind Apps, worked on the REST API.", False, "Intern at Northwind Apps"),
        ("Cut costs by 30% with a new supplier", False, "Cut costs by 30% with a new supplier"),
    ],
)
def test_the_rules_template_adds_no_figure(line: str, zh: bool, start: str) -> None:
    rewrite = template_rewrite(line, zh, kind="experience")
    assert rewrite.original == line and rewrite.rewrite is not None and rewrite.rewrite.startswith(start)
    assert rewrite_problem(line, rewrite.rewrite, resume=line, role=None) is None


def test_every_resume_has_lines_to_rewrite() -> None:
    strong = detect_sections(
        "Ana\nExperience\nCut costs by 30% at Acme in 2022\nGrew revenue 12% in two years"
    )
    assert len(weakest_lines(strong)) == 2  # even when every line is quantified and opens with a verb
    only_skills = detect_sections("Ana\nSkills: Python, SQL, Excel, Tableau\nEducation: BSc Maths")
    assert weakest_lines(only_skills) == [1]


# --------------------------------------------------------------------------- constrained JSON


def test_the_scoring_schema_fixes_the_sections_their_order_and_the_score_range() -> None:
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    schema = scoring_schema(["summary", "experience", "skills"])
    grammar = json_schema_to_gbnf(json.dumps(schema))
    assert '"\\"summary\\""' in grammar and '"\\"skills\\""' in grammar
    assert '"1" | "2" | "3" | "4" | "5"' in grammar
    items = schema["properties"]["sections"]["prefixItems"]
    assert {i["properties"]["comment"]["maxLength"] for i in items} == {COMMENT_CHARS}
    # a Chinese resume's comments are capped shorter: the same step's max_tokens must hold every section
    zh_items = scoring_schema(["summary", "experience", "skills"], zh=True)["properties"]["sections"][
        "prefixItems"
    ]
    assert {i["properties"]["comment"]["maxLength"] for i in zh_items} == {COMMENT_CHARS_ZH}
    assert [list(i["properties"]) for i in items] == [
        ["section", "relevance", "wording", "comment"],
        ["section", "relevance", "wording", "comment"],
        ["section", "relevance", "comment"],
    ]
    reply = json.dumps(
        {
            "sections": [
                {"section": "summary", "relevance": 3, "wording": 2, "comment": "a"},
                {"section": "experience", "relevance": 4, "wording": 2, "comment": "b"},
                {"section": "skills", "relevance": 5, "comment": "c"},
            ]
        }
    )
    parsed = parse_model(scoring_model(["summary", "experience", "skills"]), reply)
    assert [s.section for s in parsed.sections] == ["summary", "experience", "skills"]


def test_the_rewrites_and_labels_schemas_fix_the_count() -> None:
    assert rewrites_schema(3)["properties"]["rewrites"]["minItems"] == 3
    assert labels_schema(4)["properties"]["labels"]["maxItems"] == 4
    with pytest.raises(ValueError, match="2 rewrites for 3 lines"):
        parse_model(rewrites_model(3), '{"rewrites": [{"rewrite": "a", "why": ""}, {"rewrite": "b"}]}')
    with pytest.raises(ValueError, match="1 labels for 2 blocks"):
        parse_model(labels_model(2), '{"labels": ["contact"]}')


def test_the_embedded_model_samples_under_the_requests_schema(tmp_path: Path) -> None:
    provider = LocalProvider(model_path=tmp_path / "absent.gguf")  # the grammar needs no weights
    asked = CompletionRequest(messages=[ChatMessage(role="user", content="x")], json_schema=labels_schema(2))
    grammar = provider._grammar_for(asked, allow_calls=False)
    assert grammar is not None and provider._grammar_for(asked, allow_calls=False) is grammar  # cached
    free = CompletionRequest(messages=[ChatMessage(role="user", content="x")])
    assert provider._grammar_for(free, allow_calls=False) is None


def test_an_openai_compatible_server_gets_the_schema_as_response_format() -> None:
    provider = OpenAIProvider(
        base_url="http://127.0.0.1:9/v1", api_key="k", model="m", connect_timeout=1.0, read_timeout=1.0
    )
    schema = labels_schema(2)
    body = provider._body(
        CompletionRequest(messages=[ChatMessage(role="user", content="x")], json_schema=schema)
    )
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "reply", "schema": schema},
    }
    assert "response_format" not in provider._body(
        CompletionRequest(messages=[ChatMessage(role="user", content="x")])
    )


def test_the_how_to_says_which_sections_a_partial_paste_lacks() -> None:
    from types import SimpleNamespace
    from typing import Any, cast

    from careerwise.flows.resume import how_to
    from careerwise.resume.extract import ExtractLimits

    service = cast(Any, SimpleNamespace(limits=ExtractLimits()))
    partial = how_to(cast(Any, SimpleNamespace(zh=True, message="幫我看履歷\n技能：Excel、Word")), service)
    assert partial.startswith("這段訊息還不夠做履歷健檢") and "還缺少自我介紹、經歷、學歷" in partial
    plain = how_to(cast(Any, SimpleNamespace(zh=True, message="可以幫我看履歷嗎？")), service)
    assert plain.startswith("想做履歷健檢嗎")


def test_a_jobs_title_and_dates_are_never_picked_for_a_rewrite() -> None:
    structure = detect_sections(
        "Ana\nExperience\nAcme Corp, Analyst, 2019 - 2024\nHelped the sales team with reports"
    )
    assert [structure.lines[i] for i in weakest_lines(structure)] == ["Helped the sales team with reports"]


@pytest.mark.parametrize(
    ("original", "rewrite", "problem"),
    [
        (
            "- Helped the claims team with Excel reports",
            "Helped the claims team with Excel reports.",
            "the same",
        ),
        (
            "自我介紹：喜歡與人溝通，希望從事行政工作。",
            "曾在連鎖咖啡店擔任門市人員，負責點餐與收銀。",
            "not a rewrite",
        ),
        ("經歷：曾在咖啡店擔任門市人員，負責點餐與收銀。", "未提供（依履歷本身的方向判斷）", "not a rewrite"),
    ],
)
def test_a_copy_of_the_line_or_of_another_is_not_a_rewrite(original: str, rewrite: str, problem: str) -> None:
    found = rewrite_problem(original, rewrite, resume=original, role=None)
    assert found is not None and found.startswith(problem)


def test_a_rewrite_without_a_result_gets_one_to_fill_in() -> None:
    from careerwise.resume.rewrites import with_result_placeholder

    assert with_result_placeholder("Built the REST API with unit tests.", False, kind="experience") == (
        "Built the REST API with unit tests, raising [metric] by [X]%"
    )
    assert (
        with_result_placeholder("經營社群與電子報", True, kind="experience")
        == "經營社群與電子報，讓[成果指標]提升 [X]%"
    )
    assert with_result_placeholder("Cut costs by 30%", False, kind="experience") == "Cut costs by 30%"


def test_the_prompts_example_comment_is_not_a_comment() -> None:
    assert SectionScore(section="skills", relevance=3, comment="…〔1〕").comment == ""
    assert SectionScore(section="skills", relevance=3, comment="補上工具〔1〕").comment == "補上工具〔1〕"


def test_without_a_target_role_the_model_judges_no_relevance() -> None:
    schema = scoring_schema(["experience", "skills"], role=False)
    items = schema["properties"]["sections"]["prefixItems"]
    assert [list(i["properties"]) for i in items] == [
        ["section", "wording", "comment"],
        ["section", "comment"],
    ]
    model = scoring_model(["experience", "skills"], role=False)
    reply = '{"sections": [{"section": "experience", "wording": 2, "comment": "a"}, {"section": "skills", "comment": "b"}]}'
    parsed = parse_model(model, reply)
    rules = rule_score("skills", "Python, SQL", role=None, contact=ContactSummary())
    assert merge_scores(parsed.sections[1], rules) == rules.model_copy(update={"comment": "b"})
    with pytest.raises(ValueError, match="experience: no wording"):
        parse_model(model, reply.replace('"wording": 2, ', ""))


def test_a_rewrite_that_merges_several_lines_is_refused() -> None:
    merged = "我將在平台上負責平台活動規劃與上架作業，協助客服處理退貨爭議，並希望轉任產品經理，持續精進自己的能力與專業。"
    assert rewrite_problem("協助客服處理退貨爭議", merged, resume="", role=None) == (
        "longer than the line allows (lines merged)"
    )
