"""Stored messages as the page shows them: the text, its server-rendered HTML, and what the turn's trace
says about it (the report's structure, the sources, the searches with their effective top_k, the
notices).

The text and the report bodies come from the messages table (what the user read, unmasked); risk levels,
sources and search arguments come from the turn's stored events, which carried the same values to the
page while it streamed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from careerwise.events import Source
from careerwise.store import Message, TraceEvent, as_utc
from careerwise.store.conversations import MessageExtras
from careerwise.web.render import render_markdown


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
                out.report = _report(message.content, payload)
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


def _report(content: str, payload: dict[str, Any]) -> ReportOut:
    sections: list[dict[str, Any]] = list(payload.get("sections") or [])
    bodies = stored_bodies(content, [str(s.get("heading", "")) for s in sections])
    out = []
    for n, section in enumerate(sections):
        # the stored message is unmasked; the trace's copy is the fallback if the two ever disagree
        body = bodies[n] if bodies is not None else str(section.get("body", ""))
        out.append(
            SectionOut(
                heading=str(section.get("heading", "")),
                body=body,
                html=render_markdown(body),
                risk_level=section.get("risk_level"),
                sources=[Source.model_validate(s) for s in section.get("sources") or []],
            )
        )
    return ReportOut(
        title=str(payload.get("title", "")),
        sections=out,
        path=payload.get("path"),
        missing_facets=list(payload.get("missing_facets") or []),
    )


def stored_bodies(content: str, headings: list[str]) -> list[str] | None:
    """The section bodies of a report as the engine stored it (``## heading\\nbody`` blocks, see
    TraceRecorder.text), or None when the text does not have those headings in that order."""
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
