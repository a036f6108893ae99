"""The merge and reflection guard: a statement may assert only what the texts it rests on contain.

:func:`unsupported` returns why a statement cannot be shown, or None: every number and named token it
states must appear in its cited texts or the allowed ones (their passages, the user's own message),
read the same way as the chain's fact check (:mod:`careerwise.flows.fact_checks`), and it must share
some wording with what it cites (:func:`overlap`, at least :data:`MIN_OVERLAP`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from careerwise.flows import fact_checks
from careerwise.flows.deep_steps.keywords import EN_STOPWORDS

_LIST_MARK = re.compile(r"^\s*(?:\d{1,2}[.)、]\s+|[-*・•]\s*)")
_HAN = re.compile(r"[\u3400-\u9fff]")
_HAN_RUN = re.compile(r"[\u3400-\u9fff]+")
# the numbers and names a statement asserts, read the same way by the merge guard and the chain's check
numbers = fact_checks.numbers
named_tokens = fact_checks.named_tokens
_latin_words = fact_checks.latin_words


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def _bigrams(text: str) -> set[str]:
    grams: set[str] = set()
    for run in _HAN_RUN.findall(text):
        grams.update(run[i : i + 2] for i in range(len(run) - 1))
    return grams


def _content_words(text: str) -> set[str]:
    return {w.lower() for w, _ in _latin_words(text) if len(w) > 3 and w.lower() not in EN_STOPWORDS}


def overlap(statement: str, sources: Sequence[str]) -> float | None:
    """Share of the statement's Han bigrams (or English content words) found in ``sources``; None when
    the statement is too short to judge."""
    joined = _norm(" ".join(sources))
    s = _norm(statement)
    mine, theirs = (
        (_bigrams(s), _bigrams(joined)) if _HAN.search(s) else (_content_words(s), _content_words(joined))
    )
    if len(mine) < 4:
        return None
    return len(mine & theirs) / len(mine)


MIN_OVERLAP = 0.15


def unsupported(statement: str, cited: Sequence[str], allowed: Sequence[str]) -> str | None:
    """Why ``statement`` asserts something its sources do not contain, or None if it does not.

    Every number and named token must appear in ``cited`` + ``allowed`` (the cited findings, their
    agents' chunks, the user's own message); and the statement must share some wording with ``cited``.
    """
    body = _LIST_MARK.sub("", statement)
    problem = fact_checks.unsupported_claim(body, [*cited, *allowed])
    if problem is not None:
        return problem
    share = overlap(body, cited)
    if share is not None and share < MIN_OVERLAP:
        return f"little in common with what it cites ({share:.2f} < {MIN_OVERLAP})"
    return None
