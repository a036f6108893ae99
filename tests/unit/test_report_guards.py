"""The report guards (flows/report_guards.py), one by one, on what the embedded model's deep reports
really said (issue 24), in Chinese and in English; and the fact check's allow-list (flows/fact_checks.py)."""

from __future__ import annotations

import pytest

from careerwise.events import ReportSection, Source
from careerwise.flows import fact_checks, report_guards
from careerwise.flows.report_guards import (
    DUPLICATE_ITEMS,
    DUPLICATE_SOURCES,
    GUARDS,
    INVENTED,
    NOT_APPLICABLE,
    OFF_DOMAIN_HITS,
    TRUNCATED_ITEMS,
    WRONG_COMPARISONS,
    Figure,
    guard_report,
)
from careerwise.knowledge.index import Hit, IndexedChunk

ACCOUNTANT_ZH = "我是會計師，月薪 4 萬，做了三年，該不該離職？"
ACCOUNTANT_EN = "I'm an accountant earning 40k a month after three years. Should I quit?"
AVERAGE_ZH = "會計人員的平均月薪約 4.5–4.7 萬，資深會計師可達 6 萬。"
AVERAGE_EN = "The average accountant salary is 45k-47k a month; senior accountants reach 60k."


def run(
    body: str,
    *,
    user: str = ACCOUNTANT_ZH,
    passages: tuple[str, ...] = (AVERAGE_ZH,),
    zh: bool = True,
    sources: tuple[Source, ...] = (),
) -> tuple[str, dict[str, int]]:
    result = guard_report(
        [ReportSection(heading="h", body=body, sources=list(sources))],
        user_messages=[user],
        passages=list(passages),
        zh=zh,
    )
    assert set(result.counts) == set(GUARDS)  # every guard reports, zeros included
    return result.sections[0].body, result.counts


def only(counts: dict[str, int], **expected: int) -> bool:
    return all(counts[k] == expected.get(k, 0) for k in GUARDS)


# --------------------------------------------------------------------------- invented user statements


def test_a_statement_the_user_never_made_is_dropped_zh() -> None:
    body, counts = run("- 使用者提到自己想要提升溝通能力。\n- 先盤點目前的技能。")
    assert body == "- 先盤點目前的技能。"
    assert only(counts, **{INVENTED: 1})


def test_a_statement_the_user_did_make_stays_zh() -> None:
    user = "我想提升溝通能力，現在是會計師。"
    body, counts = run(
        "- 你提到自己想要提升溝通能力，這是好的起點。\n- 你提到月薪 4 萬。", user=user + "月薪4萬"
    )
    assert "溝通能力" in body and "4 萬" in body
    assert only(counts)


def test_an_attributed_figure_the_user_never_gave_is_dropped() -> None:
    body, counts = run("- 你提到年薪 80 萬。\n- 你提到月薪 4 萬。")
    assert body == "- 你提到月薪 4 萬。"
    assert only(counts, **{INVENTED: 1})


def test_a_statement_the_user_never_made_is_dropped_en() -> None:
    body, counts = run(
        "- As you mentioned, you want to improve your communication skills.\n"
        "- You said you earn 40k a month.\n"
        "- Write down what you achieved this year.",
        user=ACCOUNTANT_EN,
        passages=(AVERAGE_EN,),
        zh=False,
    )
    assert "communication" not in body and "40k" in body and "achieved" in body
    assert only(counts, **{INVENTED: 1})


def test_a_sentence_that_attributes_nothing_is_not_judged() -> None:
    body, counts = run("- 提升溝通能力對轉職很重要。")
    assert body == "- 提升溝通能力對轉職很重要。" and only(counts)


# --------------------------------------------------------------------------- "the article does not apply"


def test_a_cited_article_called_not_applicable_is_dropped() -> None:
    body, counts = run("- 〔2〕這篇文章不適用於你的情況。\n- 這招不適用於外商，在本土企業較有效。")
    assert body == "- 這招不適用於外商，在本土企業較有效。"  # a tactic said not to fit stays
    assert only(counts, **{NOT_APPLICABLE: 1})
    body, counts = run(
        "- The second article does not apply to you.\n- Ask for the raise in a one-on-one.",
        user=ACCOUNTANT_EN,
        zh=False,
    )
    assert body == "- Ask for the raise in a one-on-one." and only(counts, **{NOT_APPLICABLE: 1})


# --------------------------------------------------------------------------- numeric comparisons


def test_figures_read_ranges_units_and_separators() -> None:
    assert report_guards.figures("平均 4.5–4.7 萬") == [Figure(45000, 47000)]
    assert report_guards.figures("45k-47k") == [Figure(45000, 47000)]
    assert report_guards.figures("NT$45,000–47,000") == [Figure(45000, 47000)]
    assert report_guards.figures("月薪四萬五") == [Figure(45000, 45000)]
    assert report_guards.figures("2025-2026 年的 3 年經驗") == []  # years and counts are not amounts


def test_a_user_below_the_cited_average_is_never_called_above_it_zh() -> None:
    body, counts = run("- 你目前月薪 4 萬，已經接近或高於平均水準。\n- 先查清楚同職位的行情。")
    assert "高於平均" not in body
    assert body.startswith("- 依引用資料，平均約 4.5–4.7 萬；你的 4 萬低於這個水準。")
    assert only(counts, **{WRONG_COMPARISONS: 1})


def test_a_user_below_the_cited_average_is_never_called_above_it_en() -> None:
    body, counts = run(
        "- With 40k a month you are already near or above the average.",
        user=ACCOUNTANT_EN,
        passages=(AVERAGE_EN,),
        zh=False,
    )
    assert body == "- The cited figures put the average at 45,000–47,000; your 40,000 is below it."
    assert only(counts, **{WRONG_COMPARISONS: 1})


def test_a_user_above_the_cited_range_is_never_called_below_it() -> None:
    body, counts = run("- 你的薪資低於市場平均，要積極爭取加薪。", user="我月薪 5 萬 5 千，該不該跳槽？")
    assert "低於市場平均" not in body and "5.5 萬高於" in body
    assert only(counts, **{WRONG_COMPARISONS: 1})


@pytest.mark.parametrize(
    "sentence",
    [
        "- 你目前月薪 4 萬，低於平均的 4.5–4.7 萬。",  # right
        "- 你目前月薪 4 萬，接近平均水準。",  # "near": no direction claimed
        "- 要高於行情，目標月薪 5 萬以上。",  # not about the user
        "- 你的年薪 48 萬高於平均。",  # a yearly figure is not compared with a monthly one
    ],
)
def test_right_or_undecidable_comparisons_stay(sentence: str) -> None:
    body, counts = run(
        sentence, user="我是會計師，月薪 4 萬，年薪 48 萬" if "年薪" in sentence else ACCOUNTANT_ZH
    )
    assert body == sentence and only(counts)


# --------------------------------------------------------------------------- repeated and cut-off items


def test_items_repeated_word_for_word_or_nearly_are_dropped() -> None:
    body, counts = run(
        "1. 先查清楚同職位的行情。\n2. 先查清楚同職位的行情。\n3. 先查清楚 同職位的行情！\n4. 整理三個成果案例。"
    )
    assert body == "1. 先查清楚同職位的行情。\n2. 整理三個成果案例。"  # renumbered
    assert only(counts, **{DUPLICATE_ITEMS: 2})


def test_items_with_different_figures_are_not_duplicates() -> None:
    body, counts = run("- 基本工資為每月 29,500 元。\n- 時薪是 196 元，基本工資為每月 29,500 元。")
    assert body.count("\n") == 1 and only(counts)


def test_an_item_repeated_in_a_later_section_is_dropped_there() -> None:
    result = guard_report(
        [
            ReportSection(heading="a", body="- Ask for the raise in a one-on-one."),
            ReportSection(heading="b", body="- ask for the raise in a one-on-one\n- Update your resume."),
            ReportSection(heading="c", body="No analysis is available for this facet."),
            ReportSection(heading="d", body="No analysis is available for this facet."),
        ],
        user_messages=[ACCOUNTANT_EN],
        passages=[],
        zh=False,
    )
    assert [s.body for s in result.sections][1:] == [
        "- Update your resume.",
        "No analysis is available for this facet.",  # a paragraph line is compared within its section
        "No analysis is available for this facet.",
    ]
    assert only(result.counts, **{DUPLICATE_ITEMS: 1})


def test_a_list_cut_off_in_the_middle_of_its_last_item_is_cut_back() -> None:
    body, counts = run("- 整理履歷，列出三項成果。\n- 和主管談加薪，準備")
    assert body == "- 整理履歷，列出三項成果。" and only(counts, **{TRUNCATED_ITEMS: 1})
    body, counts = run("- 整理履歷。\n- 和主管談加薪。接著準備（三張牌", zh=True)
    assert body == "- 整理履歷。\n- 和主管談加薪。" and only(counts, **{TRUNCATED_ITEMS: 1})
    body, counts = run(
        "- Update your resume.\n- Ask your manager for a raise and", user=ACCOUNTANT_EN, zh=False
    )
    assert body == "- Update your resume." and only(counts, **{TRUNCATED_ITEMS: 1})


def test_a_list_whose_items_have_no_end_marks_is_not_cut() -> None:
    body, counts = run("- 整理履歷\n- 和主管談加薪")
    assert body == "- 整理履歷\n- 和主管談加薪" and only(counts)


def test_a_section_left_empty_says_so() -> None:
    body, counts = run("- 使用者提到自己想要提升溝通能力。")
    assert body == report_guards.EMPTIED[0] and only(counts, **{INVENTED: 1})


# --------------------------------------------------------------------------- citations


def test_one_chip_per_article_in_a_section_and_in_the_report() -> None:
    a1, a2 = (
        Source(id="a", title="A", section="s1", score=0.4),
        Source(id="a", title="A", section="s2", score=0.6),
    )
    b = Source(id="b", title="B")
    result = guard_report(
        [
            ReportSection(heading="x", body="- 一", sources=[a1, a2, b]),
            ReportSection(heading="y", body="- 二", sources=[b]),
        ],
        user_messages=[ACCOUNTANT_ZH],
        passages=[],
        zh=True,
    )
    assert [(s.id, s.score) for s in result.sections[0].sources] == [("a", 0.6), ("b", None)]
    assert [s.id for s in result.sources] == ["a", "b"]
    assert only(result.counts, **{DUPLICATE_SOURCES: 1})


# --------------------------------------------------------------------------- facet hits by audience


def hit(document_id: str, title: str, domain: str = "interview_practice") -> Hit:
    return Hit(IndexedChunk(1, document_id, title, "", domain, "text"), 0.5, 0.5, 0.0)


TECH = hit("b-technical-interview-prep-plan", "Summer's 8-Week Technical Interview Plan — 10 Hours a Week")
ROUNDS = hit("b-taiwan-interview-rounds", "HR 面、主管面、群體面試：台灣常見面試關卡各自在看什麼")
LEAVE = hit("b-why-did-you-leave-answer", "「為什麼離開上一份工作？」Summer 的 2-8 原則與三不說")


def test_an_accountant_gets_no_technical_interview_plan() -> None:
    kept, dropped = report_guards.relevant_facet_hits([[TECH, ROUNDS, LEAVE]], [ACCOUNTANT_ZH], top_k=2)
    assert kept == [[ROUNDS, LEAVE]] and dropped == [TECH]  # the next relevant hit takes its place


def test_an_engineer_keeps_the_technical_interview_plan() -> None:
    kept, dropped = report_guards.relevant_facet_hits(
        [[TECH, ROUNDS]], ["我是後端工程師，想跳槽外商"], top_k=2
    )
    assert kept == [[TECH, ROUNDS]] and dropped == []
    assert report_guards.situation_audiences("I build dashboards") == set()  # "ui" is not inside "build"


def test_the_off_domain_count_reaches_the_report_counts() -> None:
    result = guard_report(
        [], user_messages=[ACCOUNTANT_ZH], passages=[], zh=True, earlier={OFF_DOMAIN_HITS: 2}
    )
    assert only(result.counts, **{OFF_DOMAIN_HITS: 2})


# --------------------------------------------------------------------------- the fact check's allow-list


def test_the_fact_check_keeps_common_terms_and_acronyms() -> None:
    sources = ["轉職前先盤點可轉移的技能。"]
    for sentence in ("可以往 UI/UX 設計發展。", "先設定 KPI 與 OKR，再學 SQL。", "HR 面試時說明轉職動機。"):
        assert fact_checks.unsupported_claim(sentence, sources) is None, sentence
    # a company or a product is still a claim a source must contain
    assert (
        fact_checks.unsupported_claim("可以投遞 Google 的職缺。", sources)
        == "names not in its sources: google"
    )


def test_the_fact_check_keeps_the_users_own_words() -> None:
    checked = fact_checks.check_text(
        "你想轉 Figma 相關的工作。\n建議學 Tableau。", ["我會用 Figma，想換工作", "盤點技能"]
    )
    assert checked.text == "你想轉 Figma 相關的工作。" and [w for _, w in checked.dropped] == [
        "names not in its sources: tableau"
    ]


def test_a_closing_quote_is_not_an_end_mark() -> None:
    # from a stored report: two phrases, neither a sentence; the last one is whole
    body, counts = run("- HR 面：確認「穩定」與「條件對得上」\n- 主管面：要和後面主管面講的一致")
    assert body.endswith("講的一致") and only(counts)
