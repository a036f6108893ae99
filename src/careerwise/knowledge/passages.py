"""Passages cut to a token budget: an article's sentences most related to the question, in their order.

A slow provider reads every passage token before it writes the answer (about a hundred tokens a second
on two CPU cores), so phase 3 on the embedded model gets a few hundred tokens, not whole chunks. The
search's hits choose the articles; each article then gives its best sentences from anywhere in it, under
their section headings (:func:`article_digest`). A chunk alone often misses the rule or figure that
answers the question, which sits in another section of the same article (docs/local-model.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

GAP = "…"
# a sentence ends after Chinese or Latin end punctuation, or a line break (list items, headings)
_END = re.compile(r"(?<=[。！？!?；;\n])|(?<=[a-z0-9)][.])(?=\s)")


def sentences(text: str) -> list[str]:
    return [piece for piece in _END.split(text) if piece.strip()]


_SPECIFIC = re.compile(r"\d|[「『“\"]")
_HEADING = "## "


def _specific(sentence: str) -> int:
    """Figures and named rules a sentence carries (capped): what a coach's answer must keep verbatim."""
    return min(len(_SPECIFIC.findall(sentence)), 3)


def article_digest(
    sections: Sequence[tuple[str, str]],
    terms: set[str],
    budget: int,
    *,
    tokenize: Callable[[str], list[str]],
    count: Callable[[str], int],
) -> str:
    """One article cut to at most ``budget`` tokens (or its single best sentence, if that alone is more).

    ``sections`` are the article's chunks in order, as (section heading, text). Chunks overlap at their
    edges, so a sentence seen already is not counted twice. Sentences are ranked by their overlap with
    ``terms`` plus two points per figure or named rule (up to three), and kept in the article's order;
    each kept sentence's section heading is kept above it (the articles name their rules in headings),
    and "…" marks what was left out within a section. A sentence that scores nothing is never added just
    to fill the budget; headings come on top of it."""
    units: list[tuple[str, str]] = []  # (heading, sentence)
    seen: set[str] = set()
    for heading, text in sections:
        for sentence in sentences(text):
            key = sentence.strip()
            if key in seen:
                continue
            seen.add(key)
            units.append((heading, sentence))
    ranked = sorted(
        (-(sum(len(t) for t in set(tokenize(s)) & terms) + 2 * _specific(s)), i)
        for i, (_, s) in enumerate(units)
    )
    keep: set[int] = set()
    used = 0
    for negative, i in ranked:
        cost = count(units[i][1])
        if keep and (negative == 0 or used + cost > budget):
            continue
        keep.add(i)
        used += cost
    out: list[str] = []
    heading_shown: str | None = None
    last = -1
    for i in sorted(keep):
        heading, sentence = units[i]
        if heading and heading != heading_shown:
            out.append(("\n" if out else "") + _HEADING + heading + "\n")
            heading_shown = heading
        elif i != last + 1:
            out.append(GAP)
        out.append(sentence)
        last = i
    return "".join(out).strip()
