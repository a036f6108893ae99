"""The fact checker's parts: one normaliser for numbers written any way, what a sentence asserts, and the
removal of unsupported sentences (the medium chain's check, and the merge guard's number and name rules)."""

from __future__ import annotations

import pytest

from careerwise.flows import deep_steps, fact_checks

# --------------------------------------------------------------------------- the normaliser


@pytest.mark.parametrize(
    ("written", "same_as"),
    [
        ("三年", "3年"),
        ("工作三年", "工作 3 年"),
        ("一成", "10%"),
        ("兩成", "20%"),
        ("三成五", "35%"),
        ("3成", "30%"),
        ("百分之三十", "30%"),
        ("百分之 12.5", "12.5%"),
        ("五萬", "50000"),
        ("5萬", "50,000"),
        ("5 萬元", "50000 元"),
        ("1.5萬", "15000"),
        ("2萬5千", "25000"),
        ("3萬5", "35000"),
        ("三萬五", "35,000"),
        ("兩千五", "2500"),
        ("2千", "2000"),
        ("十年", "10年"),
        ("十二個月", "12個月"),
        ("二十一", "21"),
        ("一百零五", "105"),
        ("三千萬", "30,000,000"),
        ("十萬一千", "101000"),
        ("50 萬出頭", "500,000 出頭"),
        ("３", "3"),
        ("２９，５００", "29500"),
        ("29,500", "29500"),
        ("1,234,567", "1234567"),
        ("一億", "100000000"),
    ],
)
def test_numbers_written_differently_are_the_same_number(written: str, same_as: str) -> None:
    assert fact_checks.numbers(written) == fact_checks.numbers(same_as) != set()


@pytest.mark.parametrize(
    "text",
    [
        "轉職一定會成功",  # 一定: surely
        "找一份工作",  # a lone 一 is "a"
        "一起準備",
        "陷入兩難",  # a dilemma
        "十分重要",  # very
        "千萬不要裸辭",  # by all means
        "萬一失敗了怎麼辦",  # in case
        "不要一成不變",  # unchanging
        "在百貨公司工作",
        "唯一的方法",
        "先三思再行動",
        "成長很快，成本也低",
        "第三步是面試",  # an ordinal
        "第 2 點",
        "〔1〕說明了離職前要想清楚",  # a passage citation
        "[2] says so",
        "1. 先盤點技能",  # a list mark
        "以下三個建議",  # the answer counting its own items
        "Here are 3 tips",
        "Step 2: apply",
    ],
)
def test_words_with_numerals_that_state_no_number(text: str) -> None:
    assert fact_checks.numbers(text) == set()


def test_numbers_keep_decimals_and_drop_leading_zeros() -> None:
    assert fact_checks.numbers("約 1.5 倍，時薪 196 元") == {"1.5", "196"}
    assert fact_checks.numbers("1.50 倍") == {"1.5"}
    assert fact_checks.numbers("2026/11/30") == {"2026", "11", "30"}
    assert fact_checks.numbers("1.5 倍是從行首開始的數字") == {"1.5"}  # not a list mark


def test_the_merge_guard_reads_numbers_the_same_way() -> None:
    # the merge check used to miss Chinese numerals: 三成 vs 30 %
    cited = ["約有 30% 的人轉職後薪水下降"]
    assert deep_steps.unsupported("約三成的人轉職後薪水下降", cited, []) is None
    assert "40" in (deep_steps.unsupported("約四成的人轉職後薪水下降", cited, []) or "")
    assert (
        deep_steps.unsupported("起薪約五萬元，轉職後薪水下降", ["起薪約 50,000 元，轉職後薪水下降"], [])
        is None
    )


# --------------------------------------------------------------------------- names and titles


def test_titles_in_book_marks_are_names() -> None:
    assert fact_checks.titles("先讀《原子習慣》再讀《深度工作力》") == {"原子習慣", "深度工作力"}
    assert "原子習慣" in (fact_checks.unsupported_claim("推薦讀《原子習慣》", ["面試前先準備故事"]) or "")
    assert fact_checks.unsupported_claim("推薦讀《原子習慣》", ["《原子習慣》提到小改變"]) is None


@pytest.mark.parametrize(
    ("claim", "why"),
    [
        ("前端新人月薪約 61,234 元", "61234"),
        ("三年內可以升到資深", "3"),
        ("薪水可以多兩成", "20"),
        ("2030 年前端需求會翻倍", "2030"),
        ("先考 AWS 證照", "aws"),
        ("Join Google as an intern.", "google"),
    ],
)
def test_unsupported_claims_say_what_is_missing(claim: str, why: str) -> None:
    sources = ["2026 年起基本工資為每月 29,500 元", "想轉職前端但沒有相關經驗"]
    reason = fact_checks.unsupported_claim(claim, sources)
    assert reason is not None and why in reason


@pytest.mark.parametrize(
    "claim",
    [
        "2026 年起基本工資為每月 29500 元",
        "基本工資約 2.95 萬元",
        "你想轉職前端，但沒有相關經驗",
        "先盤點自己的技能",
        "Start with what you already know.",
    ],
)
def test_supported_or_claimless_sentences_pass(claim: str) -> None:
    sources = ["2026 年起基本工資為每月 29,500 元", "想轉職前端但沒有相關經驗"]
    assert fact_checks.unsupported_claim(claim, sources) is None


# --------------------------------------------------------------------------- whole texts


def test_sentences_keep_their_end_marks() -> None:
    line = "先估算生活費。再開始學前端！最後投履歷"
    assert fact_checks.sentences(line) == ["先估算生活費。", "再開始學前端！", "最後投履歷"]
    assert "".join(fact_checks.sentences(line)) == line
    assert fact_checks.sentences("Save first. Then learn.") == ["Save first.", " Then learn."]


def test_check_text_drops_only_the_unsupported_sentences() -> None:
    sources = ["2026 年起基本工資調升為每月 29,500 元", "想轉職前端，工作三年"]
    text = (
        "結論：先存好生活費再轉職。\n"
        "- 〔1〕2026 年起基本工資為每月 29,500 元。前端新人月薪約 61,234 元。\n"
        "- 你已經工作 3 年，經驗可以轉移。\n"
        "- 先考 AWS 證照。\n"
        "2. 讀《原子習慣》。"
    )
    result = fact_checks.check_text(text, sources)
    assert result.text == (
        "結論：先存好生活費再轉職。\n- 〔1〕2026 年起基本工資為每月 29,500 元。\n- 你已經工作 3 年，經驗可以轉移。"
    )
    reasons = [why for _, why in result.dropped]
    assert len(result.dropped) == 3
    assert "61234" in reasons[0] and "aws" in reasons[1] and "原子習慣" in reasons[2]
    assert result.dropped[0][0] == "前端新人月薪約 61,234 元。"


def test_check_text_leaves_a_supported_text_as_it_is() -> None:
    text = "- 想轉職前端\n\n- 擔心收入：基本工資 29,500 元"
    result = fact_checks.check_text(text, ["基本工資每月 29,500 元", "想轉職前端"])
    assert result.text == text and result.dropped == []
