"""What a compact facet says, and how it is checked (decision 0016, with 0026 for the findings).

**Findings are Summer's own sentences.** A facet's findings are the sentences of its passages that best
match the facet's query (its angle and the user's situation), verbatim, chosen as the answers' quotes are
(``knowledge/quotes.py``: her statements in the question's language, no questions or stories told in
someone else's words, a figure or a named rule preferred, each cut only at a clause boundary). The
small model's paraphrased findings restated the user's question or said what its passages did not, and
the check removed them; writing them was also most of each facet call's output. Nothing generated can
be wrong in a verbatim sentence, so findings need no check.

**The model writes the insight and the risk level** (:data:`INSIGHT_SCHEMA`, at most
:data:`INSIGHT_MAX_TOKENS`): one concrete action that applies the passages to the user's situation.
An insight is advice in the model's own words, held, as the chain's advice step is, to the numbers and
names of its passages and the user's message (:func:`check_items` with ``advice``).

**When no sentence can be chosen** (the passages are in another language than the question), the facet
call writes findings too (``AGENT_SCHEMA`` in ``compact.py``), and each finding must pass the merge
guard's test against the passages (:func:`check_items`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from careerwise.flows import deep_steps, fact_checks
from careerwise.knowledge.index import Hit
from careerwise.knowledge.quotes import Outline, Quote

# how many findings and insights a compact facet keeps
COMPACT_FINDINGS = 2
COMPACT_INSIGHTS = 1
# Summer's own sentences shown as a facet's findings: no call writes them (the facet's insight call only
# reads them), and a third carries a rule the first two often miss (docs/deep-answers.md)
SUMMER_FINDINGS = 3
# an item longer than this keeps its first whole sentences within it (never a cut sentence): a small
# model ignores the prompt's length limit, and a long item costs the reader what it cost the model
ITEM_MAX_CHARS = 80
# The longest item the reply's JSON schema allows. The bound is loose on purpose: a sentence cut by a
# tight one is carried on by the model into the next item (``uncut`` joins them again).
ITEM_BOUND = 100
ITEM_SCHEMA = {"type": "string", "minLength": 4, "maxLength": ITEM_BOUND}
# A facet call that writes only the insight: one item and the risk level. The item's bound is the
# prompt's length limit with some room (a Chinese insight of 40 characters, an English one of 25 words):
# a small model writes on to whatever bound the schema allows, and every character is generation time.
INSIGHT_MAX_TOKENS = 120
INSIGHT_BOUND = {True: 60, False: 160}  # by whether the question is in Chinese


def insight_schema(zh: bool) -> dict[str, object]:
    """The insight call's reply as a JSON schema (a grammar on the embedded model)."""
    item = {"type": "string", "minLength": 4, "maxLength": INSIGHT_BOUND[zh]}
    return {
        "type": "object",
        "properties": {
            "insights": {"type": "array", "items": item, "minItems": 1, "maxItems": COMPACT_INSIGHTS},
            "risk_level": {"type": "string", "enum": ["low", "medium", "high"]},
        },
        "required": ["insights", "risk_level"],
        "additionalProperties": False,
    }


_LIST_MARK = re.compile(r"^\s*(?:\d{1,2}[.)、]\s+|[-*・•]\s*)")


@dataclass
class CheckedItems:
    kept: list[str]
    dropped: list[tuple[str, str]]


def check_items(
    items: list[str], hits: list[Hit], message: str, *, advice: bool = False, read: Sequence[str] = ()
) -> CheckedItems:
    """The merge guard's test for each item, with the facet's passages (titles and section headings
    included) as what it cites: every number and name in it appears in the passages or the user's
    message, and a finding, which states a fact, shares some wording with the passages themselves (the
    small model echoes the user's question as a "finding": that is not a fact from the knowledge base).
    An insight (``advice``) is a recommendation in the model's own words: like the chain's advice step,
    it is held to the numbers and names only, and it must not be the user's message said back (most of
    its wording from the message: the small model restates the question as its "next step"). Repeated
    items are kept once. ``read`` is what else the call read as its sources (Summer's findings, with
    headings of her article that are in no hit)."""
    chunks = [f"{h.chunk.title}\n{h.chunk.section or ''}\n{h.chunk.text}" for h in hits] + list(read)
    kept: list[str] = []
    dropped: list[tuple[str, str]] = []
    for item in items:
        text = shortened(item.strip())
        if not text or text in kept:
            continue
        problem = (
            fact_checks.unsupported_claim(_LIST_MARK.sub("", text), [*chunks, message])
            or _echo(text, message)
            if advice
            else deep_steps.unsupported(text, chunks, [message])
        )
        if problem is None:
            kept.append(text)
        else:
            dropped.append((text, problem))
    return CheckedItems(kept, dropped)


# an insight with at least this share of its wording from the user's message says the message back
ECHO_SHARE = 0.7


def _echo(text: str, message: str) -> str | None:
    share = deep_steps.overlap(_LIST_MARK.sub("", text), [message])
    if share is not None and share >= ECHO_SHARE:
        return f"restates the user's message ({share:.2f} of its wording)"
    return None


def shortened(item: str, limit: int = ITEM_MAX_CHARS) -> str:
    """``item`` when it fits ``limit`` characters, else its first whole sentences within it (at least
    the first sentence): shorter, and never cut mid-sentence."""
    if len(item) <= limit:
        return item
    kept = ""
    for sentence in fact_checks.sentences(item):
        if kept and len(kept) + len(sentence) > limit:
            break
        kept += sentence
    return kept.strip()


_LATIN_END = re.compile(r"[A-Za-z0-9,;:]$")
_LATIN_START = re.compile(r"^[A-Za-z0-9]")
_SENTENCE_END = ("。", "！", "？", ".", "!", "?", "」")


def uncut(items: list[str], bound: int = ITEM_BOUND) -> list[str]:
    """Items as the model meant them: an item the schema's length bound cut (it is ``bound`` long) is
    joined with the item after it, where the model carried the sentence on; an item still cut with
    nothing after it keeps its whole sentences, or is marked "…" where it was cut when it has none."""
    out: list[str] = []
    n = 0
    while n < len(items):
        item = items[n].strip()
        while len(items[n]) >= bound and not item.endswith(_SENTENCE_END) and n + 1 < len(items):
            n += 1
            nxt = items[n].strip()
            space = " " if _LATIN_END.search(item) and _LATIN_START.search(nxt) else ""
            item = f"{item}{space}{nxt}"
        if len(items[n]) >= bound and not item.endswith(_SENTENCE_END):
            whole = "".join(fact_checks.sentences(item)[:-1]).strip()
            item = whole or item.rstrip("，、,;:： ") + "…"
        out.append(item)
        n += 1
    return out


def headed(said: list[Quote], zh: bool) -> list[str]:
    """Summer's sentences as findings, each after the heading of the section it is from, the heading
    once for sentences in a row from one section: her headings name the rule a sentence belongs to
    (「錢：Summer 的 6-12-18 轉職存款原則」), which the sentence alone often does not. Plain text, no
    Markdown: a section is shown as text until the report replaces it."""
    out: list[str] = []
    last = ""
    for quote in said:
        heading = quote.section if quote.section != last else ""
        last = quote.section
        if not heading:
            out.append(quote.text)
        else:
            out.append(f"【{heading}】{quote.text}" if zh else f"{heading} — {quote.text}")
    return out


def outline_line(outline: Outline | None, said: list[Quote], zh: bool) -> str | None:
    """The rest of the article's method at a glance: its section headings (``quotes.outline``) that
    the findings do not already show, as one sentence under the article's title; None when none is
    left."""
    if outline is None:
        return None
    shown = {q.section for q in said}
    points = [p for p in outline.points if p not in shown]
    if not points:
        return None
    # ended like a sentence, as the findings before it are: a list item without an end mark is read as
    # cut off by the report guards
    if zh:
        return f"《{outline.title}》的重點：{'；'.join(points)}。"
    return f"Key points of “{outline.title}”: {'; '.join(points)}."
