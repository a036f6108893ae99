"""Collects a turn's events and writes the trace rows from them (never from another snapshot)."""

from __future__ import annotations

import time
from typing import Any

from careerwise.events import (
    DegradedEvent,
    DeltaEvent,
    ErrorEvent,
    Event,
    ReportEvent,
    RouteEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from careerwise.store import ToolCallRecord, TraceEvent


class TraceRecorder:
    def __init__(self, trace_id: str) -> None:
        self.trace_id = trace_id
        self._t0 = time.perf_counter()
        self._seq = 0
        self.rows: list[TraceEvent] = []
        self.tool_calls: dict[str, ToolCallRecord] = {}
        self.answer: list[str] = []
        self.route: RouteEvent | None = None
        self.degraded: list[DegradedEvent] = []
        self.error: ErrorEvent | None = None
        self.report: ReportEvent | None = None
        self.deltas = 0

    def observe(self, event: Event) -> None:
        t_ms = round(1000 * (time.perf_counter() - self._t0), 2)
        self._seq += 1
        match event:
            case DeltaEvent():
                self.answer.append(event.text)
                self.deltas += 1
                if self.deltas > 1:
                    return  # text is stored on the message; the trace keeps the first delta's timing only
            case RouteEvent():
                self.route = event
            case ToolCallEvent():
                self.tool_calls[event.call_id] = ToolCallRecord(
                    trace_id=self.trace_id,
                    call_id=event.call_id,
                    name=event.name,
                    requested_arguments=event.requested_arguments,
                    effective_arguments=event.effective_arguments,
                    reason=event.reason,
                )
            case ToolResultEvent():
                rec = self.tool_calls.get(event.call_id)
                if rec is not None:
                    rec.ok, rec.returned, rec.duration_ms = event.ok, event.returned, event.duration_ms
            case DegradedEvent():
                self.degraded.append(event)
            case ErrorEvent():
                self.error = event
            case ReportEvent():
                self.report = event
            case _:
                pass
        payload: dict[str, Any] = event.model_dump(mode="json")
        self.rows.append(
            TraceEvent(trace_id=self.trace_id, seq=self._seq, t_ms=t_ms, type=event.type, payload=payload)
        )

    @property
    def text(self) -> str:
        """The assistant message as stored: the streamed text, or the report as Markdown, so the next
        turn's history carries what the user read."""
        streamed = "".join(self.answer)
        if self.report is None:
            return streamed
        sections = "\n\n".join(f"## {sec.heading}\n{sec.body}" for sec in self.report.sections)
        report = f"# {self.report.title}\n\n{sections}" if self.report.title else sections
        return f"{streamed}\n\n{report}" if streamed else report
