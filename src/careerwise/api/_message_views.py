"""Stored messages as the page shows them: the text, its server-rendered HTML, and what the turn's trace
says about it (the report's structure, the sources, the searches with their effective top_k, the
notices).

The text and a report come from the messages table (what the user read, unmasked): the report's
structure as the message stores it (careerwise.reports); for a message stored before that, the trace's
report event with the bodies cut from the text. The sources and search arguments come from the turn's
stored events, which carried the same values to the page while it streamed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from careerwise.events import Source
from careerwise.reports import StoredReport, legacy_bodies
from careerwise.store import Message, TraceEvent, as_utc
from careerwise.store.conversations import MessageExtras
from careerwise.web.render import render_markdown

log = logging.getLogger(__name__)


class SectionOut(BaseModel):
    heading: str
    body: str
    html: str
    risk_level: Literal["low", "medium", "high"] | None = None
    sources: list[Source] = Field(default_factory=list)


class ReportOut(BaseModel):
    title: str
    sections: list[SectionOut]
    path: str | None = None
    missing_facets: list[str] = Field(default_factory=list)


class SearchOut(BaseModel):
    query: str
    top_k: int | None = Field(default=None, description="The effective top_k the search ran with.")


class NoticeOut(BaseModel):
    kind: Literal["degraded", "error"]
    code: str
    message: str


class MessageOut(BaseModel):
    id: str
    conversation_id: str
    role: str
    content: str
    status: str = Field(description="user messages: ok; assistant: pending, ok, error or cancelled")
    created_at: datetime
    html: str | None = Field(
        default=None, description="The text rendered and sanitized; for finished assistant messages."
    )
    report: ReportOut | None = None
    sources: list[Source] = Field(default_factory=list)
    searches: list[SearchOut] = Field(default_factory=list)
    notices: list[NoticeOut] = Field(default_factory=list)
    rating: Literal["up", "down"] | None = Field(default=None, description="The feedback given, if any.")


def message_views(messages: Sequence[Message], extras: MessageExtras) -> list[MessageOut]:
    """The messages as the page shows them, with what their turns' stored events say
    (ConversationStore.extras)."""
    return [
        _view(
            m,
            extras.events.get(m.trace_id or "", []) if m.role == "assistant" else [],
            extras.ratings.get(m.id),
        )
        for m in messages
    ]


def _view(message: Message, events: Iterable[TraceEvent], rating: str | None) -> MessageOut:
    out = MessageOut(
        id=message.id,
        conversation_id=message.conversation_id,
        role=message.role,
        content=message.content,
        status=message.status,
        created_at=as_utc(message.created_at),
        rating="up" if rating == "up" else "down" if rating == "down" else None,
    )
    if message.role != "assistant":
        return out
    seen: set[tuple[str, str | None]] = set()
    for event in events:
        payload = event.payload
        match event.type:
            case "tool_call":
                args = payload.get("effective_arguments") or {}
                top_k = args.get("top_k")
                out.searches.append(
                    SearchOut(
                        query=str(args.get("query", "")), top_k=top_k if isinstance(top_k, int) else None
                    )
                )
            case "tool_result":
                for raw in payload.get("sources") or []:
                    source = Source.model_validate(raw)
                    if (source.id, source.section) not in seen:
                        seen.add((source.id, source.section))
                        out.sources.append(source)
            case "report":
                out.report = _report(message, payload)
            case "degraded":
                out.notices.append(
                    NoticeOut(
                        kind="degraded", code=str(payload.get("reason")), message=str(payload.get("message"))
                    )
                )
            case "error":
                out.notices.append(
                    NoticeOut(
                        kind="error", code=str(payload.get("code")), message=str(payload.get("message"))
                    )
                )
    if message.status != "pending":
        out.html = render_markdown(message.content)
    return out


def _report(message: Message, payload: dict[str, Any]) -> ReportOut:
    if message.report is not None:
        try:
            return _report_out(StoredReport.model_validate(message.report))
        except ValidationError as exc:
            log.error(
                "message %s: its stored report does not parse (%s); reading the sections from its text",
                message.id,
                exc.errors(include_input=False),
            )
    return _report_out(_legacy_report(message.content, payload))


def _report_out(report: StoredReport) -> ReportOut:
    return ReportOut(
        title=report.title,
        sections=[
            SectionOut(
                heading=s.heading,
                body=s.body,
                html=render_markdown(s.body),
                risk_level=s.risk_level,
                sources=list(s.sources),
            )
            for s in report.sections
        ],
        path=report.path,
        missing_facets=list(report.missing_facets),
    )


def _legacy_report(content: str, payload: dict[str, Any]) -> StoredReport:
    """A report stored before messages kept its structure: the trace's ``report`` event, with the section
    bodies cut from the message text when it has the sections' headings (the stored message is
    unmasked; the trace's masked copy is the fallback if the two ever disagree)."""
    report = StoredReport.model_validate(payload)  # the event's other fields are ignored
    bodies = legacy_bodies(content, [s.heading for s in report.sections])
    if bodies is None:
        return report
    sections = [s.model_copy(update={"body": b}) for s, b in zip(report.sections, bodies, strict=True)]
    return report.model_copy(update={"sections": sections})
