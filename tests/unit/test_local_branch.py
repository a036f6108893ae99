"""The embedded model's first-token choice between a tool call and an answer, read as the two branches'
shares of the model's probability (``llm/local/branch.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from careerwise.llm.local import branch

# the vocabulary of a stand-in model: what each token id reads as
VOCAB = ['{"', "{", "To", "你", " the", "\n", "<tool_call>", "`", "Sum", "好"]


class Vocab:
    def detokenize(self, tokens: list[int], special: bool = False) -> bytes:
        return "".join(VOCAB[t] for t in tokens).encode("utf-8")


def scores(probs: dict[str, float]) -> Any:
    out = np.full(len(VOCAB), -30.0, dtype=np.float32)
    for piece, p in probs.items():
        out[VOCAB.index(piece)] = np.log(p)
    return out


@pytest.fixture(autouse=True)
def small_top(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(branch, "BRANCH_TOP", len(VOCAB))


def test_the_call_share_sums_each_branch_over_its_opening_tokens() -> None:
    # 0.2 + 0.1 open a call; 0.3 + 0.2 + 0.1 open text; white space, a tag and a fence open neither
    probs = {
        '{"': 0.2,
        "{": 0.1,
        "To": 0.3,
        "你": 0.2,
        "好": 0.1,
        " the": 0.05,
        "\n": 0.03,
        "<tool_call>": 0.02,
    }
    share, calls, texts = branch.branch_share(Vocab(), scores(probs))  # type: ignore[arg-type]
    assert share == pytest.approx(0.3 / 0.9, abs=1e-3)
    assert sorted(VOCAB[i] for i in calls) == ["{", '{"']
    assert sorted(VOCAB[i] for i in texts) == sorted(["To", "你", "好", "Sum"])  # not the fence


def test_a_call_that_no_single_token_favours_can_still_hold_the_larger_share() -> None:
    # the likeliest single token opens text (0.3), yet the two call openers hold 0.55 of the choice
    probs = {'{"': 0.28, "{": 0.27, "To": 0.3, "你": 0.15}
    share, _, _ = branch.branch_share(Vocab(), scores(probs))  # type: ignore[arg-type]
    assert share == pytest.approx(0.55, abs=1e-3)


def test_the_answer_round_opens_with_text_whatever_the_model_prefers() -> None:
    # the model would open a call (0.7), a tag or white space; only text openers keep their scores
    logits = scores({'{"': 0.6, "{": 0.1, "To": 0.15, "你": 0.1, "<tool_call>": 0.03, "\n": 0.02})
    before = logits.copy()
    share = branch.open_text(Vocab(), logits)  # type: ignore[arg-type]
    assert share == pytest.approx(0.7 / 0.95, abs=1e-3)
    open_text = {i for i, piece in enumerate(VOCAB) if piece in ("To", "你", "Sum", "好")}
    assert all(logits[i] == before[i] for i in open_text)  # their order, hence the sampling, unchanged
    assert all(np.isneginf(logits[i]) for i in range(len(VOCAB)) if i not in open_text)
