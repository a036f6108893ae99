"""A deep report as stored and as shown: the structure a message keeps, and every text made from it.

An assistant message that is a report keeps the report's structure as JSON (:class:`StoredReport`, the
``messages.report`` column) beside its text; the conversation view reads the sections from it. Every
text form of a report is made here, from that structure (or from the ``report`` event it came from):

- :func:`message_markdown`, the message's text: ``# title``, then ``## heading`` and the body per
  section. The next turn's history carries it and the page renders it;
- :func:`report_text`, what a channel sends: plain text for LINE (``【heading（風險：高）】``), or
  Markdown for OpenAI clients (``## title``, ``### heading (high risk)``).

Messages stored before the structure was kept have only the text; :func:`legacy_bodies` reads their
section bodies back from it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from careerwise.events import ReportEvent, ReportSection
from careerwise.markdown_text import plain

__all__ = ["StoredReport", "legacy_bodies", "message_markdown", "report_text"]

_RISK = {
    "low": ("風險：低", "low risk"),
    "medium": ("風險：中", "medium risk"),
    "high": ("風險：高", "high risk"),
}


class StoredReport(BaseModel):
    """What the user read of a report, in its structure: the title, the sections (heading, Markdown
    body, risk level, cited sources), which deep path wrote it and the facets it has no analysis for.
    The ``report`` event's diagnostics (guards, dropped statements, reflection) stay in the trace."""

    model_config = ConfigDict(frozen=True)

    title: str
    sections: list[ReportSection]
    path: str | None = None
    missing_facets: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, report: ReportEvent) -> StoredReport:
        return cls(
            title=report.title,
            sections=list(report.sections),
            path=report.path,
            missing_facets=list(report.missing_facets),
        )

    def to_json(self) -> dict[str, Any]:
        """The value of the ``messages.report`` column."""
        return self.model_dump(mode="json")


def message_markdown(report: ReportEvent | StoredReport) -> str:
    """The report as its message's text: ``# title`` (when it has one), then ``## heading`` and the
    body of each section, sections one blank line apart."""
    sections = "\n\n".join(f"## {section.heading}\n{section.body}" for section in report.sections)
    return f"# {report.title}\n\n{sections}" if report.title else sections


def report_text(report: ReportEvent | StoredReport, zh: bool, *, markdown: bool = False) -> str:
    """The report as a channel sends it: the title, then each section's heading (with its risk level
    in the reply's language) and body; plain text, or Markdown with ``##``/``###`` headings."""
    lines: list[str] = []
    title = report.title.strip()
    if title:
        lines.append(f"## {title}" if markdown else title)
    for section in report.sections:
        heading = section.heading.strip()
        risk = _RISK.get(section.risk_level) if section.risk_level is not None else None
        if risk is not None:
            heading = f"{heading}（{risk[0]}）" if zh else f"{heading} ({risk[1]})"
        body = section.body.strip()
        if not markdown:
            body = plain(body)
        lines.append("")
        lines.append(f"### {heading}" if markdown else f"【{heading}】")
        if body:
            lines.append(body)
    return "\n".join(lines).strip()


def legacy_bodies(content: str, headings: list[str]) -> list[str] | None:
    """The section bodies of a report message stored before :class:`StoredReport` was kept: cut from
    its text (:func:`message_markdown`) at the ``## heading`` lines. None when the text does not have
    those headings in that order."""
    starts: list[tuple[int, int]] = []
    pos = 0
    for heading in headings:
        marker = f"## {heading}\n"
        at = content.find(marker, pos)
        if at < 0:
            return None
        starts.append((at, at + len(marker)))
        pos = at + len(marker)
    bodies = []
    for n, (_, body_start) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(content)
        bodies.append(content[body_start:end].rstrip("\n"))
    return bodies
