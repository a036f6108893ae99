"""The history rule: a short follow-up keeps the intent of the turn it follows.

Alone, 「那薪水呢？」, "what about in Taipei?" or 「第二個」 say nothing about an intent: the rules do not
match them and the embedding layer is unsure (or, worse, sure it is small talk), so they would reach
the LLM classifier, which sees the message alone, or become a greeting. With the conversation's last
user turns they are plainly a continuation. ``CascadeRouter.route_in_context`` uses these helpers:

- a message is a *candidate* when no rule matched it and it is short (``MAX_UNITS`` or fewer, a leading
  greeting or 請問 not counted);
- a candidate that the embedding layer confidently gives a non-greeting intent keeps that intent (what
  the message says wins over what came before); one it confidently calls small talk stays small talk
  unless it carries a follow-up *marker* (那…呢, what about, 第二個, …); every other candidate inherits
  the intent of the most recent earlier user turn that had one (see ``CascadeRouter``).
"""

from __future__ import annotations

import re

from careerwise.routing._text import normalise, strip_opener, units

MAX_UNITS = 12  # longer messages carry their own intent
# with a follow-up cue, layer 2's intent replaces the conversation's only when it leads its runner-up by
# this much: a cue is evidence of a continuation, so a bare pass over the threshold is not enough
CUE_MARGIN = 0.05
TURNS = 3  # earlier user turns looked at, most recent first

_ORDINAL = r"(?:第\s*[一二三四五六七八九十兩\d]+|最後一?|前面那?|上面那?|剛剛那?|剛才那?)\s*(?:個|種|項|點|家|份|條|間|條路|個選項|個方向)"
_MARKER_ZH = re.compile(
    rf"^那(?!個\s*我)|呢\s*[?？]?\s*$|{_ORDINAL}|^(?:還有|其他|另外)(?:的)?呢|^如果(?:是|我)|^換成|^改成|^同樣|"
    r"也(?:是|一樣)嗎|^為什麼|^怎麼說|^然後呢|^例如|舉(?:個|一個)?例|具體|詳細一?點|再多說|多說一點|展開說"
)
_MARKER_EN = re.compile(
    r"^(?:and|but|so|also|then|what about|how about|what if|and if|same|why|really|which one|"
    r"the (?:first|second|third|last|other) one|more|elaborate|example|for example|e\.g\.)\b"
    r"|\bwhat about\b|\bhow about\b|\b(?:tell me more|go on|say more|more details?|in more detail)\b"
    r"|\b(?:option|choice|number) (?:one|two|three|\d)\b|\b(?:first|second|third|last) one\b",
    re.I,
)


def candidate(message: str) -> bool:
    """Short enough to be a follow-up (the caller has already checked that no rule matched)."""
    return units(strip_opener(normalise(message))) <= MAX_UNITS


def marker(message: str) -> str | None:
    """The follow-up marker in ``message`` (「那…呢」, "what about", 「第二個」…), or None."""
    text = strip_opener(normalise(message))
    found = _MARKER_ZH.search(text) or _MARKER_EN.search(text)
    return found.group(0).strip() if found else None
