"""The compact design's pure parts: the design rule as flows read it, and item shortening."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from careerwise.flows.base import FlowOptions
from careerwise.flows.compact import design_of
from careerwise.flows.compact_items import (
    ITEM_BOUND,
    ITEM_MAX_CHARS,
    check_items,
    headed,
    outline_line,
    shortened,
    uncut,
)
from careerwise.flows.compact_report import summer_findings
from careerwise.knowledge.index import Hit, IndexedChunk
from careerwise.knowledge.quotes import Outline, Quote
from careerwise.knowledge.service import KnowledgeBase
from careerwise.llm.profile import ProviderProfile


@dataclass
class Provider:
    profile: ProviderProfile


def test_the_setting_forces_a_design_and_auto_follows_the_profile_rule() -> None:
    slow = Provider(ProviderProfile(slow=True, gen_tokens_per_s=8.0, concurrency=1))
    fast = Provider(ProviderProfile(gen_tokens_per_s=200.0, concurrency=8))
    assert design_of(FlowOptions(deep_design="auto"), slow) == (
        "compact",
        "deep design: compact (provider profile: 8 tokens/s, slow, concurrency 1)",
    )
    assert design_of(FlowOptions(deep_design="auto"), fast)[0] == "full"
    assert design_of(FlowOptions(deep_design="full"), slow) == (
        "full",
        "deep design: full (deep_design=full)",
    )
    assert design_of(FlowOptions(deep_design="compact"), fast)[0] == "compact"
    # a fast writer that serves one request at a time still gets the compact design
    single = Provider(ProviderProfile(gen_tokens_per_s=200.0, concurrency=1))
    assert design_of(FlowOptions(), single)[0] == "compact"


def test_a_long_item_keeps_whole_sentences_only() -> None:
    short = "每年採用 1 深 2 寬的學習規則"
    assert shortened(short) == short
    first = "轉職前先評估可轉移的技能，並列出目前技能的資產與負債。"
    long = first + "接著選一個方向深耕一年，每季檢查一次進度，" * 4 + "最後再決定要不要換工作。"
    out = shortened(long)
    assert out == first and len(out) <= ITEM_MAX_CHARS
    # one sentence longer than the limit is kept whole, never cut in the middle
    one = "這是一個" + "非常" * 60 + "長的句子。"
    assert shortened(one) == one


def test_an_item_the_length_bound_cut_is_joined_with_its_continuation() -> None:
    cut = ("Kevin, a backend engineer in Taipei, applied to twelve companies and followed the " * 2)[
        :ITEM_BOUND
    ]
    cut = cut.rstrip() + "e" * (ITEM_BOUND - len(cut.rstrip()))
    assert len(cut) == ITEM_BOUND
    joined = uncut([cut, "plan: 110 problems in 8 weeks.", "A second finding."])
    assert joined == [f"{cut} plan: 110 problems in 8 weeks.", "A second finding."]
    # Chinese is joined without a space
    zh = ("小安是後端工程師，" * 12)[:ITEM_BOUND]
    assert uncut([zh, "月薪六萬八千元。"]) == [zh + "月薪六萬八千元。"]


def test_a_cut_item_with_nothing_after_it_keeps_whole_sentences_or_is_marked() -> None:
    two = ("Save twelve months of costs first. " + "Then take the course and keep going on with" * 3)[
        :ITEM_BOUND
    ]
    assert uncut([two]) == ["Save twelve months of costs first."]
    one = ("Save twelve months of costs before you quit and take the course and" * 2)[:ITEM_BOUND]
    assert uncut([one]) == [one.rstrip(" ,") + "…"]
    # an item that only reaches the bound but ends a sentence, or a short one, is left as it is
    ends = ("x" * (ITEM_BOUND - 1)) + "."
    assert uncut([ends, "short"]) == [ends, "short"]


def test_summers_sentences_follow_their_sections_heading_once_per_run() -> None:
    said = [
        Quote("先把每月必要支出算出來。", "c-switch", "轉職檢核表", "錢：6-12-18 原則"),
        Quote("多數人需要 12 個月。", "c-switch", "轉職檢核表", "錢：6-12-18 原則"),
        Quote("每週 15 小時。", "c-switch", "轉職檢核表", "時間：600 小時門檻"),
        Quote("我的看法是先試學。", "c-switch", "轉職檢核表", ""),
    ]
    assert headed(said, zh=True) == [
        "【錢：6-12-18 原則】先把每月必要支出算出來。",
        "多數人需要 12 個月。",
        "【時間：600 小時門檻】每週 15 小時。",
        "我的看法是先試學。",
    ]
    english = [Quote("Ask in a one-on-one.", "a-promo", "Promotion", "Timing and the ask")]
    assert headed(english, zh=False) == ["Timing and the ask — Ask in a one-on-one."]


def test_the_outline_line_names_only_the_headings_the_findings_do_not_show() -> None:
    outline = Outline("c-switch", "轉職檢核表", ("錢：6-12-18 原則", "時間：600 小時門檻", "五題檢核"))
    said = [Quote("先把每月必要支出算出來。", "c-switch", "轉職檢核表", "錢：6-12-18 原則")]
    assert outline_line(outline, said, zh=True) == "《轉職檢核表》的重點：時間：600 小時門檻；五題檢核。"
    english = Outline("a-promo", "Asking for a promotion", ("The 70/2 rule", "Timing"))
    assert (
        outline_line(english, [], zh=False)
        == "Key points of “Asking for a promotion”: The 70/2 rule; Timing."
    )
    every = [Quote("…", "a-promo", "Asking for a promotion", p) for p in english.points]
    assert outline_line(english, every, zh=False) is None and outline_line(None, said, zh=True) is None


def test_an_insight_that_says_the_users_message_back_is_dropped() -> None:
    message = (
        "手上有兩個 offer：A 公司月薪 6 萬 5、保障 14 個月；B 公司月薪 7 萬 2、保障 12 個月。該選哪一個？"
    )
    checked = check_items(
        [
            "A 公司月薪 6 萬 5、保障 14 個月，B 公司月薪 7 萬 2、保障 12 個月。",
            "先把兩家的年薪都換算成總額再比較。",
        ],
        [],
        message,
        advice=True,
    )
    assert checked.kept == ["先把兩家的年薪都換算成總額再比較。"]
    assert len(checked.dropped) == 1 and checked.dropped[0][1].startswith("restates the user's message")


class _Articles:
    """What ``summer_findings`` reads of the knowledge base: an article's sections in order."""

    def __init__(self, sections: list[tuple[str, str]]) -> None:
        self.sections = sections

    def article_sections(self, document_id: str) -> list[tuple[str, str]]:
        return self.sections


def test_summer_findings_are_the_sentences_then_the_other_headings_or_the_headings_alone() -> None:
    article = _Articles(
        [("", "開場"), ("錢：6-12-18 原則", "…"), ("時間：600 小時門檻", "…"), ("兩個案例", "…")]
    )
    chunk = IndexedChunk(1, "c-switch", "轉職檢核表", "錢：6-12-18 原則", "growth_skills", "…")
    hits = [Hit(chunk, 1.0, 0.5, 10.0)]
    said = [Quote("先把每月必要支出算出來。", "c-switch", "轉職檢核表", "錢：6-12-18 原則")]
    kb = cast(KnowledgeBase, article)
    assert summer_findings(kb, hits, said, zh=True) == [
        "【錢：6-12-18 原則】先把每月必要支出算出來。",
        "《轉職檢核表》的重點：時間：600 小時門檻。",
    ]
    # every sentence told a client's story: her method's headings alone (the case heading left out)
    assert summer_findings(kb, hits, [], zh=True) == [
        "《轉職檢核表》的重點：錢：6-12-18 原則；時間：600 小時門檻。"
    ]
    # an article in another language than the question gives nothing: the model writes the findings
    assert summer_findings(kb, hits, [], zh=False) == [] and summer_findings(kb, [], said, zh=True) == []
