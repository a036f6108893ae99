"""knowledge/quotes.py: which sentences of the retrieved passages are quoted before a grounded answer."""

from __future__ import annotations

from types import SimpleNamespace
from typing import ClassVar

from careerwise.knowledge import quotes
from careerwise.knowledge.index import Hit, IndexedChunk
from careerwise.knowledge.lexical import tokenize
from careerwise.tracing.background import QUOTE_SIMILARITY, failure_counts

NEGOTIATION = quotes.Passage(
    text=(
        "## 第二步「錨」\n"
        "談判心理學裡，先出現的數字會變成後續討論的基準。"
        "我的做法是：把開口的數字設在滿意數字的 1.1 到 1.15 倍，我叫它「錨點加一成半」。"
        "天氣好的時候大家心情也好。"
    ),
    document_id="a-offer",
    title="談薪水不是喊價",
    strong=True,
)
WEAK = quotes.Passage(
    text="談薪水的時候要先準備好作品集，這句話在別的文章裡，分數很低。",
    document_id="b-weak",
    title="別的文章",
    strong=False,
)


def select(passages: list[quotes.Passage], question: str, **kw: int) -> list[quotes.Quote]:
    """By word overlap (the fallback scoring): what these tests can state without an embedder."""
    found = quotes.candidates(passages, chinese=True)
    return quotes.choose(found, terms=set(tokenize(question)), tokenize=tokenize, **kw)


def test_the_sentence_with_the_named_rule_and_figure_comes_first_verbatim() -> None:
    chosen = select([NEGOTIATION], "談薪水開口的數字要怎麼設？")
    assert chosen and chosen[0].document_id == "a-offer"
    assert "錨點加一成半" in chosen[0].text and "1.1 到 1.15 倍" in chosen[0].text
    # every quote is the article's own text (a cut is marked with the gap sign)
    for q in chosen:
        assert q.text.rstrip("…") in NEGOTIATION.text.replace("\n", "")


def test_a_sentence_sharing_no_word_with_the_question_and_headings_are_never_quoted() -> None:
    chosen = select([NEGOTIATION], "談薪水開口的數字要怎麼設？", limit=5)
    assert all("天氣" not in q.text and not q.text.startswith("#") for q in chosen)


def test_questions_and_quoted_reader_lines_are_not_her_advice() -> None:
    asking = quotes.Passage(
        text="「我這樣的薪水算正常嗎？」這是我當教練這些年最常被問的問題。很多人談薪水前不知道行情嗎？一定要先查清楚行情再開口談薪水。",
        document_id="a-asking",
        title="行情",
        strong=True,
    )
    texts = [c.sentence for c in quotes.candidates([asking], chinese=True)]
    assert texts == ["這是我當教練這些年最常被問的問題。", "一定要先查清楚行情再開口談薪水。"]


def test_weak_passages_give_no_quote_and_nothing_strong_gives_none() -> None:
    assert select([WEAK], "談薪水要準備什麼？") == []


def test_a_question_is_quoted_only_passages_in_its_own_language_unless_asked() -> None:
    english = quotes.Passage(
        text="Kevin, 24, finished a bootcamp and sent 60 applications with two interviews.",
        document_id="c-english",
        title="English article",
        strong=True,
    )
    assert quotes.candidates([NEGOTIATION], chinese=False) == []
    assert quotes.candidates([english], chinese=True) == []
    assert [c.passage for c in quotes.candidates([NEGOTIATION, english], chinese=False)] == [english]
    assert quotes.candidates([NEGOTIATION], chinese=False, cross_language=True)


def test_similarity_chooses_and_a_figure_or_named_rule_breaks_a_near_tie() -> None:
    found = quotes.candidates([NEGOTIATION], chinese=True)
    texts = [c.sentence for c in found]
    plain = texts.index("談判心理學裡，先出現的數字會變成後續討論的基準。")
    similarity = [0.5] * len(found)
    similarity[plain] = 0.53  # closer to the question, but the rule's sentence carries 「」 and figures
    (best,) = quotes.choose(found, similarity=similarity, limit=1)
    assert "錨點加一成半" in best.text
    similarity[plain] = 0.6
    (best,) = quotes.choose(found, similarity=similarity, limit=1)
    assert best.text.startswith("談判心理學裡")


def test_at_most_per_article_quotes_from_one_article() -> None:
    found = quotes.candidates([NEGOTIATION], chinese=True)
    assert len(quotes.choose(found, similarity=[0.5] * len(found), limit=3, per_article=1)) == 1


def test_a_long_sentence_is_cut_at_a_clause_and_marked() -> None:
    long = quotes.Passage(
        text="談薪水的第一步是先問清楚薪資帶，" + "再確認年終與獎金保障幾個月，" * 8 + "最後才談數字。",
        document_id="a-long",
        title="長句",
        strong=True,
    )
    (q,) = select([long], "談薪水第一步", limit=1, max_chars=40)
    assert len(q.text) <= 40 and q.text.endswith("…")


def test_render_names_the_article_and_is_empty_without_quotes() -> None:
    chosen = select([NEGOTIATION], "談薪水開口的數字要怎麼設？", limit=1)
    block = quotes.render(chosen, zh=True)
    assert block.startswith("**Summer 的文章怎麼說**") and "《談薪水不是喊價》" in block
    assert quotes.render([], zh=True) == ""


SECTIONS = [
    ("", "很多人拿到 offer 的第一反應是答應。"),
    ("第一步「探」：先弄清楚對方的預算範圍", "先問清楚三件事。"),
    ("第一步「探」：先弄清楚對方的預算範圍", "另外，Summer 有一條「24 小時原則」。"),
    ("第二步「錨」：第一個數字比目標高 10% 到 15%", "錨點加一成半。"),
    ("兩個案例", "小安是後端工程師。"),
    ("什麼時候該收手", "談判最多來回兩輪。"),
]


def test_the_outline_is_the_articles_headings_in_order_without_story_headings() -> None:
    got = quotes.outline(SECTIONS, document_id="a-neg", title="談薪水不是喊價", chinese=True)
    assert got is not None and got.title == "談薪水不是喊價"
    assert got.points == (
        "第一步「探」：先弄清楚對方的預算範圍",
        "第二步「錨」：第一個數字比目標高 10% 到 15%",
        "什麼時候該收手",
    )
    english = [("The 70/2 rule", "x"), ("Two client stories", "y"), ("If the answer is not yet", "z")]
    got = quotes.outline(english, document_id="a-promo", title="Asking", chinese=False)
    assert got is not None and got.points == ("The 70/2 rule", "If the answer is not yet")
    assert quotes.outline(english, document_id="a-promo", title="Asking", chinese=False, limit=1) is not None
    assert quotes.outline(SECTIONS, document_id="a-neg", title="t", chinese=True, limit=2).points == (
        "第一步「探」：先弄清楚對方的預算範圍",
        "第二步「錨」：第一個數字比目標高 10% 到 15%",
    )


def test_no_outline_in_another_language_or_with_fewer_than_two_headings() -> None:
    assert quotes.outline(SECTIONS, document_id="a-neg", title="t", chinese=False) is None
    assert quotes.outline(SECTIONS[:3], document_id="a-neg", title="t", chinese=True) is None


def test_render_puts_the_outline_before_the_quotes() -> None:
    got = quotes.outline(SECTIONS, document_id="a-neg", title="談薪水不是喊價", chinese=True)
    chosen = select([NEGOTIATION], "談薪水開口的數字要怎麼設？", limit=1)
    block = quotes.render(chosen, zh=True, outline=got)
    lines = block.splitlines()
    assert lines[:3] == [
        "**Summer 的文章怎麼說**",
        "《談薪水不是喊價》的重點：",
        "- 第一步「探」：先弄清楚對方的預算範圍",
    ]
    assert lines[-2].startswith("> 「") and block.endswith("\n\n")
    only = quotes.render([], zh=False, outline=quotes.Outline("a", "Asking", ("One", "Two")))
    assert only == "**What Summer's articles say**\nKey points of *Asking*:\n- One\n- Two\n\n"


def test_a_block_in_the_other_language_keeps_its_own_quotation_marks_and_says_it_is_the_original() -> None:
    chinese = quotes.outline(SECTIONS, document_id="a-neg", title="談薪水不是喊價", chinese=True)
    said = [quotes.Quote("錨點加一成半。", "a-neg", "談薪水不是喊價")]
    lines = quotes.render(said, zh=False, outline=chinese).rstrip("\n").splitlines()
    assert lines[0] == "**What Summer's articles say** (in her original Chinese)"
    assert lines[1] == "Key points of *談薪水不是喊價*:"
    assert lines[-1] == "> 「錨點加一成半。」——《談薪水不是喊價》"
    english = [quotes.Quote("Ask in a one-on-one, never in a review.", "a-promo", "Asking")]
    lines = quotes.render(english, zh=True).rstrip("\n").splitlines()
    assert lines == [
        "**Summer 的文章怎麼說**（英文原文）",
        '> "Ask in a one-on-one, never in a review." (Asking)',
    ]
    # in the reader's own language the label stays as it was
    assert quotes.render(said, zh=True).splitlines()[0] == "**Summer 的文章怎麼說**"


def test_a_long_sentence_offers_each_run_of_its_clauses_so_a_later_figure_can_be_quoted() -> None:
    long = quotes.Passage(
        text="In my experience with Taiwanese employers, a one-grade promotion typically comes with about "
        "8% to 15% on base, sometimes a higher bonus multiple, and foreign firms with pay bands may give "
        "more; if you are offered less than 5% with the new title, negotiate.",
        document_id="a-promotion",
        title="Promotion",
        strong=True,
    )
    found = quotes.candidates([long], chinese=False)
    assert [c.sentence for c in found] == [
        "In my experience with Taiwanese employers, a one-grade promotion typically comes with about 8% "
        "to 15% on base…",
        "…sometimes a higher bonus multiple, and foreign firms with pay bands may give more…",
        "…if you are offered less than 5% with the new title, negotiate.",
    ]
    assert all(len(c.sentence) <= 120 for c in found)
    # every run is the article's own words between its markers
    assert all(c.sentence.strip("…") in long.text for c in found)


def test_a_statement_keeps_its_semicolon_clauses_with_their_subject() -> None:
    text = "軟體工程：新鮮人約 4.2 萬到 5.5 萬元；三到五年經驗約 6.5 萬到 9 萬元；資深年薪 200 萬以上也有。下一句。"
    assert (
        quotes.statements(text)[0]
        == "軟體工程：新鮮人約 4.2 萬到 5.5 萬元；三到五年經驗約 6.5 萬到 9 萬元；資深年薪 200 萬以上也有。"
    )
    found = quotes.candidates([quotes.Passage(text, "salary", "Salary", True)], chinese=True)
    assert all(not c.sentence.startswith("三到五年") for c in found)


def test_a_list_number_inside_an_english_sentence_does_not_end_it() -> None:
    text = "I teach a three-sentence ask: 1. The claim comes first. It grew in 2025. Then wait."
    assert quotes.statements(text) == [
        "I teach a three-sentence ask: 1. The claim comes first.",
        " It grew in 2025.",
        " Then wait.",
    ]


def test_without_stories_no_client_story_or_story_section_is_a_candidate() -> None:
    story_section = quotes.Passage(
        text="她把開口的數字設在 1.15 倍，最後拿到的薪水比預期高。",
        document_id="a-offer",
        title="談薪水不是喊價",
        strong=True,
        story=True,
    )
    mixed = quotes.Passage(
        text=(
            "我的客戶小安月薪 4 萬，收到 5 萬的 offer。"
            "A client I'll call J. earned NT$80,000 a month. "
            "Her company countered with NT$92,000. "
            "In April he was promoted to a senior role. "
            "Vivian 31 歲，存款 60 萬元。"
            "開口的數字設在滿意數字的 1.1 到 1.15 倍。"
        ),
        document_id="a-offer",
        title="談薪水不是喊價",
        strong=True,
    )
    every = [c.sentence for c in quotes.candidates([story_section, mixed], chinese=True)]
    assert len(every) == 7  # by default a story is quotable (the answers' quotes)
    kept = [c.sentence for c in quotes.candidates([story_section, mixed], chinese=True, stories=False)]
    assert kept == ["開口的數字設在滿意數字的 1.1 到 1.15 倍。"]


class _Articles:
    """A knowledge base with two articles' sections; a sentence's similarity to the question is how many
    of the question's words it shares (the fallback's measure, so the test needs no embedder)."""

    SECTIONS: ClassVar[dict[str, list[tuple[str, str]]]] = {
        "a-offer": [
            ("", "當職涯教練這些年，我看過太多人少拿了一整年的調薪。"),
            ("客戶案例", "我的客戶小美開口要了 76,000 元，最後談到 74,000 元。"),
            ("第二步「錨」", "開口的數字設在滿意數字的 1.1 到 1.15 倍，我叫它「錨點加一成半」。"),
        ],
        "b-other": [("重點", "談薪水之前先查好行情，開口的數字才有根據。")],
    }

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.fusion = SimpleNamespace(min_dense=1.0, min_lexical=1e9)  # no hit clears the gate's bars

    def article_sections(self, document_id: str) -> list[tuple[str, str]]:
        return self.SECTIONS.get(document_id, [])

    async def similarities(self, asked: str, sentences: list[str]) -> list[float]:
        if self.fail:
            raise RuntimeError("embedder down")
        words = set(tokenize(asked))
        return [len(words & set(tokenize(s))) / 10 for s in sentences]


def _hit(document_id: str, section: str, text: str) -> Hit:
    return Hit(IndexedChunk(1, document_id, "談薪水不是喊價", section, "market_salary", text), 0.2, 0.1, 0.0)


async def test_from_articles_quotes_a_rule_from_a_section_no_hit_is_in() -> None:
    # the facet's hits are the introduction and the story: the rule with its figure is in neither
    kb = _Articles()
    intro, story = _Articles.SECTIONS["a-offer"][0], _Articles.SECTIONS["a-offer"][1]
    hits = [_hit("a-offer", *intro), _hit("a-offer", *story)]
    asked = "開口的數字要比滿意數字高多少"
    from_hits = await quotes.from_hits(kb, hits, asked, chinese=True, gate=False, stories=False)  # type: ignore[arg-type]
    assert all("1.15" not in q.text for q in from_hits)
    chosen = await quotes.from_articles(kb, hits, asked, chinese=True, limit=2, stories=False)  # type: ignore[arg-type]
    assert chosen[0].text.startswith("開口的數字設在滿意數字的 1.1 到 1.15 倍")
    assert chosen[0].section == "第二步「錨」" and chosen[0].document_id == "a-offer"
    assert all("76,000" not in q.text for q in chosen)  # the story stays out without stories
    # only the hits' articles: b-other is never read
    assert {q.document_id for q in chosen} == {"a-offer"}


async def test_from_articles_falls_back_to_word_overlap_and_counts_the_failure() -> None:
    before = failure_counts().get(QUOTE_SIMILARITY, 0)
    hits = [_hit("a-offer", "", "當職涯教練這些年")]
    chosen = await quotes.from_articles(
        _Articles(fail=True), hits, "開口的數字要比滿意數字高多少", chinese=True
    )  # type: ignore[arg-type]
    assert chosen and "1.15" in chosen[0].text
    assert failure_counts().get(QUOTE_SIMILARITY, 0) == before + 1


def test_a_quotation_opened_and_not_closed_in_the_statement_is_not_quoted() -> None:
    passage = quotes.Passage(
        text=(
            "有位讀者寫信給我：「我每天早上醒來就覺得累，週日晚上開始胃痛。可是我又說不出哪裡不好。」"
            "我的建議是先做四週紀錄，每天寫下讓你累的三件事。"
        ),
        document_id="a-burnout",
        title="倦怠",
        strong=True,
    )
    found = [c.sentence for c in quotes.candidates([passage], chinese=True)]
    assert not any(s.startswith("可是我又") for s in found)  # closes a quotation opened before it
    assert "我的建議是先做四週紀錄，每天寫下讓你累的三件事。" in found
    opened = quotes.Passage(
        text="「我每天早上醒來就覺得累，週日晚上開始胃痛。", document_id="x", title="t", strong=True
    )
    assert quotes.candidates([opened], chinese=True) == []
