"""A finished turn as one typed value, gathered from its events (decision 0021).

The full-JSON reply of ``POST /api/chat``, the LINE bot and the OpenAI-compatible endpoint all read a
:class:`TurnReply`; none of them looks into an event's dict. :meth:`TurnReply.from_events` matches on
every event type and ends with ``assert_never``: an event type added to ``events.Event`` and not handled
here fails the type check instead of being dropped from these replies.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, assert_never

from pydantic import BaseModel, ConfigDict, Field

from careerwise.events import (
    DegradedEvent,
    DeltaEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    ProgressEvent,
    ReportEvent,
    RouteEvent,
    SectionEvent,
    Source,
    ToolCallEvent,
    ToolResultEvent,
)

__all__ = ["TurnReply"]


class TurnReply(BaseModel):
    """What a turn said and did. Dumped as JSON it is the body of ``POST /api/chat`` with
    ``mode: "full"`` (docs/api.md): each event as the stream carried it."""

    model_config = ConfigDict(frozen=True)

    conversation_id: str
    message_id: str
    trace_id: str
    status: Literal["ok", "error", "cancelled"]
    path: str
    answer: str = Field(description="The streamed text, the notice lines included.")
    route: RouteEvent | None = None
    tool_calls: list[ToolCallEvent] = Field(default_factory=list)
    tool_results: list[ToolResultEvent] = Field(default_factory=list)
    report: ReportEvent | None = None
    degraded: list[DegradedEvent] = Field(default_factory=list)
    error: ErrorEvent | None = None
    usage: dict[str, int] = Field(default_factory=dict)

    @classmethod
    def from_events(cls, events: Iterable[Event]) -> TurnReply:
        """The reply made of a whole turn's events. ``progress`` and ``section`` events are left out:
        they keep a stream alive or preview the report, and the ``report`` event carries every section.
        Raises ``ValueError`` when the events hold no ``done`` (every finished turn ends with one)."""
        answer: list[str] = []
        route: RouteEvent | None = None
        calls: list[ToolCallEvent] = []
        results: list[ToolResultEvent] = []
        report: ReportEvent | None = None
        degraded: list[DegradedEvent] = []
        error: ErrorEvent | None = None
        done: DoneEvent | None = None
        for event in events:
            match event:
                case DeltaEvent():
                    answer.append(event.text)
                case RouteEvent():
                    route = event
                case ToolCallEvent():
                    calls.append(event)
                case ToolResultEvent():
                    results.append(event)
                case ReportEvent():
                    report = event
                case DegradedEvent():
                    degraded.append(event)
                case ErrorEvent():
                    error = event
                case DoneEvent():
                    done = event
                case ProgressEvent() | SectionEvent():
                    pass
                case _:
                    assert_never(event)
        if done is None:
            raise ValueError("the events of a turn end with a 'done' event; these have none")
        return cls(
            conversation_id=done.conversation_id,
            message_id=done.message_id,
            trace_id=done.trace_id,
            status=done.status,
            path=done.path,
            answer="".join(answer),
            route=route,
            tool_calls=calls,
            tool_results=results,
            report=report,
            degraded=degraded,
            error=error,
            usage=dict(done.usage),
        )

    def sources(self) -> list[Source]:
        """The knowledge-base passages the answer drew on (the successful searches, then the report's
        sections), each document section once, in the order they came."""
        seen: set[tuple[str, str | None]] = set()
        out: list[Source] = []
        groups = [r.sources for r in self.tool_results if r.ok]
        if self.report is not None:
            groups += [s.sources for s in self.report.sections]
        for group in groups:
            for source in group:
                key = (source.id, source.section)
                if key not in seen:
                    seen.add(key)
                    out.append(source)
        return out

    def result_of(self, call: ToolCallEvent) -> ToolResultEvent | None:
        """The result of a tool call, or None when the turn ended before it came."""
        return next((r for r in self.tool_results if r.call_id == call.call_id), None)
