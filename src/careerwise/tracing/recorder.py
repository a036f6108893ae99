"""Collects a turn's events and writes the trace rows from them (never from another snapshot).

Rows: ``trace_events`` (every event but the text deltas after the first, as the stream carried it) and
``trace_spans`` (the turn's timeline: routing, LLM calls, tool calls, degradations, errors). A tool call
is stored once: its ``tool_call`` and ``tool_result`` event rows carry the arguments (requested and
effective, with the reason) and the outcome, exactly as the stream showed them; its span keeps only its
timing, its status and its ``call_id``, and readers join the two (store/traces.py), so no reader can
show a value the stream did not carry (shared/DESIGN.md principle 1). Everything stored here is masked
(careerwise.tracing.masking); the assistant message text (:attr:`TraceRecorder.text`) is not: it is the
user's own history.

The rows are plain slotted dataclasses, not ORM objects: the engine stores them with one multi-row
``INSERT`` per table (:meth:`TraceRecorder.event_rows`, :meth:`TraceRecorder.span_rows`, stored by
store/turns.py) in the turn's closing transaction. Building ORM
instances and letting the unit of work flush them would cost event-loop CPU on every turn
(docs/decisions/0007-writes-and-streams-off-the-loop.md).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, assert_never

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
    ToolCallEvent,
    ToolResultEvent,
)
from careerwise.reports import StoredReport, message_markdown
from careerwise.tracing.llm_calls import LLMCall
from careerwise.tracing.masking import mask_json
from careerwise.tracing.turn import TurnEnd


def llm_span_attributes(call: LLMCall) -> dict[str, Any]:
    return {
        "purpose": call.purpose,
        "model": call.model,
        "provider": call.provider,
        "ttft_ms": call.ttft_ms,
        "prompt_tokens": call.prompt_tokens,
        "completion_tokens": call.completion_tokens,
        "finish_reason": call.finish_reason,
        "tool_calls": call.tool_calls,
        "error": call.error,
    }


@dataclass(slots=True)
class EventRow:
    """A ``trace_events`` row."""

    trace_id: str
    seq: int
    t_ms: float
    type: str
    payload: dict[str, Any]


@dataclass(slots=True)
class SpanRow:
    """A ``trace_spans`` row; ``seq`` is given by start time in :attr:`TraceRecorder.spans`."""

    trace_id: str
    seq: int
    kind: str
    name: str
    start_ms: float
    duration_ms: float
    status: str
    attributes: dict[str, Any]


def _without_type(payload: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in payload.items() if k != "type"}


def _values(row: EventRow | SpanRow) -> dict[str, Any]:
    return {name: getattr(row, name) for name in row.__slots__}


class TraceRecorder:
    def __init__(self, trace_id: str, *, started: float | None = None) -> None:
        self.trace_id = trace_id
        self._t0 = started if started is not None else time.perf_counter()
        self._seq = 0
        self.rows: list[EventRow] = []
        self._spans: list[SpanRow] = []
        self._tool_spans: dict[str, SpanRow] = {}
        self.llm_calls: list[LLMCall] = []
        self.answer: list[str] = []
        self.route: RouteEvent | None = None
        self.degraded: list[DegradedEvent] = []
        self.error: ErrorEvent | None = None
        self.report: ReportEvent | None = None
        self.deltas = 0

    def _ms(self, at: float | None = None) -> float:
        return round(1000 * ((at if at is not None else time.perf_counter()) - self._t0), 2)

    def _span(
        self,
        kind: str,
        name: str,
        start_ms: float,
        duration_ms: float,
        attributes: dict[str, Any],
        *,
        ok: bool,
        masked: bool = False,
    ) -> SpanRow:
        span = SpanRow(
            trace_id=self.trace_id,
            seq=0,  # numbered by start time in ``spans``
            kind=kind,
            name=name[:160],
            start_ms=max(0.0, round(start_ms, 2)),
            duration_ms=round(duration_ms, 2),
            status="ok" if ok else "error",
            attributes=attributes if masked else mask_json(attributes),
        )
        self._spans.append(span)
        return span

    def observe(self, event: Event) -> None:
        t_ms = self._ms()
        self._seq += 1
        if isinstance(event, DeltaEvent):
            self.answer.append(event.text)
            self.deltas += 1
            if self.deltas > 1:
                return  # text is stored on the message; the trace keeps the first delta's timing only
        # dumped and masked once: the event row and the route's or tool's span share it
        payload: dict[str, Any] = mask_json(event.model_dump(mode="json"))
        match event:
            case DeltaEvent():
                pass  # counted above
            case RouteEvent():
                self.route = event
                took = event.duration_ms or 0.0
                self._span("route", "route", t_ms - took, took, _without_type(payload), ok=True, masked=True)
            case ToolCallEvent():
                # the span is the call's timing only: its arguments are the tool_call row's
                self._tool_spans[event.call_id] = self._span(
                    "tool",
                    f"execute_tool {event.name}",
                    t_ms,
                    0.0,
                    {"call_id": payload.get("call_id")},
                    ok=True,
                    masked=True,
                )
            case ToolResultEvent():
                span = self._tool_spans.get(event.call_id)
                if span is not None:  # the outcome is the tool_result row's
                    span.duration_ms = round(event.duration_ms, 2)
                    span.status = "ok" if event.ok else "error"
            case DegradedEvent():
                self.degraded.append(event)
                self._span("degraded", event.reason, t_ms, 0.0, {"message": event.message}, ok=True)
            case ErrorEvent():
                self.error = event
                attrs = {"message": event.message, "retryable": event.retryable}
                self._span("error", event.code, t_ms, 0.0, attrs, ok=False)
            case ReportEvent():
                self.report = event
            case SectionEvent() | ProgressEvent() | DoneEvent():
                pass
            case _:
                assert_never(event)
        self.rows.append(
            EventRow(trace_id=self.trace_id, seq=self._seq, t_ms=t_ms, type=event.type, payload=payload)
        )

    def llm_call(self, call: LLMCall) -> None:
        self.llm_calls.append(call)
        self._span(
            "llm",
            f"chat {call.model}",
            self._ms(call.started),
            call.duration_ms,
            llm_span_attributes(call),
            ok=call.ok,
        )

    def finish(self, end: TurnEnd) -> None:
        """Nothing to do: the engine writes :meth:`event_rows` and :meth:`span_rows`."""

    @property
    def spans(self) -> list[SpanRow]:
        """The spans in start order, numbered."""
        ordered = sorted(self._spans, key=lambda s: s.start_ms)
        for n, span in enumerate(ordered, 1):
            span.seq = n
        return ordered

    def event_rows(self) -> list[dict[str, Any]]:
        """The ``trace_events`` rows' values, in stream order."""
        return [_values(r) for r in self.rows]

    def span_rows(self) -> list[dict[str, Any]]:
        """The ``trace_spans`` rows' values, in start order."""
        return [_values(r) for r in self.spans]

    @property
    def text(self) -> str:
        """The assistant message as stored: the streamed text, or the report as Markdown, so the next
        turn's history carries what the user read."""
        streamed = "".join(self.answer)
        if self.report is None:
            return streamed
        report = message_markdown(self.report)
        return f"{streamed}\n\n{report}" if streamed else report

    @property
    def stored_report(self) -> dict[str, Any] | None:
        """The report's structure as the assistant message keeps it (``messages.report``), unmasked as
        the text is; None when the turn made no report."""
        return StoredReport.of(self.report).to_json() if self.report is not None else None
