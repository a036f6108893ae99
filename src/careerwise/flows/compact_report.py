"""The compact report's sections: each sent to the user the moment it is ready, in the report's order,
guarded together with the ones before it (decision 0016; the findings-first order of decision 0026).

A facet whose findings are Summer's sentences is ready before any call is made; a facet whose findings
the model writes is ready after its call; 行動建議 comes last, from the checked insights, with the highest
of the facets' risk levels (the facet sections went out before the model had read them, so the risk the
model gives each facet is reported once, on the section that acts on it).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Literal

from careerwise.events import ReportSection, SectionEvent
from careerwise.flows import deep_steps, report_guards
from careerwise.flows.base import FlowContext
from careerwise.flows.compact_items import CheckedItems, headed, outline_line
from careerwise.flows.deep_steps import Emit
from careerwise.flows.facets import AgentResult, Facet
from careerwise.knowledge import quotes
from careerwise.knowledge.fence import head_line
from careerwise.knowledge.index import Hit
from careerwise.knowledge.service import KnowledgeBase

log = logging.getLogger(__name__)

Risk = Literal["low", "medium", "high"]
_RISKS: tuple[Risk, ...] = ("low", "medium", "high")


def highest(levels: Iterable[Risk]) -> Risk | None:
    """The highest of the risk levels; None when there are none."""
    given = list(levels)
    return max(given, key=_RISKS.index) if given else None


def summer_findings(kb: KnowledgeBase, hits: list[Hit], said: list[quotes.Quote], zh: bool) -> list[str]:
    """A facet's findings from Summer's articles: her sentences (``said``), each after its section's
    heading, then the first article's other headings; only those headings when no sentence could be
    chosen (every one told a client's story). The headings are in the sentences' language (the other
    one when the sentences are: decision 0023); with no sentence, only an article in the reader's
    language (``zh``) gives them."""
    if not hits:
        return []
    best = hits[0].chunk
    outline = quotes.outline(
        kb.article_sections(best.document_id),
        document_id=best.document_id,
        title=head_line(best.title),
        chinese=said[0].chinese if said else zh,
    )
    line = outline_line(outline, said, zh)
    return [*headed(said, zh), *([line] if line else [])]


def bullets(texts: list[str]) -> str:
    return "\n".join(f"- {t}" for t in texts)


def as_event(index: int, section: ReportSection) -> SectionEvent:
    return SectionEvent(
        index=index,
        heading=section.heading,
        body=section.body,
        risk_level=section.risk_level,
        sources=list(section.sources),
    )


class SectionGuard:
    """The report guards (``report_guards.guard_report``) applied section by section: each new section is
    guarded together with the raw sections before it, so a guard that looks back (a list item repeated
    from an earlier section) sees them, and the section is final when it is sent; the report repeats
    the sent sections, with the counts of one last pass over all of them."""

    def __init__(self, ctx: FlowContext, off_domain_hits: int) -> None:
        self.ctx = ctx
        self.raw: list[ReportSection] = []
        self.passages: list[str] = []
        self.earlier = {report_guards.OFF_DOMAIN_HITS: off_domain_hits}

    def _run(self, sections: list[ReportSection]) -> report_guards.GuardResult:
        return report_guards.guard_report(
            sections,
            user_messages=report_guards.user_messages(self.ctx),
            passages=self.passages,
            zh=self.ctx.zh,
            earlier=self.earlier,
        )

    def add(self, section: ReportSection, passages: list[str]) -> ReportSection:
        self.passages.extend(passages)
        guarded = self._run([*self.raw, section]).sections[-1]
        self.raw.append(section)
        return guarded

    def final(self) -> report_guards.GuardResult:
        return self._run(self.raw)


class CompactReport:
    """The sections of one compact report by their place in it. A facet's place is taken, in the
    report's order, by :meth:`ready` (its body is known) or :meth:`later` (it waits for its call);
    whenever the next place is filled, it and every filled place after it are guarded and sent."""

    def __init__(self, ctx: FlowContext, guard: SectionGuard, emit: Emit) -> None:
        self.ctx = ctx
        self.guard = guard
        self.emit = emit
        self.places: list[str] = []
        # a place's section, the passages it is guarded with, and whether it only says there is no
        # analysis (such a section waits for a section with content after it: when every facet fails
        # nothing is sent, and the streamed answer follows on a clean page)
        self.filled: dict[int, tuple[ReportSection, list[str], bool]] = {}
        self.sections: list[ReportSection] = []  # what was sent, in order
        self.dropped = 0
        self.reasons: list[str] = []
        self.insights: list[str] = []
        self.insight_hits: list[Hit] = []

    @property
    def sent(self) -> int:
        return len(self.sections)

    def _place(self, key: str) -> int:
        if key not in self.places:
            self.places.append(key)
        return self.places.index(key)

    def later(self, facet: Facet) -> None:
        self._place(facet.key)

    def ready(
        self, facet: Facet, body: str, hits: list[Hit], passages: list[str], *, missing: bool = False
    ) -> None:
        section = ReportSection(
            heading=facet.pick(facet.heading, self.ctx.zh), body=body, sources=deep_steps.sources_of(hits)
        )
        self.filled[self._place(facet.key)] = (section, passages, missing)
        self._send()

    def actions(self, section: ReportSection) -> None:
        self.filled[self._place("actions")] = (section, [], False)
        self._send()

    def checked(
        self, facet: Facet, findings: CheckedItems, advice: CheckedItems, result: AgentResult
    ) -> None:
        """What the check kept and dropped of one facet's items: dropped ones logged and counted, kept
        insights gathered for 行動建議."""
        for text, why in (*findings.dropped, *advice.dropped):
            log.info("compact: dropped an unsupported %s item (%s): %s", facet.key, why, text)
        self.dropped += len(findings.dropped) + len(advice.dropped)
        self.reasons.extend(f"{facet.key}: {why}" for _, why in (*findings.dropped, *advice.dropped))
        if advice.kept:
            self.insights.extend(t for t in advice.kept if t not in self.insights)
            self.insight_hits.extend(result.hits)

    def _send(self) -> None:
        run: list[tuple[ReportSection, list[str], bool]] = []
        while self.sent + len(run) in self.filled:
            run.append(self.filled[self.sent + len(run)])
        with_content = [n for n, (_, _, missing) in enumerate(run) if not missing]
        for _ in range(with_content[-1] + 1 if with_content else 0):
            section, passages, _ = self.filled.pop(self.sent)
            guarded = self.guard.add(section, passages)
            self.emit(as_event(self.sent, guarded))
            # when the user first saw part of the report, on the trace (time to first section)
            self.ctx.state.timings.setdefault("first_section_ms", self.ctx.state.elapsed_ms())
            self.sections.append(guarded)
