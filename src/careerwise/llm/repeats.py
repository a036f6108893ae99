"""Stops an answer that starts over: a small model at low temperature can fall into a loop and write the
same sentence, or the same paragraph, again and again until its token limit.

:class:`RepeatGuard` sits between a round's text and the user. Text streams through unchanged, except a
sentence that begins like one already written in this answer: that one is held until it either differs
(then it is shown, and streaming goes on) or ends as a copy of an earlier sentence of at least
``min_chars`` characters. A copy is never shown; the guard reports ``looping`` and the caller stops the
round there, so the user neither reads the loop nor waits for it. The first sentence is never held, since
nothing before it can be copied; a held sentence start is a few characters at most in a normal answer.
"""

from __future__ import annotations

import re

# where a sentence or a list item ends
_ENDS = frozenset("。！？!?\n")
# list markers, numbering, emphasis and spaces: what makes two copies of a sentence look different
_MARKER = re.compile(r"^(?:[-•>#]|\d+[.、)])+")
_NOISE = re.compile(r"[\s*]+")


def _norm(sentence: str) -> str:
    return _MARKER.sub("", _NOISE.sub("", sentence))


class RepeatGuard:
    def __init__(self, min_chars: int = 16) -> None:
        self._min = min_chars
        self._seen: set[str] = set()  # normalised sentences already written, at least min_chars long
        self._current = ""  # the sentence being written, raw
        self._held = ""  # its part not shown yet
        self.looping = False

    def push(self, text: str) -> str:
        """Add streamed text; returns what may be shown now. After ``looping`` turns true, nothing."""
        out: list[str] = []
        for ch in text:
            if self.looping:
                break
            self._current += ch
            self._held += ch
            end = ch in _ENDS or (ch == " " and self._current[-2:-1] == ".")
            norm = _norm(self._current)
            if end:
                if len(norm) >= self._min and norm in self._seen:
                    self.looping = True
                    self._held = ""
                    break
                if len(norm) >= self._min:
                    self._seen.add(norm)
                out.append(self._held)
                self._held = self._current = ""
            elif not any(s.startswith(norm) for s in self._seen):
                out.append(self._held)  # not the start of an earlier sentence: nothing to wait for
                self._held = ""
        return "".join(out)

    def flush(self) -> str:
        """At the end of the round: the held rest of an unfinished sentence (not a whole copy)."""
        out, self._held = ("" if self.looping else self._held), ""
        return out
