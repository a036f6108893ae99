"""Evaluating a prompt on the embedded model in slices, so that a stop request is honoured between them,
with the first system turn taken from (and saved to) the prefix store."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from llama_cpp import Llama

    from careerwise.llm.prefix_store import PrefixStore

PREFILL_SLICE = 64


def prefill(
    llm: Llama,
    tokens: Sequence[int],
    stop: threading.Event,
    *,
    prefix_len: int = 0,
    store: PrefixStore | None = None,
    evaluated: list[int] | None = None,
) -> bool:
    """Evaluate all but the last prompt token in slices, checking ``stop`` between slices.

    ``Llama.generate`` evaluates the new part of the prompt in one uninterruptible call, which takes
    seconds on two cores. After this, generate() finds all but the last token in the KV cache (its prefix
    matching) and evaluates just that one. The cached prefix of the previous request is kept. With a
    ``store``, the first ``prefix_len`` tokens (the first system turn) come from its file when this
    process has not evaluated them yet, and are saved there after they are evaluated here.
    Returns False if ``stop`` was set. ``evaluated`` gets the count of tokens evaluated here (not those
    found in the KV cache or loaded from the store): what a reading speed is measured on.
    """
    head = list(tokens[:-1])
    cached = llm.input_ids[: min(llm.n_tokens, len(head))]
    common = 0
    for have, want in zip(cached, head, strict=False):
        if have != want:
            break
        common += 1
    save_at: int | None = None
    if store is not None and common < prefix_len <= len(head):
        if store.load(llm, head[:prefix_len]):
            common = prefix_len
        else:
            common = min(common, llm.n_tokens)  # a failed load leaves nothing trusted (n_tokens 0)
            save_at = prefix_len
    llm.n_tokens = common  # eval() drops the KV cells from here on
    start = common
    while start < len(head):
        if stop.is_set():
            return False
        end = min(start + PREFILL_SLICE, len(head))
        if save_at is not None and start < save_at < end:
            end = save_at  # the state is saved with exactly the prefix evaluated
        llm.eval(head[start:end])
        if evaluated is not None:
            evaluated.append(end - start)
        start = end
        if save_at is not None and start == save_at and store is not None:
            store.save(llm, head[:save_at])
            save_at = None
    return not stop.is_set()
