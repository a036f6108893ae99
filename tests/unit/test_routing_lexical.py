"""Layer 2's lexical first stage (``routing/lexical.py``): its features, scores and calibration points,
and that its packaged thresholds belong to the packaged examples."""

from __future__ import annotations

import numpy as np
import pytest

from careerwise.routing import INTENTS, load_examples, load_thresholds
from careerwise.routing.evaluation import fit_lexical, load_messages
from careerwise.routing.lexical import NAME, LexicalClassifier, features, lexical_classifier
from careerwise.routing.thresholds import thresholds_path

EXAMPLES = {
    "greeting": ("你好", "謝謝你", "hello there", "thanks a lot"),
    "career": ("面試要怎麼準備", "怎麼談薪水", "how do I prepare for interviews", "how to negotiate salary"),
    "resume": ("幫我看履歷", "幫我改履歷", "review my resume", "can you fix my resume"),
    "booking": ("我想預約諮詢", "預約可以改期嗎", "book a session", "can I book a call"),
    "offtopic": ("寫一首詩", "明天天氣如何", "write a poem", "what's the weather tomorrow"),
}


def test_features_cover_chinese_bigrams_and_english_words_and_trigrams() -> None:
    f = features("幫我看ＲＥＳＵＭＥ 履歷 pls")
    # NFKC and lower case: full-width letters are the ASCII word
    assert f["w:resume"] == 1 and f["g:<re"] == 1 and f["g:me>"] == 1
    assert f["c:履"] == 1 and f["b:履歷"] == 1 and f["b:幫我"] == 1
    assert "b:看履" not in f  # a space separates two runs of Han characters: no bigram across it
    assert f["p:resume pls"] == 0 and f["w:pls"] == 1  # a Han run between them: not neighbours
    assert features("how to how to")["p:how to"] == 2


def test_a_typo_still_shares_most_of_its_trigrams() -> None:
    right, typo = features("resume"), features("resme")
    shared = {k for k in right if k.startswith("g:")} & {k for k in typo if k.startswith("g:")}
    assert {"g:<re", "g:res"} <= shared


def test_scores_rank_the_intent_whose_examples_share_the_words() -> None:
    lexical = LexicalClassifier(EXAMPLES)
    for message, intent in [
        ("可以幫我看一下履歷嗎", "resume"),
        ("I want to book a session next week", "booking"),
        ("面試怎麼準備比較好", "career"),
        ("thanks!!", "greeting"),
    ]:
        (s,) = lexical.score([message])
        assert s.best[0] == intent, (message, s.scores)
        assert set(s.scores) == set(INTENTS) and all(-1e-6 <= v <= 1 + 1e-6 for v in s.scores.values())


def test_a_message_with_no_known_feature_scores_zero_everywhere() -> None:
    (s,) = LexicalClassifier(EXAMPLES).score(["😀😀"])
    assert s.scores == dict.fromkeys(INTENTS, 0.0) and s.margin == 0.0


def test_held_out_examples_never_see_themselves() -> None:
    lexical = LexicalClassifier(EXAMPLES, k=1)
    points = lexical.held_out_examples()
    assert len(points) == sum(len(v) for v in EXAMPLES.values())
    # with k=1 an example scored with itself would reach 1.0 for its own intent
    assert all(s.scores[gold] < 0.999 for s, gold in points)
    assert [gold for _, gold in points] == [name for name in INTENTS for _ in EXAMPLES[name]]


def test_the_classifier_is_built_once_per_examples() -> None:
    assert lexical_classifier(EXAMPLES) is lexical_classifier(EXAMPLES)
    assert lexical_classifier(EXAMPLES) is not lexical_classifier(EXAMPLES, k=1)


def test_the_digest_follows_the_examples() -> None:
    changed = {**EXAMPLES, "greeting": (*EXAMPLES["greeting"], "哈囉")}
    assert LexicalClassifier(EXAMPLES).digest != LexicalClassifier(changed).digest


def test_packaged_lexical_thresholds_were_fitted_on_the_packaged_examples() -> None:
    path = thresholds_path(NAME)
    assert path.name == "thresholds-lexical.json"
    bars = load_thresholds(path)
    assert (bars.model, bars.examples_digest) == (NAME, LexicalClassifier(load_examples()).digest)
    assert set(bars.thresholds) == set(INTENTS) and bars.report["calibration_examples"] > 0


def test_refitting_reproduces_the_packaged_lexical_thresholds() -> None:
    """The calibration is deterministic: a change to the examples, the features or the labelled set
    without `careerwise route --fit` fails here."""
    packaged = load_thresholds(thresholds_path(NAME))
    fitted = fit_lexical(load_messages(), target_precision=packaged.target_precision, k=packaged.k)
    assert fitted.margin == packaged.margin
    for name in INTENTS:
        assert fitted.thresholds[name] == pytest.approx(packaged.thresholds[name], abs=1e-4), name


def test_fit_lexical_is_stricter_than_the_training_messages_alone() -> None:
    """The examples left out one at a time are what keeps the bars up: fitted on the training messages
    only, every intent's bar would sit at the lowest score it saw."""
    bars = load_thresholds(thresholds_path(NAME))
    assert bars.margin > 0 and np.mean(list(bars.thresholds.values())) > 0.15
