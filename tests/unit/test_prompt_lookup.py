"""Prompt-lookup drafts (``llm/local/lookup.py``): where a draft comes from, and that the Llama's settings
are changed for the generation alone."""

from __future__ import annotations

import numpy as np
import pytest

from careerwise.llm.local.lookup import PromptLookup, drafting


def ids(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.intc)


def test_a_run_of_the_prompt_offers_what_followed_it() -> None:
    lookup = PromptLookup(0, min_ngram=3, max_ngram=4, draft_tokens=3)
    #           the passage: 5 6 7 8 9 10 | the answer so far ends with 5 6 7
    draft = lookup(ids(1, 5, 6, 7, 8, 9, 10, 2, 5, 6, 7))
    assert draft.tolist() == [8, 9, 10] and lookup.proposed == 3


def test_no_draft_without_a_long_enough_run() -> None:
    lookup = PromptLookup(0, min_ngram=3, max_ngram=4, draft_tokens=3)
    assert lookup(ids(1, 5, 6, 7, 8, 2, 6, 7)).tolist() == []  # only two tokens match
    assert lookup.proposed == 0


def test_drafts_never_come_from_before_the_start() -> None:
    prompt = [5, 6, 7, 8, 9]  # the fixed system turn holds the run
    assert PromptLookup(5, min_ngram=3)(ids(*prompt, 1, 2, 5, 6, 7)).tolist() == []
    assert PromptLookup(0, min_ngram=3)(ids(*prompt, 1, 2, 5, 6, 7)).tolist()[:2] == [8, 9]


def test_the_longest_run_and_its_latest_place_win() -> None:
    lookup = PromptLookup(0, min_ngram=2, max_ngram=3, draft_tokens=2)
    # 6 7 is followed by 30 early on and by 40 later; 5 6 7 (longer) only by 50
    assert lookup(ids(6, 7, 30, 6, 7, 40, 5, 6, 7, 50, 0, 5, 6, 7)).tolist() == [50, 0]
    assert lookup(ids(6, 7, 30, 6, 7, 40, 0, 9, 6, 7)).tolist() == [40, 0]


def test_a_draft_stops_at_the_end_of_what_was_written() -> None:
    lookup = PromptLookup(0, min_ngram=2, max_ngram=2, draft_tokens=8)
    assert lookup(ids(1, 2, 3, 1, 2)).tolist() == [3, 1, 2]


@pytest.mark.parametrize(("low", "high", "tokens"), [(0, 2, 4), (3, 2, 4), (2, 3, 0)])
def test_impossible_settings_are_refused(low: int, high: int, tokens: int) -> None:
    with pytest.raises(ValueError, match="prompt lookup"):
        PromptLookup(0, min_ngram=low, max_ngram=high, draft_tokens=tokens)


class FakeLlama:
    """What ``drafting`` touches: the scores array, the context size and the two generation settings."""

    def __init__(self) -> None:
        self.scores = np.zeros((4, 10), dtype=np.single)
        self.draft_model: object = None
        self._logits_all = False

    def n_ctx(self) -> int:
        return 64


def test_drafting_sets_the_llama_up_for_the_block_alone_even_when_it_fails() -> None:
    llm, lookup = FakeLlama(), PromptLookup(0)
    saved = llm.scores
    with pytest.raises(RuntimeError), drafting(llm, lookup, last_position=40):
        assert llm.draft_model is lookup and llm._logits_all
        assert llm.scores.shape == (41, 10)  # a row for every position the generation may evaluate
        raise RuntimeError("generation failed")
    assert llm.draft_model is None and not llm._logits_all and llm.scores is saved


def test_without_a_draft_nothing_changes() -> None:
    llm = FakeLlama()
    saved = llm.scores
    with drafting(llm, None, last_position=40):
        assert llm.draft_model is None and not llm._logits_all and llm.scores is saved


def test_the_scores_never_outgrow_the_context() -> None:
    llm = FakeLlama()
    with drafting(llm, PromptLookup(0), last_position=500):
        assert llm.scores.shape == (64, 10)
