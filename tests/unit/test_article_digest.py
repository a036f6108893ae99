"""The passages a slow provider reads: an article cut to a budget, rules and figures from any section."""

from __future__ import annotations

from careerwise.knowledge.lexical import tokenize
from careerwise.knowledge.passages import GAP, article_digest
from careerwise.llm.clean import estimate_tokens

SECTIONS = [
    ("", "轉職是很多人的煩惱。每個人的情況都不一樣。我們先從心態談起。"),
    ("心態", "不要急著辭職。先想清楚自己要什麼。很多人後悔太快離開。"),
    (
        "Summer 的「40 小時試學」",
        "先做一次「40 小時試學」，再決定要不要報名課程。零基礎到能面試約需 600 小時。",
    ),
    # chunks overlap at their edges: this one repeats the sentence before it
    ("Summer 的「40 小時試學」", "零基礎到能面試約需 600 小時。金融業轉過來起薪往往低兩到三成。"),
]


def digest(question: str, budget: int) -> str:
    return article_digest(SECTIONS, set(tokenize(question)), budget, tokenize=tokenize, count=estimate_tokens)


def test_the_rule_and_figures_of_a_later_section_reach_the_model_under_their_heading() -> None:
    out = digest("我想轉職當工程師，要先報名課程嗎？", 60)
    assert "## Summer 的「40 小時試學」" in out
    assert "「40 小時試學」" in out and "600 小時" in out
    assert out.count("零基礎到能面試約需 600 小時。") == 1  # the overlap is read once
    assert estimate_tokens(out.replace("## Summer 的「40 小時試學」", "")) <= 60


def test_sentences_that_match_nothing_are_not_added_to_fill_the_budget() -> None:
    out = digest("報名課程", 10_000)
    assert "每個人的情況都不一樣" not in out  # no shared word, no figure: never filler


def test_what_is_left_out_within_a_section_is_marked() -> None:
    out = digest("辭職會後悔嗎", 10_000)
    assert f"不要急著辭職。{GAP}很多人後悔太快離開。" in out


def test_a_tight_budget_still_keeps_the_single_best_sentence() -> None:
    out = digest("40 小時試學", 1)
    assert "「40 小時試學」" in out
