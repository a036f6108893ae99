"""The resume review's parts on their own: contact masking, extraction and refusals, headings, the
model's layout and scores as validated, the rules, the rewrite guard, the report's comparison."""

from __future__ import annotations

import zipfile
from io import BytesIO

import pytest
from pydantic import ValidationError

from careerwise.flows.deep_steps import parse_model
from careerwise.resume.contact import has_contact, mask_contact
from careerwise.resume.extract import ExtractLimits, ResumeFileError, ResumeTypeError, extract_resume, sniff
from careerwise.resume.report import PreviousReview, build_report
from careerwise.resume.rewrites import rewrite_problem
from careerwise.resume.scoring import SectionScore, is_quantified, rule_score, scoring_model, weakest_lines
from careerwise.resume.service import target_role_in
from careerwise.resume.structure import BlockLabels, by_headings, from_labels, heading_kind, looks_like_resume
from tests.fixtures.resume_files import RESUME_EN, RESUME_ZH, resume_docx, resume_pdf

LIMITS = ExtractLimits()


# --------------------------------------------------------------------------- contact


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("Email：ming.wang@example.com", "emails"),
        ("聯絡我：ming.wang@example.com 或電話", "emails"),
        ("手機 0912 345 678", "phones"),
        ("0912-345-678", "phones"),
        ("+886 912 345 678", "phones"),
        ("(02) 2345-6789", "phones"),
        ("Tel: +1 415 555 0100", "phones"),
        ("LINE ID: ming_88", "line_ids"),
        ("地址：台北市大安區忠孝東路四段 100 號 5 樓", "addresses"),
        ("現居 新北市板橋區文化路一段 1 號", "addresses"),
        ("Address: 12 Baker Street, London", "addresses"),
    ],
)
def test_each_kind_of_contact_detail_is_found_and_masked(line: str, kind: str) -> None:
    masked, found = mask_contact(line)
    assert getattr(found, kind) == 1, found
    assert not has_contact(masked), masked
    for token in ("ming", "0912", "345", "2345-6789", "415", "忠孝", "文化路", "Baker"):
        if token in line and token not in ("345",):
            assert token not in masked, (token, masked)


@pytest.mark.parametrize(
    "line",
    [
        "ABC 科技 行銷專員 2020-2024",
        "粉專追蹤數一年成長 40%，三場線下活動共 600 人參加",
        "年薪 1,200,000，帶領 12 人團隊",
        "linkedin.com/in/mingwang",
        "The opening line: keep it short",
        "國立臺北大學 企業管理學系 2016-2020",
    ],
)
def test_lines_without_contact_details_are_left_alone(line: str) -> None:
    assert mask_contact(line) == (line, mask_contact(line)[1]) and mask_contact(line)[1].total == 0


def test_masking_a_whole_resume_twice_changes_nothing_more() -> None:
    once, found = mask_contact(RESUME_ZH)
    twice, again = mask_contact(once)
    assert twice == once and again.total == 0
    assert (found.emails, found.phones, found.line_ids, found.addresses) == (1, 1, 1, 1)
    assert once.count("\n") == RESUME_ZH.count("\n")  # line numbers survive masking


# --------------------------------------------------------------------------- extraction


def test_pdf_docx_and_text_give_the_same_text() -> None:
    pdf = extract_resume(resume_pdf(), filename="a.pdf", limits=LIMITS)
    docx = extract_resume(resume_docx(), filename="a.docx", limits=LIMITS)
    big5 = extract_resume(RESUME_ZH.encode("cp950"), filename="a.txt", limits=LIMITS)
    utf16 = extract_resume(RESUME_ZH.encode("utf-16"), filename=None, limits=LIMITS)
    assert pdf.text == docx.text == big5.text == utf16.text == RESUME_ZH
    assert (pdf.kind, pdf.pages, docx.kind, big5.kind) == ("pdf", 1, "docx", "text")


def test_the_content_decides_the_kind_not_the_name() -> None:
    assert extract_resume(resume_pdf(), filename="resume.txt", limits=LIMITS).kind == "pdf"
    with pytest.raises(ResumeFileError) as named:
        extract_resume(RESUME_ZH.encode(), filename="resume.docx", limits=LIMITS)
    assert named.value.code == "resume_unreadable" and "named .docx" in str(named.value)


def test_archives_that_are_not_word_documents_are_unsupported() -> None:
    out = BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("xl/workbook.xml", "<workbook/>")
    with pytest.raises(ResumeTypeError, match="Excel workbook"):
        sniff(out.getvalue())
    with pytest.raises(ResumeTypeError, match="binary"):
        sniff(b"\x00\x01\x02" * 50)


def test_limits_are_settings() -> None:
    small = ExtractLimits(max_bytes=1000, max_pages=1, max_chars=100)
    with pytest.raises(ResumeFileError) as pages:
        extract_resume(resume_pdf(pages=2), filename="a.pdf", limits=ExtractLimits(max_pages=1))
    assert pages.value.code == "resume_too_many_pages"
    with pytest.raises(ResumeFileError) as long:
        extract_resume(RESUME_ZH.encode(), filename="a.txt", limits=ExtractLimits(max_chars=100))
    assert long.value.code == "resume_too_long"
    with pytest.raises(Exception) as big:
        extract_resume(bytes(2000), filename="a.txt", limits=small)
    assert getattr(big.value, "code", "") == "resume_too_large"


# --------------------------------------------------------------------------- structure


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("工作經歷", "experience"),
        ("【學歷】", "education"),
        ("## Experience", "experience"),
        ("SKILLS:", "skills"),
        ("■ 專業技能", "skills"),
        ("Professional Summary", "summary"),
        ("自傳", "summary"),
        ("負責社群經營與每月電子報", None),
        ("我在學歷上沒有優勢，但工作經歷豐富", None),
    ],
)
def test_headings(line: str, kind: str | None) -> None:
    assert heading_kind(line) == kind


def test_by_headings_splits_both_fixtures() -> None:
    for text in (RESUME_ZH, RESUME_EN):
        structure = by_headings(mask_contact(text)[0])
        assert structure.present() == ["contact", "summary", "experience", "skills", "education"]
        assert "40%" in structure.text("experience")


def test_looks_like_resume() -> None:
    assert looks_like_resume(RESUME_ZH) and looks_like_resume(RESUME_EN)
    assert not looks_like_resume("可以幫我看履歷嗎？我的經歷是行銷，技能是 SQL，學歷是大學。")


def test_the_models_block_labels_are_checked_against_the_blocks() -> None:
    ok = parse_model(BlockLabels, '{"labels": ["contact", "Work Experience", "skills"]}')
    assert ok.labels == ["contact", "experience", "skills"]
    structure = from_labels("Alex\n\nABC, 2020 - 2024\nBuilt X\n\nSQL, Excel, Python", [[0], [2, 3], [5]], ok)
    assert structure.text("experience") == "ABC, 2020 - 2024\nBuilt X" and structure.source == "llm"
    with pytest.raises(ValueError, match="2 labels for 3 blocks"):
        from_labels("a\n\nb\n\nc", [[0], [2], [4]], BlockLabels(labels=["contact", "skills"]))
    with pytest.raises(ValueError, match="labels"):
        parse_model(BlockLabels, '{"labels": ["contact", "hobbies"]}')
    with pytest.raises(ValueError, match="labels"):
        parse_model(BlockLabels, '{"labels": []}')


# --------------------------------------------------------------------------- scores and rewrites


def test_a_section_score_is_the_rounded_mean_of_its_criteria() -> None:
    assert SectionScore(section="experience", quantified=2, relevance=2, wording=2, length=4).score == 3
    assert SectionScore(section="skills", relevance="3", length=4.0).score == 4  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        SectionScore(section="skills", relevance=6)
    with pytest.raises(ValidationError):
        SectionScore(section="skills")


def test_the_scoring_model_needs_every_section() -> None:
    model = scoring_model(["experience", "skills"])
    reply = '{"sections": [{"section": "experience", "relevance": 2, "wording": 3, "comment": "c"}, {"section": "skills", "relevance": 3}]}'
    assert [s.section for s in parse_model(model, reply).sections] == ["experience", "skills"]
    with pytest.raises(ValueError, match="no score for: skills"):
        parse_model(model, '{"sections": [{"section": "experience", "relevance": 2}]}')


def test_rules() -> None:
    assert not is_quantified("2019.03 - 2021.12 軟體工程師") and not is_quantified("2020年3月至今")
    assert is_quantified("帶領 5 人團隊") and is_quantified("Cut costs by 30%")
    masked, contact = mask_contact(RESUME_ZH)
    structure = by_headings(masked)
    assert rule_score("contact", "", role=None, contact=contact).score == 5
    experience = rule_score("experience", structure.text("experience"), role="行銷經理", contact=contact)
    assert (experience.quantified, experience.wording) == (3, 2)
    assert experience.relevance is not None and experience.relevance >= 3  # 行銷 is in the experience
    weakest = [structure.lines[i] for i in weakest_lines(structure)]
    assert weakest[:2] == ["負責社群經營與每月電子報", "協助辦公室採購與活動規劃"]


@pytest.mark.parametrize(
    ("rewrite", "problem"),
    [
        ("經營社群與每月電子報，讓開信率提升 X%", None),
        ("經營社群與每月電子報，讓開信率提升 25%", "invents figures: 25"),
        ("用 HubSpot 經營社群與每月電子報", "names what the resume does not: hubspot"),
        ("用 Canva 設計每月電子報，開信率提升 X%", None),
        ("負責社群經營與每月電子報", "the same as the original"),
    ],
)
def test_the_rewrite_guard(rewrite: str, problem: str | None) -> None:
    assert rewrite_problem("負責社群經營與每月電子報", rewrite, resume=RESUME_ZH, role="產品經理") == problem


def test_target_roles_in_a_message() -> None:
    assert target_role_in("以下是我的履歷，目標職位：產品經理\n王小明") == "產品經理"
    assert target_role_in("Target role: data analyst\nAlex") == "data analyst"
    assert target_role_in("我想應徵後端工程師，這是我的履歷") == "後端工程師"
    assert target_role_in(RESUME_ZH) is None


def test_the_comparison_lists_each_sections_change() -> None:
    masked, contact = mask_contact(RESUME_ZH)
    structure = by_headings(masked)
    scores = {
        k: rule_score(k, structure.text(k), role=None, contact=contact)
        for k in ("contact", "experience", "skills")
    }
    previous = PreviousReview(version=1, scores={"experience": 1, "skills": 5, "education": 4}, overall=3.3)
    report = build_report(
        structure=structure,
        scores=scores,
        scoring_source="rules",
        overall=3.0,
        rewrites=[],
        hits=[],
        contact=contact,
        target_role=None,
        previous=previous,
        zh=True,
    )
    body = report.sections[-1].body
    assert report.sections[-1].heading == "與上一版比較"
    assert "- 聯絡資訊：新增（5/5）" in body and "- 學歷：上一版有，這一版沒有" in body
    assert f"- 經歷：1 → {scores['experience'].score}（+{scores['experience'].score - 1}）" in body
    assert "- 整體：3.3 → 3.0（-0.3）" in body
