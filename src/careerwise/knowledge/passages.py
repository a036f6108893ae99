"""Passages cut to a token budget: the sentences most related to the question, in their own order.

A slow provider reads every passage token before it writes the answer (about a hundred tokens a second
on two CPU cores), so phase 3 on the embedded model gets a few hundred tokens, not whole chunks.

* ``chunk`` scope (the default), :func:`share` / :func:`focus`: each passage keeps its best sentences
  (lexical overlap with the question, the model's query and the user's message as BM25 tokens; figures,
  named rules and the passage's first line count extra), in their original order, with "…" where
  sentences were left out. A passage always keeps at least its best sentence; the budget is shared
  evenly, and what one passage does not use goes to the next.
* ``article`` scope, :func:`article_digest`: the search's hits choose the articles, and each article
  gives its best sentences from anywhere in it, under their section headings.

docs/local-model.md has what each delivered and what the embedded model made of it.
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


def _score(index: int, sentence: str, terms: set[str], tokenize: Callable[[str], list[str]]) -> int:
    """Overlap with the question (characters of shared tokens), plus what makes a sentence worth its
    tokens to a coach's answer: a figure or a named rule (digits, 「」), and being the passage's first
    line (its heading or lead, where the articles state their rule)."""
    overlap = sum(len(t) for t in set(tokenize(sentence)) & terms)
    return overlap + 2 * bool(_SPECIFIC.search(sentence)) + 3 * (index == 0)


def focus(
    text: str,
    terms: set[str],
    budget: int,
    *,
    tokenize: Callable[[str], list[str]],
    count: Callable[[str], int],
) -> str:
    """``text`` cut to at most ``budget`` tokens (or its single best sentence, if that alone is more):
    its sentences ranked by :func:`_score`, kept in text order; a sentence that scores nothing is
    never added just to fill the budget."""
    if count(text) <= budget:
        return text
    parts = sentences(text)
    ranked = sorted((-_score(i, s, terms, tokenize), i) for i, s in enumerate(parts))
    keep: set[int] = set()
    used = 0
    for negative, i in ranked:
        cost = count(parts[i])
        if keep and (negative == 0 or used + cost > budget):
            continue
        keep.add(i)
        used += cost
    out: list[str] = []
    last = -1
    for i in sorted(keep):
        if i != last + 1:
            out.append(GAP)
        out.append(parts[i])
        last = i
    if last != len(parts) - 1:
        out.append(GAP)
    return "".join(out).strip()


def share(
    texts: Sequence[str],
    terms: set[str],
    budget: int,
    *,
    tokenize: Callable[[str], list[str]],
    count: Callable[[str], int],
) -> list[str]:
    """Each of ``texts`` focused within an even share of ``budget``; what one leaves goes to the rest."""
    out: list[str] = []
    left = budget
    for n, text in enumerate(texts):
        quota = left // (len(texts) - n)
        cut = focus(text, terms, quota, tokenize=tokenize, count=count)
        out.append(cut)
        left = max(0, left - count(cut))
    return out


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
