"""Drops an answer's opening that restates the instruction instead of answering.

After a search, the request ends with an instruction on how to answer from the passages. A small model
sometimes begins by saying it back (「好的，我明白了。以下是根據 Summer 的說法、名稱和數字回答使用者的問題：」)
before the answer proper. :class:`EchoGuard` sits between such a round's text and the user and holds each
opening sentence until it ends: a bare acknowledgement, or a sentence most of whose word pairs come from
the instruction, is not shown. The first sentence that is neither is shown, and from then on text passes
through untouched, so at most one sentence is ever held, and an answer that opens with its content is
delayed by nothing but that sentence's own characters.
"""

from __future__ import annotations

import itertools
import re

# where an opening sentence ends; a colon too, since an echo usually introduces the answer
_ENDS = frozenset("。！？!?\n：:")
# a held sentence this long without an end is not a preamble: it is shown
_MAX_HELD = 120
# at most this many opening sentences are dropped
_MAX_DROPPED = 2
# the share of a sentence's word pairs found in the instruction that makes it an echo
ECHO_SHARE = 0.4
_TOKEN = re.compile(r"[\u4e00-\u9fff]|[a-z0-9']+")
_ACKNOWLEDGEMENTS = frozenset(
    {
        "好",
        "好的",
        "好喔",
        "了解",
        "明白",
        "明白了",
        "我明白了",
        "我了解了",
        "沒問題",
        "當然",
        "當然可以",
        "ok",
        "okay",
        "sure",
        "gotit",
        "understood",
        "certainly",
        "ofcourse",
        "alright",
    }
)


_BY_LENGTH = sorted(_ACKNOWLEDGEMENTS, key=len, reverse=True)


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def _pairs(tokens: list[str]) -> set[tuple[str, str]]:
    return set(itertools.pairwise(tokens))


def _acknowledgement(words: str) -> bool:
    """Whether ``words`` (tokens joined) is nothing but acknowledgements, such as 「好的，我明白了」."""
    while words:
        ack = next((a for a in _BY_LENGTH if words.startswith(a)), None)
        if ack is None:
            return False
        words = words[len(ack) :]
    return True


class EchoGuard:
    def __init__(self, instruction: str) -> None:
        self._instruction = _pairs(_tokens(instruction))
        self._open = bool(self._instruction)  # still looking at opening sentences
        self._held = ""
        self.dropped: list[str] = []

    def _drop(self, sentence: str) -> bool:
        tokens = _tokens(sentence)
        if not tokens:
            return False  # white space or punctuation alone: shown as it is
        if _acknowledgement("".join(tokens)):
            return True
        pairs = _pairs(tokens)
        return len(pairs) >= 4 and len(pairs & self._instruction) / len(pairs) >= ECHO_SHARE

    def push(self, text: str) -> str:
        """Add streamed text; returns what may be shown now."""
        if not self._open:
            return text
        out: list[str] = []
        for n, ch in enumerate(text):
            self._held += ch
            if ch not in _ENDS and len(self._held) < _MAX_HELD:
                continue
            sentence, self._held = self._held, ""
            if ch in _ENDS and len(self.dropped) < _MAX_DROPPED and self._drop(sentence):
                self.dropped.append(sentence)
                continue
            if self.dropped and not sentence.strip():
                continue  # the white space between a dropped opening and the answer
            out.append(sentence)
            if sentence.strip():
                self._open = False
                out.append(text[n + 1 :])
                break
        return "".join(out)

    def flush(self) -> str:
        """At the end of the round: the held rest of an unfinished opening sentence."""
        out, self._held = self._held, ""
        return out
