"""Guards every deep report passes before the user sees it (issue 24, part 3).

A small model writes reports that look right and are not: it tells the user what they "mentioned" when
they never said it, repeats list items, stops in the middle of the last one, calls a cited article
「不適用」, cites the same article twice and tells a user below the cited average that they are above it.
The merge guard and the fact check (``fact_checks``) catch invented numbers and names; these guards catch the
rest, mechanically, with the same normaliser:

- ``invented_user_statements``: a sentence that attributes something to the user (「你提到…」「使用者提到…」
  "you mentioned…", "as you said…") whose content the user's own messages do not contain is dropped;
- ``not_applicable``: a sentence that calls a cited passage 不適用 / "does not apply" is dropped (a source
  is cited for what it says, not for what it does not);
- ``wrong_comparisons``: a sentence that puts the user's figure above (below) a cited average or range
  that the figure is in fact below (above) is replaced by a plain statement of both figures;
- ``duplicate_items``: a list item repeated word for word or nearly (after normalisation), in its section
  or in an earlier one, is dropped;
- ``truncated_items``: a last list item cut off mid-sentence is cut back to its last whole sentence, or
  dropped when it has none;
- ``duplicate_sources``: a section cites each article once (two chunks of one article were two chips);
- ``off_domain_hits``: a facet hit written for an audience the user's situation never names (a technical
  interview plan for an accountant) is not given to an agent (:func:`relevant_hits`, counted before the
  report exists and passed in).

One entry point, :func:`guard_report`: sections in, sections out, with a count per guard (every guard
present, zeros included, so a consumer can tell "ran, found nothing" from "did not run"). What the guards
do not catch is listed in docs/deep-answers.md#guards. The checks of single sentences and list items
(the normaliser, attribution, comparisons, truncation, near-duplicates) are in ``_report_checks``; this
module decides what each finding does to the report and counts it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from careerwise.events import Event, ProgressEvent, ReportSection, Source
from careerwise.flows import fact_checks
from careerwise.flows._report_checks import (
    _BULLET,
    _ENDS_CUT,
    Figure,
    _claimed_direction,
    _cut_back,
    _grams,
    _item_key,
    _near,
    _nfkc,
    _reference_figures,
    calls_source_inapplicable,
    corrected,
    figures,
    invented_attribution,
    is_truncated,
    wrong_comparison,
)
from careerwise.flows.base import FlowContext
from careerwise.knowledge.index import Hit

log = logging.getLogger(__name__)

INVENTED = "invented_user_statements"
NOT_APPLICABLE = "not_applicable"
WRONG_COMPARISONS = "wrong_comparisons"
DUPLICATE_ITEMS = "duplicate_items"
TRUNCATED_ITEMS = "truncated_items"
DUPLICATE_SOURCES = "duplicate_sources"
OFF_DOMAIN_HITS = "off_domain_hits"
GUARDS = (
    INVENTED,
    NOT_APPLICABLE,
    WRONG_COMPARISONS,
    DUPLICATE_ITEMS,
    TRUNCATED_ITEMS,
    DUPLICATE_SOURCES,
    OFF_DOMAIN_HITS,
)

# a section whose every line a guard removed (repeated, cut off, invented about the user) says so
EMPTIED = (
    "（這部分的內容沒有通過報告檢查，已移除。）",
    "(What this part said did not pass the report's checks, so it was removed.)",
)


@dataclass
class GuardResult:
    """The guarded sections, what each guard did, the report's sources (one per article) and, for the
    log and the trace, every removal or correction with its guard."""

    sections: list[ReportSection]
    counts: dict[str, int]
    sources: list[Source]
    actions: list[tuple[str, str]] = field(default_factory=list)  # (guard, the text it removed/changed)

    @property
    def acted(self) -> bool:
        return any(self.counts.values())

    def summary(self) -> str:
        return summary(self.counts)


def summary(counts: Mapping[str, int]) -> str:
    """``duplicate_items=1, invented_user_statements=2``: the guards that acted, for a progress event."""
    return ", ".join(f"{k}={v}" for k, v in counts.items() if v)


# --------------------------------------------------------------------------- facet hits by audience

# Articles written for one audience, read from the knowledge base's own label of an article, its title:
# a title naming an audience marks the article as written for it. Such an article is relevant only when
# the user's situation names that audience too. A title that names no audience is for everyone.
AUDIENCES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # audience: (words in an article title, words in the user's situation)
    "software": (
        (
            "engineer",
            "developer",
            "technical",
            "coding",
            "programming",
            "工程師",
            "程式",
            "前端",
            "後端",
            "軟體",
        ),
        (
            "engineer",
            "developer",
            "programm",
            "coding",
            "software",
            "frontend",
            "front-end",
            "backend",
            "back-end",
            "leetcode",
            "工程師",
            "程式",
            "前端",
            "後端",
            "軟體",
            "資工",
            "碼農",
            "刷題",
            "寫code",
        ),
    ),
    "design": (
        ("designer", "設計師"),
        ("designer", "ui", "ux", "設計"),
    ),
    "product_data": (
        ("產品經理", "資料分析", "product manager", "data analyst"),
        ("產品經理", "資料分析", "數據分析", "product manager", "data analyst", "pm", "數據"),
    ),
}


def article_audiences(title: str) -> set[str]:
    t = _nfkc(title).lower()
    return {name for name, (marks, _) in AUDIENCES.items() if any(m in t for m in marks)}


def situation_audiences(user_text: str) -> set[str]:
    t = _nfkc(user_text).lower()
    found: set[str] = set()
    for name, (_, words) in AUDIENCES.items():
        for w in words:
            # short Latin words (ui, ux, pm) only as whole words: "ui" is inside "build"
            if re.search(rf"\b{re.escape(w)}\b", t) if w.isascii() and len(w) <= 3 else w in t:
                found.add(name)
                break
    return found


def relevant_hits(hits: Sequence[Hit], user_text: str) -> tuple[list[Hit], list[Hit]]:
    """(kept, dropped): a facet hit stays when its article is written for everyone, or for an audience
    the user's situation names. The index's domain filter and relevance gate have already run."""
    mine = situation_audiences(user_text)
    kept: list[Hit] = []
    dropped: list[Hit] = []
    for h in hits:
        audiences = article_audiences(h.chunk.title)
        (kept if not audiences or audiences & mine else dropped).append(h)
    return kept, dropped


def relevant_facet_hits(
    per_facet: Sequence[Sequence[Hit]], user_messages: Sequence[str], *, top_k: int
) -> tuple[list[list[Hit]], list[Hit]]:
    """Each facet's hits without those written for an audience the user never names, cut to ``top_k``,
    and the hits dropped (in the first ``top_k`` of their facet: what an agent would have seen)."""
    text = "\n".join(user_messages)
    kept_all: list[list[Hit]] = []
    dropped_all: list[Hit] = []
    for hits in per_facet:
        kept, dropped = relevant_hits(hits, text)
        kept_all.append(kept[:top_k])
        shown = {id(h) for h in hits[:top_k]}
        dropped_all.extend(h for h in dropped if id(h) in shown)
    return kept_all, dropped_all


# --------------------------------------------------------------------------- the entry point


def merge_sources(sources: Iterable[Source]) -> tuple[list[Source], int]:
    """One source per article (its best score kept, first position), and how many were merged away."""
    out: dict[str, Source] = {}
    merged = 0
    for s in sources:
        seen = out.get(s.id)
        if seen is None:
            out[s.id] = s
            continue
        merged += 1
        if (s.score or 0.0) > (seen.score or 0.0):
            out[s.id] = seen.model_copy(update={"score": s.score})
    return list(out.values()), merged


_NUMBERED = re.compile(r"^(\s*)\d{1,2}([.)、]\s*)$")


def _renumber(lines: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """A numbered list counts 1, 2, 3 again after items were removed."""
    out: list[tuple[str, str]] = []
    n = 0
    for mark, text in lines:
        m = _NUMBERED.match(mark)
        if m and text:
            n += 1
            mark = f"{m.group(1)}{n}{m.group(2)}"
        out.append((mark, text))
    return out


class _Guard:
    def __init__(self, *, user_text: str, passages: Sequence[str], zh: bool) -> None:
        self.user_text = user_text
        self.zh = zh
        self.user_figures = figures(user_text)
        self.passages = passages
        self._references: list[Figure] | None = None
        self.counts = dict.fromkeys(GUARDS, 0)
        self.actions: list[tuple[str, str]] = []
        self.seen_items: list[tuple[str, set[str]]] = []  # every item kept so far, all sections

    @property
    def references(self) -> list[Figure]:
        """The cited averages and ranges, read from the passages the first time a sentence needs them."""
        if self._references is None:
            self._references = _reference_figures(self.passages)
        return self._references

    def act(self, guard: str, text: str) -> None:
        self.counts[guard] += 1
        self.actions.append((guard, text.strip()))

    def sentence(self, sentence: str) -> str:
        """The sentence as the user may see it ('' when dropped)."""
        if invented_attribution(sentence, self.user_text) is not None:
            self.act(INVENTED, sentence)
            return ""
        if calls_source_inapplicable(sentence):
            self.act(NOT_APPLICABLE, sentence)
            return ""
        wrong = None
        if self.user_figures and _claimed_direction(sentence) is not None:
            wrong = wrong_comparison(sentence, self.user_figures, self.references)
        if wrong is not None:
            self.act(WRONG_COMPARISONS, sentence)
            return corrected(*wrong, zh=self.zh)
        return sentence

    def body(self, body: str) -> str:
        lines: list[tuple[str, str]] = []  # (mark, text); mark '' for a line that is not a list item
        for line in body.split("\n"):
            m = _BULLET.match(line)
            assert m is not None
            mark, text = m.group(1), m.group(2)
            if not text.strip():
                lines.append(("", ""))
                continue
            kept = "".join(self.sentence(s) for s in fact_checks.sentences(text)).strip()
            if kept:
                lines.append((mark, kept))
        # duplicates first (a list item against every item kept so far, this section's and the earlier
        # sections'; a paragraph line only within its section: 「此面向暫無分析資料」 may say so in two
        # sections), then the cut-off last item of what is left
        unique: list[tuple[str, str]] = []
        mine: list[tuple[str, set[str]]] = []
        for mark, text in lines:
            if not text:
                unique.append((mark, text))
                continue
            key, grams = _item_key(text), _grams(text)
            earlier = self.seen_items if mark.strip() else []
            if any(key == k or _near(grams, g) for k, g in [*earlier, *mine]):
                self.act(DUPLICATE_ITEMS, text)
                continue
            mine.append((key, grams))
            unique.append((mark, text))
        lines = _renumber(self._truncated(unique))
        read = dict(zip((t for _, t in unique if t), mine, strict=True))
        self.seen_items.extend(
            read.get(t) or (_item_key(t), _grams(t)) for mark, t in lines if t and mark.strip()
        )
        return re.sub(r"\n{3,}", "\n\n", "\n".join(mark + t for mark, t in lines)).strip()

    def _truncated(self, lines: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """The last list item, cut back to its whole sentences when it stops mid-sentence."""
        items = [i for i, (mark, text) in enumerate(lines) if text]
        if not items:
            return lines
        last = items[-1]
        mark, text = lines[last]
        if not mark.strip():
            # a paragraph, not a list item: only an unmistakable cut (a trailing comma or joiner) counts
            if not _ENDS_CUT.search(text.rstrip()):
                return lines
        else:
            siblings = [t for i, (m, t) in enumerate(lines) if t and m.strip() and i != last]
            if not is_truncated(text, siblings):
                return lines
        self.act(TRUNCATED_ITEMS, text)
        whole = _cut_back(text)
        return (
            [*lines[:last], (mark, whole), *lines[last + 1 :]] if whole else lines[:last] + lines[last + 1 :]
        )


def guard_report(
    sections: Sequence[ReportSection],
    *,
    user_messages: Sequence[str],
    passages: Sequence[str],
    zh: bool,
    earlier: Mapping[str, int] | None = None,
) -> GuardResult:
    """Run every guard on a report's sections, in order.

    ``user_messages``: what the user wrote in this conversation (this message and the earlier ones the
    flow saw): the only evidence of what the user said and of the user's own figures. ``passages``: the
    texts the report cites (chunks, agents' findings): where cited averages and ranges are read.
    ``earlier``: counts of guards that ran before the report existed (``off_domain_hits``).
    A section whose every line is removed says so (:data:`EMPTIED`) instead of going blank."""
    guard = _Guard(user_text="\n".join(user_messages), passages=passages, zh=zh)
    out: list[ReportSection] = []
    every: list[Source] = []
    for section in sections:
        body = guard.body(section.body)
        sources, merged = merge_sources(section.sources)
        guard.counts[DUPLICATE_SOURCES] += merged
        every.extend(section.sources)
        if merged:
            guard.actions.append((DUPLICATE_SOURCES, f"{section.heading}: {merged}"))
        out.append(
            section.model_copy(
                update={"body": body or (EMPTIED[0] if zh else EMPTIED[1]), "sources": sources}
            )
        )
    for key, n in (earlier or {}).items():
        guard.counts[key] = guard.counts.get(key, 0) + n
    report_sources, _ = merge_sources(every)
    return GuardResult(sections=out, counts=guard.counts, sources=report_sources, actions=guard.actions)


# --------------------------------------------------------------------------- for the flows


def user_messages(ctx: FlowContext) -> list[str]:
    """Everything the user wrote in this conversation that the flow has: the earlier messages and this one."""
    return [*(m.content for m in ctx.history if m.role == "user" and m.content), ctx.message]


def announce(result: GuardResult, *, flow: str, emit: Callable[[Event], None]) -> None:
    """Log every removal or correction, and put one ``guards`` progress event with the counts on the
    stream and the trace when a guard acted (the counts themselves travel on the report)."""
    for guard, text in result.actions:
        log.info("%s: report guard %s: %s", flow, guard, text)
    if result.acted:
        emit(ProgressEvent(stage="guards", detail=result.summary()))
