"""The embedded model's choice between a tool call and an answer, read at the first token as the two
branches' shares of the model's probability (decision 0025)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from llama_cpp import Llama

BRANCH_TOP = 256  # the first token's likeliest candidates weighed for the branch choice; the rest is noise


def branch_share(llm: Llama, scores: Any) -> tuple[float, Any, Any]:
    """The call branch's share of the first token's probability, over the likeliest tokens that may open
    a branch (``llm/grammar.py``: ``{`` opens a call; text opens with anything but ``{``, ``<``, a
    backtick or white space), and the ids of each branch's opening tokens among them."""
    top = np.argpartition(scores, -BRANCH_TOP)[-BRANCH_TOP:]
    logits = scores[top].astype(np.float64)
    probs = np.exp(logits - logits.max())
    firsts = [(llm.detokenize([int(t)], special=False)[:1] or b"\x00")[0] for t in top]
    opens_call = np.array([b == 0x7B for b in firsts])
    opens_text = np.array([b > 0x20 and b not in b"{<`" for b in firsts])
    total = probs[opens_call].sum() + probs[opens_text].sum()
    share = float(probs[opens_call].sum() / total) if total > 0 else 0.0
    return share, top[opens_call], top[opens_text]


def open_text(llm: Llama, scores: Any) -> float:
    """Hold the first token to the text branch (as ``branch_share`` defines it) by setting every other
    token's score to -inf, in place; returns the share the call branch had. The answer round uses it:
    tools are described there but may not be called, and a call would only be refused."""
    share, _, texts = branch_share(llm, scores)
    kept = scores[texts].copy()
    scores[:] = -np.inf
    scores[texts] = kept
    return share
