"""Finishing a tool call on the embedded model once its first token chose the call branch: the call's
opening (``grammar.call_opening``) is read as prompt in one batch, and the first argument's value is
written without the grammar, whose check of every token costs about as much again as the token itself on
a CPU; a value that does not close a valid call is written again under the rest-of-call grammar."""

from __future__ import annotations

import codecs
import json
import logging
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from careerwise.llm.grammar import CallEnd

if TYPE_CHECKING:
    from llama_cpp import Llama
    from llama_cpp.llama_grammar import LlamaGrammar

log = logging.getLogger("careerwise.llm.local")


def finish_call(
    llm: Llama,
    head: list[int],
    forced: str,
    *,
    temperature: float,
    budget: int,
    stop: threading.Event,
    stop_ids: Collection[int],
    grammars: Sequence[LlamaGrammar | None],
    sampling: Mapping[str, Any],
    emit: Callable[[Any], None],
) -> tuple[str, int]:
    """The rest of a call whose first token (the end of ``head``) chose the call branch: ``forced`` (the
    characters up to the first argument's value) is read as prompt, then the value is generated under
    each of ``grammars`` in turn (None: free) until one closes the call and parses as one. The call's text
    is emitted once it is whole. Returns the finish reason and the tokens generated."""
    opened = [*head, *llm.tokenize(forced.encode("utf-8"), add_bos=False, special=False)]
    generated = 0
    call = forced
    for grammar in grammars:
        end = CallEnd()
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        written: list[str] = []
        tokens = llm.generate(opened, temp=temperature, grammar=grammar, **sampling)
        try:
            for _ in range(budget):
                token = next(tokens)
                if stop.is_set():
                    return "stop", generated
                if token in stop_ids:
                    break
                generated += 1
                written.append(end.feed(decoder.decode(llm.detokenize([token], special=False))))
                if end.closed:
                    break
        finally:
            tokens.close()
        call = forced + "".join(written)
        if end.closed and is_call(call, head_text=llm.detokenize(head[-1:], special=False)):
            emit(call)
            return "tool_calls", generated
        log.info("local: the call's arguments did not close a valid call%s: %r",
                 "; written again under the grammar" if grammar is None else "", call[:200])  # fmt: skip
    emit(call)  # under the grammar it can only be cut short by the budget: the detector sees that
    return "length", generated


def is_call(text: str, *, head_text: bytes) -> bool:
    """Whether the call's first token's text plus ``text`` parse as ``{"name": …, "arguments": {…}}``."""
    try:
        call = json.loads(head_text.decode("utf-8", errors="replace") + text)
    except ValueError:
        return False
    return (
        isinstance(call, dict)
        and isinstance(call.get("name"), str)
        and isinstance(call.get("arguments"), dict)
    )
