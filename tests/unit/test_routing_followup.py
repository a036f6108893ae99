"""The history rule (routing/followup.py, ``CascadeRouter.route_in_context``) with a keyword embedder:
which messages count as follow-ups, and which earlier turn's intent they keep."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from careerwise.knowledge.cache import normalize_query
from careerwise.knowledge.embeddings import CachedEmbedder, Matrix
from careerwise.routing import INTENTS, CascadeRouter, ContextualRouter, followup
from careerwise.routing.semantic import SemanticClassifier
from careerwise.routing.thresholds import Thresholds, _threshold_for

# each intent's axis, set by a keyword; a text with none of them is equally far from all (unsure)
KEYWORDS = {
    "greeting": ("hello", "今天好冷", "天氣"),
    "career": ("面試", "薪水", "interview", "salary", "轉職", "前端"),
    "resume": ("portfolio", "作品集"),
    "booking": ("時段", "slot"),
    "offtopic": ("食譜", "recipe"),
}
EXAMPLES = {
    "greeting": ("hello there", "今天好冷", "天氣不錯"),
    "career": ("面試準備", "salary talk", "轉職前端", "interview tips"),
    "resume": ("my portfolio", "看作品集"),
    "booking": ("還有時段嗎", "open slot"),
    "offtopic": ("滷肉食譜", "cake recipe"),
}


class KeywordEmbedder:
    name = "keywords"
    dim = len(INTENTS)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        rows = []
        for text in texts:
            row = np.array([any(k in text for k in KEYWORDS[i]) for i in INTENTS], dtype=np.float32)
            rows.append(row if row.any() else np.ones(self.dim, np.float32))
        return np.vstack(rows)

    embed_passages = embed_queries


@pytest.fixture
def router() -> CascadeRouter:
    embedder = KeywordEmbedder()
    digest = SemanticClassifier(embedder, EXAMPLES, k=1).digest
    bars = Thresholds(dict.fromkeys(INTENTS, 0.5), 0.1, embedder.name, digest, k=1)
    return CascadeRouter(embedder, None, bars, examples=EXAMPLES, no_llm=True)


@pytest.mark.parametrize(
    ("message", "cue"),
    [
        ("那薪水呢？", "那"),
        ("薪水呢", "呢"),
        ("what about in Taipei?", "what about"),
        ("第二個", "第二個"),
        ("the second one", "the second one"),
        ("為什麼？", "為什麼"),
        ("今天好冷喔", None),
        ("三年", None),
        ("那個 我想問", None),  # 那個 as a filler, not 「那…」 as "then"
    ],
)
def test_follow_up_markers(message: str, cue: str | None) -> None:
    assert followup.marker(message) == cue


def test_only_short_messages_are_candidates() -> None:
    assert followup.candidate("那台北呢？") and followup.candidate("what about in Taipei?")
    assert not followup.candidate("我在銀行做了五年櫃員，最近在想要不要轉去做數位行銷")
    assert not followup.candidate("what about moving to Taipei for a better salary and a shorter commute")


def test_the_router_offers_history_to_the_engine(router: CascadeRouter) -> None:
    assert isinstance(router, ContextualRouter)


async def test_short_follow_up_keeps_the_previous_career_intent(router: CascadeRouter) -> None:
    alone = await router.route("那台北呢？")
    assert alone.layer == "embedding-guess"  # unsure on its own: with an LLM it would be asked
    decision = await router.route_in_context("那台北呢？", ["面試要怎麼準備"])
    assert (decision.intent, decision.tier, decision.layer) == ("career", "simple", "history")
    assert any("«那»" in r and "面試要怎麼準備" in r for r in decision.reasons)
    assert decision.top is not None  # the layer-2 scores stay in the record
    assert router.counts["history"] == 1


async def test_follow_up_skips_small_talk_to_the_last_real_turn(router: CascadeRouter) -> None:
    previous = ["前端還是後端比較好", "謝謝", "hello"]
    decision = await router.route_in_context("what about in Taipei?", previous)
    assert (decision.intent, decision.layer) == ("career", "history")


async def test_follow_up_keeps_a_resume_intent(router: CascadeRouter) -> None:
    decision = await router.route_in_context("第二段呢？", ["幫我看作品集"])
    assert (decision.intent, decision.tier, decision.layer) == ("resume", None, "history")


async def test_a_follow_up_with_a_decision_word_is_complex(router: CascadeRouter) -> None:
    decision = await router.route_in_context("那第二個值得嗎？", ["轉職前端要準備什麼"])
    assert (decision.intent, decision.tier, decision.layer) == ("career", "complex", "history")


async def test_what_the_message_says_wins(router: CascadeRouter) -> None:
    # a rule: thanks stays thanks, a booking stays a booking
    thanks = await router.route_in_context("謝謝", ["面試要怎麼準備"])
    assert (thanks.intent, thanks.layer) == ("greeting", "rules")
    booking = await router.route_in_context("那我想預約諮詢", ["面試要怎麼準備"])
    assert (booking.intent, booking.layer) == ("booking", "rules")
    # a confident embedding: small talk without a follow-up cue stays small talk
    chat = await router.route_in_context("今天好冷喔", ["面試要怎麼準備"])
    assert (chat.intent, chat.layer) == ("greeting", "embedding")
    # ... and a confident other intent is kept
    slot = await router.route_in_context("slot 呢", ["面試要怎麼準備"])
    assert (slot.intent, slot.layer) == ("booking", "embedding")


async def test_small_talk_with_a_follow_up_cue_follows_the_conversation(router: CascadeRouter) -> None:
    decision = await router.route_in_context("那天氣呢？", ["面試要怎麼準備"])
    assert (decision.intent, decision.layer) == ("career", "history")


async def test_no_usable_history_routes_as_before(router: CascadeRouter) -> None:
    assert (await router.route_in_context("那台北呢？", [])).layer == "embedding-guess"
    only_small_talk = await router.route_in_context("那台北呢？", ["hello", "謝謝"])
    assert only_small_talk.layer == "embedding-guess"
    long_message = "那如果我想在台北找一份遠端的工作，同時又想兼顧家庭，應該從哪裡開始找起"
    assert (await router.route_in_context(long_message, ["面試要怎麼準備"])).layer != "history"


async def test_an_unsure_longer_earlier_turn_counts_as_career(router: CascadeRouter) -> None:
    earlier = "我最近在想要不要離開現在的公司去別的地方發展看看"
    decision = await router.route_in_context("第二個", [earlier])
    assert (decision.intent, decision.layer) == ("career", "history")


def test_fitted_threshold_never_exceeds_the_score_it_was_cut_at() -> None:
    threshold, accepted = _threshold_for([(0.40837, True)] * 3, 0.98)
    assert threshold <= 0.40837 and accepted == 3


async def test_the_vector_routing_computed_is_reused_by_the_next_lookup_of_the_message() -> None:
    """The router shares the knowledge base's query cache: the answer-cache probe and a search of the
    same message (both keyed by ``normalize_query``) find the vector routing already computed."""
    shared = CachedEmbedder(KeywordEmbedder())
    digest = SemanticClassifier(shared, EXAMPLES, k=1).digest
    bars = Thresholds(dict.fromkeys(INTENTS, 0.5), 0.1, shared.name, digest, k=1)
    router = CascadeRouter(shared, None, bars, examples=EXAMPLES, no_llm=True)
    await router.prepare()
    message = "  面試\n要怎麼  準備 "
    await router.route(message)
    hits = shared.hits
    shared.embed_queries([normalize_query(message)])
    assert shared.hits == hits + 1


async def test_an_earlier_turn_sure_only_before_its_vetoes_counts_as_career(router: CascadeRouter) -> None:
    # the keyword embedder is sure that 「幫主管訂會議室時段」 is booking, but its booking words are about
    # someone else's room (a veto): its own routing would not call it booking, nor may a follow-up's
    earlier = await router.route("幫主管訂會議室時段，要訂多久比較好")
    assert earlier.intent == "career"
    decision = await router.route_in_context("那第二個呢？", ["幫主管訂會議室時段，要訂多久比較好"])
    assert (decision.intent, decision.layer) == ("career", "history")
