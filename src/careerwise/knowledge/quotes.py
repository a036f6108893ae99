"""Summer's own words for an answer: the retrieved passages' sentences that best answer the question.

A small model that reads Summer's passages still paraphrases them into generic advice and drops her
named rules and figures. The quotes keep those: a few sentences, taken verbatim from the passages the
search returned, shown to the user with the article's title next to the model's answer (decision 0023).
Nothing is generated: a quote is a sentence of the article as it stands, cut only at a clause boundary
and marked with "…" where it is cut.

Selection (:func:`candidates`, then :func:`choose`):

* only passages whose own dense or BM25 score clears the relevance gate's bars (the bars the coverage
  note uses), so a question the articles do not answer gets no quote;
* her statements only: no question, no line that is wholly someone else's quoted words;
* in one language: ``chinese`` passages only, or passages without Chinese (the search tool asks for the
  question's language first, and for the other when the question's language offers nothing);
* a sentence's score is its embedding's cosine similarity with the question's, plus a bonus for a
  figure or a named rule (digits, 「」), which is what a small model drops when it paraphrases; without
  similarities (no embedder) its overlap with the question's words, and a sentence sharing no word with
  the question is not quoted;
* at most ``limit`` sentences, at most ``per_article`` from one article, each at most ``max_chars``.

Beside the sentences, :func:`outline` lists the section headings of the article that answers best. Each
article names its rules and steps in its headings (「第二步「錨」：第一個數字比目標高 10% 到 15%」), so the
headings are her method at a glance, in her words; a heading that only announces client stories or cases
says nothing of the method and is left out.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from careerwise.knowledge.fence import head_line
from careerwise.knowledge.lexical import tokenize
from careerwise.knowledge.passages import GAP
from careerwise.tracing.background import QUOTE_SIMILARITY, count_failure

if TYPE_CHECKING:
    from careerwise.knowledge.index import Hit
    from careerwise.knowledge.service import KnowledgeBase

log = logging.getLogger(__name__)

_SPECIFIC = re.compile(r"\d|[「『]")
_CJK = re.compile(r"[\u4e00-\u9fff]")
# list markers, heading marks, emphasis and the closing bracket of a quoted question that the sentence
# split leaves at a sentence's start: noise inside a quotation
_LEAD = re.compile(r"^\s*(?:#+\s*|[-*•]\s+|\d+[.、)]\s*|>\s*|[」』]\s*)")
_CLAUSE = re.compile(r"(?<=[，、：；,;:])")
_OPEN_MARKS, _CLOSE_MARKS = "「『“", "」』”"


def _quoting(depth: int, statement: str) -> int:
    """How many quotations are open after ``statement`` when ``depth`` were open before it: 「」, 『』 and
    “” nest; a straight double quote opens or closes one by turns (odd depth: open)."""
    for ch in statement:
        if ch in _OPEN_MARKS:
            depth += 2
        elif ch in _CLOSE_MARKS:
            depth = max(0, depth - 2)
        elif ch == '"':
            depth += -1 if depth % 2 else 1
    return depth


# where a quotable statement ends: as passages' sentences do, except at a semicolon (its clauses share
# the statement's subject, as 「軟體工程：新鮮人約…；三到五年經驗約…」 does) and after a list number inside a
# sentence ("a three-sentence ask: 1. The claim …"), which starts an item rather than ending a sentence
_STATEMENT_END = re.compile(r"(?<=[。！？!?\n])|(?<=[a-z)][.])(?=\s)|(?<=[a-z0-9)][a-z0-9][.])(?=\s)")

# headings that announce stories or examples rather than a rule or a step
_STORIES = re.compile(r"案例|故事|\b(?:case|cases|stor(?:y|ies)|examples?)\b", re.IGNORECASE)
# a sentence of a client's story or a counter-example: someone else's details (an age, a salary, what
# they did), which read as facts about the user when they are shown as a finding for the user
# (one about a he or a she goes on with a story told before it: her advice speaks to 你 / you, and a whole
# article's sections, which a deep facet reads, tell stories outside their story sections too)
_STORY_SENTENCE = re.compile(
    r"客戶|化名|反例|學員|輔導過|[Cc]lients?\b|I'll call|I coached|I worked with|"
    r"[A-Z][a-z]+[，,]?\s?\d{2}\s?歲|\b[A-Z][a-z]+, \d{2}\b|\b[A-Z]\.\s|^(?:He|She|His|Her)\b|\b(?:he|she)\b|[他她]"
)


@dataclass(frozen=True)
class Quote:
    text: str
    document_id: str
    title: str
    section: str = ""  # the heading of the article's section it is from ("" before the first heading)

    @property
    def chinese(self) -> bool:
        return bool(_CJK.search(self.text))


@dataclass(frozen=True)
class Outline:
    """One article's method at a glance: its section headings in order, with the article's title."""

    document_id: str
    title: str
    points: tuple[str, ...]

    @property
    def chinese(self) -> bool:
        return any(_CJK.search(point) for point in self.points)


@dataclass(frozen=True)
class Passage:
    """What a quote can come from: a search hit's text, its article, and whether the hit is strong
    enough to be quoted (its own score clears the relevance gate's bars)."""

    text: str
    document_id: str
    title: str
    strong: bool
    story: bool = False  # the passage is under a heading that announces stories or cases
    section: str = ""


def _clean(sentence: str) -> str:
    return _LEAD.sub("", sentence.strip()).replace("**", "").strip()


def _shorten(sentence: str, max_chars: int) -> str:
    """``sentence`` within ``max_chars``: whole clauses from its start, then "…"; a first clause longer
    than that is cut at the limit."""
    if len(sentence) <= max_chars:
        return sentence
    out = ""
    for clause in _CLAUSE.split(sentence):
        if len(out) + len(clause) > max_chars - 1:
            break
        out += clause
    if not out:
        out = sentence[: max_chars - 1]
    return out.rstrip("，、：；,;: ") + GAP


def statements(text: str) -> list[str]:
    """``text`` cut where a statement ends (``_STATEMENT_END``): the units a quote is chosen from."""
    return [piece for piece in _STATEMENT_END.split(text) if piece.strip()]


@dataclass(frozen=True)
class Candidate:
    sentence: str
    rank: int  # the passage's rank in the search
    passage: Passage


def _windows(sentence: str, max_chars: int) -> list[str]:
    """``sentence`` itself when it fits in ``max_chars``, else runs of its whole clauses that fit, each
    marked with "…" where the sentence goes on: a long sentence's figure is often in a later clause, and a
    quote cut after its first clauses would drop it."""
    if len(sentence) <= max_chars:
        return [sentence]
    runs: list[str] = []
    run = ""
    for clause in _CLAUSE.split(sentence):
        if run and len(run) + len(clause) > max_chars - 2:
            runs.append(run)
            run = ""
        run += clause
    runs.append(run)
    out = []
    for n, run in enumerate(runs):
        text = run.strip().rstrip("，、：；,;: ") if n < len(runs) - 1 else run.strip()
        out.append((GAP if n else "") + text + (GAP if n < len(runs) - 1 else ""))
    return out


def candidates(
    passages: Sequence[Passage],
    *,
    chinese: bool,
    cross_language: bool = False,
    max_chars: int = 120,
    stories: bool = True,
) -> list[Candidate]:
    """The sentences a quote may be taken from: of strong passages, in the question's language, neither
    headings nor fragments, each once; a sentence longer than ``max_chars`` as runs of its clauses.
    Without ``stories``, no sentence of a story passage and none that tells a client's story."""
    out: list[Candidate] = []
    seen: set[str] = set()
    for rank, passage in enumerate(passages):
        if not passage.strong or (passage.story and not stories):
            continue
        if not cross_language and chinese != bool(_CJK.search(passage.text)):
            continue  # another language than the question's: the reader may not read it
        depth = 0
        for raw in statements(passage.text):
            # the marks a statement opens with close the quotation the statement before it opened
            body = raw.lstrip()
            while body and (body[0] in _CLOSE_MARKS or (body[0] == '"' and depth % 2)):
                depth = max(0, depth - (1 if body[0] == '"' else 2))
                body = body[1:]
            inside, depth = depth, _quoting(depth, body)
            if inside or depth:
                continue  # part of someone's words that the article quotes over several statements
            sentence = _clean(raw)
            if len(sentence) < 12 or raw.lstrip().startswith("#") or sentence in seen:
                continue  # a heading or a fragment says nothing on its own
            if sentence.endswith(("？", "?")) or (sentence[0] in '「『"' and sentence[-1] in '」』"'):
                continue  # a question, or a reader's words the article quotes, is not Summer's advice

            if not stories and _STORY_SENTENCE.search(sentence):
                continue
            seen.add(sentence)
            out.extend(Candidate(w, rank, passage) for w in _windows(sentence, max_chars) if len(w) >= 12)
    return out


# how much a figure or a named rule adds to a sentence's cosine similarity with the question
SPECIFIC_BONUS = 0.05


def choose(
    found: Sequence[Candidate],
    *,
    similarity: Sequence[float] | None = None,
    terms: set[str] | None = None,
    tokenize: Callable[[str], list[str]] | None = None,
    limit: int = 3,
    per_article: int = 3,
    max_chars: int = 120,
) -> list[Quote]:
    """The best of ``found`` (see the module's docstring), best first; ``similarity`` holds each
    candidate's cosine similarity with the question, else ``terms`` and ``tokenize`` score word overlap."""
    scores: list[float] = []
    for n, c in enumerate(found):
        specific = bool(_SPECIFIC.search(c.sentence))
        if similarity is not None:
            scores.append(similarity[n] + SPECIFIC_BONUS * specific)
        else:
            assert terms is not None and tokenize is not None, "word overlap needs terms and tokenize"
            overlap = sum(len(t) for t in set(tokenize(c.sentence)) & terms)
            scores.append(overlap + 3 * specific - 2 * c.rank if overlap else float("-inf"))
    order = sorted(range(len(found)), key=lambda n: (-scores[n], found[n].rank))
    chosen: list[Quote] = []
    per: dict[str, int] = {}
    for n in order:
        c = found[n]
        if scores[n] == float("-inf") or per.get(c.passage.document_id, 0) >= per_article:
            continue
        per[c.passage.document_id] = per.get(c.passage.document_id, 0) + 1
        chosen.append(
            Quote(_shorten(c.sentence, max_chars), c.passage.document_id, c.passage.title, c.passage.section)
        )
        if len(chosen) >= limit:
            break
    return chosen


def outline(
    sections: Sequence[tuple[str, str]],
    *,
    document_id: str,
    title: str,
    chinese: bool,
    limit: int = 5,
) -> Outline | None:
    """The article's section headings in order (``sections`` as ``KnowledgeBase.article_sections`` gives
    them), without story and case headings, at most ``limit``; None when fewer than two are left or the
    article is in another language than the question, as for the quotes."""
    points: list[str] = []
    for heading, _ in sections:
        heading = heading.strip()
        if not heading or heading in points or _STORIES.search(heading):
            continue
        if chinese != bool(_CJK.search(heading)):
            return None
        points.append(heading)
    if len(points) < 2:
        return None
    return Outline(document_id, title, tuple(points[:limit]))


def strong(kb: KnowledgeBase, hit: Hit) -> bool:
    """Whether a hit clears the relevance gate's own bars, without its lift for questions near the
    corpus: what may be quoted or outlined (and what the search tool's coverage note names)."""
    fusion = kb.fusion
    return hit.dense >= fusion.min_dense or hit.lexical >= fusion.min_lexical


async def from_hits(
    kb: KnowledgeBase,
    hits: Sequence[Hit],
    asked: str,
    *,
    chinese: bool,
    limit: int = 3,
    gate: bool = True,
    stories: bool = True,
) -> list[Quote]:
    """The hits' sentences that best answer ``asked`` (:func:`candidates`, then :func:`choose`): by
    embedding similarity; by word overlap if embedding them fails, which is logged and counted
    (``quote_similarity``). With ``gate``, only hits that clear the relevance gate's own bars
    (:func:`strong`) are quoted; without it, every hit (a deep facet's passages, already chosen for it).
    Without ``stories``, nothing from a story section or a client's story (see :func:`candidates`)."""
    found = candidates(
        [
            Passage(
                h.chunk.text,
                h.chunk.document_id,
                head_line(h.chunk.title),
                strong(kb, h) or not gate,
                story=bool(_STORIES.search(h.chunk.section or "")),
                section=(h.chunk.section or "").strip(),
            )
            for h in hits
        ],
        chinese=chinese,
        stories=stories,
    )
    return await _best(kb, found, asked, limit)


async def from_articles(
    kb: KnowledgeBase,
    hits: Sequence[Hit],
    asked: str,
    *,
    chinese: bool,
    limit: int = 3,
    stories: bool = True,
) -> list[Quote]:
    """As :func:`from_hits` without the gate, but from the whole articles the hits are in (each once, in
    the hits' order): every section of them, so a rule in another section than the hit's can be chosen.
    A deep facet's two hits are often an article's introduction and one of its stories; her rules with
    their figures are in its other sections (docs/deep-answers.md, "Summer's sentences from the whole
    article")."""
    documents: dict[str, str] = {}
    for h in hits:
        documents.setdefault(h.chunk.document_id, head_line(h.chunk.title))
    passages = [
        Passage(
            text,
            document_id,
            title,
            True,
            story=bool(_STORIES.search(section or "")),
            section=(section or "").strip(),
        )
        for document_id, title in documents.items()
        for section, text in kb.article_sections(document_id)
    ]
    return await _best(kb, candidates(passages, chinese=chinese, stories=stories), asked, limit)


async def _best(kb: KnowledgeBase, found: list[Candidate], asked: str, limit: int) -> list[Quote]:
    """:func:`choose` by embedding similarity with ``asked``; by word overlap if embedding the candidates
    fails, which is logged and counted (``quote_similarity``)."""
    if not found:
        return []
    try:
        similarity = await kb.similarities(asked, [c.sentence for c in found])
    except Exception:
        log.exception("quotes: embedding the quote candidates failed; word overlap chooses")
        count_failure(QUOTE_SIMILARITY)
        return choose(found, terms=set(tokenize(asked)), tokenize=tokenize, limit=limit)
    return choose(found, similarity=similarity, limit=limit)


_HEAD = ("**Summer 的文章怎麼說**", "**What Summer's articles say**")
# after the label when the block quotes an article in the other language, as she wrote it
_ORIGINAL = ("（英文原文）", " (in her original Chinese)")


def quote_line(quote: Quote, zh: bool) -> str:
    """One quote as a Markdown block-quote line with its article's title."""
    return f"> 「{quote.text}」——《{quote.title}》" if zh else f'> "{quote.text}" ({quote.title})'


def render(quotes: Sequence[Quote], zh: bool, outline: Outline | None = None) -> str:
    """The quotes as the Markdown block shown before the model's answer: a label in the reader's language
    (``zh``), the outline's headings as a list under its article's title, then each quote as a block-quote
    line with its article's title, marked as its own language marks a quotation. The label says so when
    the block holds another language than the reader's (the search tool quotes an article in the other
    language when the question's own language offers nothing)."""
    if not quotes and outline is None:
        return ""
    other = any(q.chinese != zh for q in quotes) or (outline is not None and outline.chinese != zh)
    lines = [_HEAD[0 if zh else 1] + (_ORIGINAL[0 if zh else 1] if other else "")]
    if outline is not None:
        lines.append(f"《{outline.title}》的重點：" if zh else f"Key points of *{outline.title}*:")
        lines.extend(f"- {point}" for point in outline.points)
        if quotes:
            lines.append("")
    lines.extend(quote_line(q, q.chinese) for q in quotes)
    return "\n".join(lines) + "\n\n"
