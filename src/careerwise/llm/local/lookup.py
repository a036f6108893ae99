"""Prompt-lookup drafts for the embedded model: when the answer starts to copy a run of the prompt (a
passage's sentence, a heading, a figure), the tokens that followed that run in the prompt are offered as a
draft, and llama.cpp checks them in one batch instead of generating them one at a time.

The sampling does not change: llama-cpp-python's ``generate`` samples every position from the model's
own distribution (at the request's temperature) and keeps a drafted token only where the sample equals
it, dropping the rest of the draft, so a draft decides how many tokens one step may check, never which
are written (a batched evaluation rounds differently in the last bits, which can tip a near tie). What
it costs: a rejected draft is a batch evaluated for nothing, and on a 2-core CPU a batch of a few tokens
costs about what generating them one by one does; so a draft is offered only after a run of at least
``MIN_NGRAM`` tokens that the prompt holds, from the most recent place it holds it, and only from the
request's own turns (the user's message and the tool's passages), never from the fixed system turn
(docs/local-model.md has the measurements).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from llama_cpp import Llama

# the run of generated tokens that must match the prompt before a draft is offered, longest tried first
MIN_NGRAM = 5
MAX_NGRAM = 8
# the tokens a draft offers; a longer draft saves more when the model copies and costs more when it does not
DRAFT_TOKENS = 6


class PromptLookup:
    """Drafts from the tokens at and after ``start`` (the first token of the request's own turns), as the
    callable llama-cpp-python's ``Llama.draft_model`` is called as.

    ``proposed`` counts the tokens offered, so that a caller can compare it with the tokens written."""

    def __init__(
        self,
        start: int,
        *,
        min_ngram: int = MIN_NGRAM,
        max_ngram: int = MAX_NGRAM,
        draft_tokens: int = DRAFT_TOKENS,
    ) -> None:
        if not 1 <= min_ngram <= max_ngram or draft_tokens < 1:
            raise ValueError("prompt lookup needs 1 <= min_ngram <= max_ngram and draft_tokens >= 1")
        self.start = max(start, 0)
        self.min_ngram, self.max_ngram, self.draft_tokens = min_ngram, max_ngram, draft_tokens
        self.proposed = 0

    def __call__(self, input_ids: npt.NDArray[np.intc], /, **_: Any) -> npt.NDArray[np.intc]:
        ids = np.asarray(input_ids)
        length = len(ids)
        for n in range(self.max_ngram, self.min_ngram - 1, -1):
            # the run must end before the last token, so that something follows it
            searched = ids[self.start : length - 1]
            if len(searched) < n:
                continue
            windows = np.lib.stride_tricks.sliding_window_view(searched, n)
            found = np.nonzero(np.all(windows == ids[length - n :], axis=1))[0]
            if len(found):
                begin = self.start + int(found[-1]) + n
                draft = ids[begin : min(begin + self.draft_tokens, length)]
                if len(draft):
                    self.proposed += len(draft)
                    return draft.astype(np.intc)
        return np.array([], dtype=np.intc)


@contextmanager
def drafting(llm: Llama, draft: PromptLookup | None, *, last_position: int) -> Iterator[None]:
    """Let ``llm.generate`` use ``draft`` inside the block, and only there; ``last_position`` is the
    highest position the block may evaluate (the prompt, the tokens it may write, a draft beyond them).

    Checking a draft needs the logits of every drafted position, which llama-cpp-python computes only when
    its ``_logits_all`` is set, and copies into ``scores`` by absolute position. Both are set for the block
    alone: the prompt's evaluation before it computes one position's logits as usual (computing them all
    would slow the reading, the embedded model's slowest part), and ``scores`` gets rows up to
    ``last_position`` only (a 4,096-token context would take 2.5 GB of address space for the packaged
    model's vocabulary), dropped afterwards, so the memory its written rows take is given back after
    every generation."""
    if draft is None:
        yield
        return
    saved = llm.scores
    rows = min(last_position + 1, llm.n_ctx())
    llm.scores = np.empty((rows, saved.shape[1]), dtype=np.single)
    llm.draft_model = draft  # type: ignore[assignment]  # generate() only calls it on the ids
    llm._logits_all = True
    try:
        yield
    finally:
        llm.draft_model = None
        llm._logits_all = False
        llm.scores = saved
