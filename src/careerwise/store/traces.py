"""Reading stored turns: the dashboard's list and timeline and ``careerwise traces`` read them here.

A tool call is stored once, as the turn's ``tool_call`` and ``tool_result`` event rows: the very payloads
the user's stream carried (shared/DESIGN.md principle 1). Every reader gets its tool calls from
:func:`tool_calls_of` and its spans from :func:`span_views`, which gives a tool span the arguments and
the outcome of its call from those rows. Turns stored before the tool span lost its copy keep their
stored attributes; the joined values are the same ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import ColumnElement, func, select

from careerwise.errors import UserInputError
from careerwise.store.db import Database
from careerwise.store.models import Message, Trace, TraceEvent
from careerwise.store.models_observability import Feedback, TraceSpan

__all__ = [
    "ListedTurn",
    "StoredToolCall",
    "StoredTurn",
    "TraceStore",
    "TurnFilters",
    "TurnListing",
    "span_views",
    "tool_calls_of",
]

_LIST_EVENTS = ("route", "tool_call", "degraded")


@dataclass(frozen=True)
class StoredToolCall:
    """One tool call as the stream showed it: the ``tool_call`` payload (without its ``type``) and, once
    the tool answered, the ``tool_result`` payload; each with its offset from the turn's start."""

    call: dict[str, Any]
    t_ms: float
    result: dict[str, Any] | None = None
    result_t_ms: float | None = None

    @property
    def call_id(self) -> str:
        return str(self.call.get("call_id"))

    def span_attributes(self) -> dict[str, Any]:
        """What the call's span shows: its arguments and, once answered, its outcome."""
        outcome = (
            {
                "ok": self.result.get("ok"),
                "returned": self.result.get("returned"),
                "error": self.result.get("error"),
            }
            if self.result is not None
            else {}
        )
        return self.call | outcome


def _body(payload: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in payload.items() if k != "type"}


def tool_calls_of(events: Iterable[TraceEvent]) -> list[StoredToolCall]:
    """The turn's tool calls in the order they were made, each with its result when there is one."""
    calls: list[StoredToolCall] = []
    by_id: dict[str, int] = {}
    for e in events:
        if e.type == "tool_call":
            by_id[str(e.payload.get("call_id"))] = len(calls)
            calls.append(StoredToolCall(call=_body(e.payload), t_ms=e.t_ms))
        elif e.type == "tool_result":
            at = by_id.get(str(e.payload.get("call_id")))
            if at is not None:
                found = calls[at]
                calls[at] = StoredToolCall(found.call, found.t_ms, _body(e.payload), e.t_ms)
    return calls


def span_views(spans: Iterable[TraceSpan], calls: Sequence[StoredToolCall]) -> list[dict[str, Any]]:
    """The spans as JSON, in their stored order; a tool span with its call's arguments and outcome. A
    span and its call share the call's id and its start (the tool_call event's offset), so of calls
    with one id (a provider that reuses ids), the n-th span of that id is the n-th call."""
    by_id: dict[str, list[StoredToolCall]] = {}
    for c in calls:
        by_id.setdefault(c.call_id, []).append(c)
    out = []
    for span in spans:
        attributes = span.attributes
        if span.kind == "tool":
            waiting = by_id.get(str(attributes.get("call_id")))
            if waiting:
                attributes = waiting.pop(0).span_attributes() | attributes
        out.append(
            {
                "seq": span.seq,
                "kind": span.kind,
                "name": span.name,
                "start_ms": span.start_ms,
                "duration_ms": span.duration_ms,
                "status": span.status,
                "attributes": attributes,
            }
        )
    return out


@dataclass(frozen=True)
class TurnFilters:
    """The dashboard's filters on the turns list; ``None`` filters nothing."""

    intent: str | None = None
    tier: str | None = None
    path: str | None = None
    channel: str | None = None
    status: str | None = None
    degraded: bool | None = None
    error: bool | None = None
    assistant_id: str | None = None
    conversation_id: str | None = None
    date_from: date | None = None
    date_to: date | None = None

    def conditions(self) -> list[ColumnElement[bool]]:
        """Raises UserInputError when ``date_from`` is after ``date_to``."""
        out: list[ColumnElement[bool]] = []
        for column, value in (
            (Trace.intent, self.intent),
            (Trace.tier, self.tier),
            (Trace.path, self.path),
            (Trace.channel, self.channel),
            (Trace.status, self.status),
            (Trace.assistant_id, self.assistant_id),
            (Trace.conversation_id, self.conversation_id),
        ):
            if value is not None:
                out.append(column == value)
        if self.degraded is not None:
            out.append(Trace.degraded.is_(self.degraded))
        if self.error is not None:
            out.append(Trace.error_code.is_not(None) if self.error else Trace.error_code.is_(None))
        if self.date_from is not None and self.date_to is not None and self.date_from > self.date_to:
            raise UserInputError(f"date_from ({self.date_from}) is after date_to ({self.date_to})")
        if self.date_from is not None:
            out.append(Trace.started_at >= datetime.combine(self.date_from, time.min, tzinfo=UTC))
        # the last day of the calendar includes every turn: no upper bound (its day after would overflow)
        if self.date_to is not None and self.date_to < date.max:
            end = datetime.combine(self.date_to + timedelta(days=1), time.min, tzinfo=UTC)
            out.append(Trace.started_at < end)
        return out


@dataclass(frozen=True)
class ListedTurn:
    """A turn in the dashboard's list: its trace row, its question and what its events say."""

    trace: Trace
    question: str  # the user's message as stored (unmasked)
    layer: str | None
    tool_calls: list[StoredToolCall]
    degradations: list[str]


@dataclass(frozen=True)
class TurnListing:
    total: int
    items: list[ListedTurn]


@dataclass(frozen=True)
class StoredTurn:
    """One turn with everything stored about it."""

    trace: Trace
    events: list[TraceEvent]
    tool_calls: list[StoredToolCall]
    spans: list[dict[str, Any]]
    feedback: list[Feedback]
    question: Message | None
    answer: Message | None


class TraceStore:
    """Stored turns, read."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def turn(self, trace_id: str) -> StoredTurn | None:
        async with self.db.session() as s:
            trace = await s.get(Trace, trace_id)
            if trace is None:
                return None
            spans = (
                await s.scalars(
                    select(TraceSpan).where(TraceSpan.trace_id == trace_id).order_by(TraceSpan.seq)
                )
            ).all()
            events = list(
                (
                    await s.scalars(
                        select(TraceEvent).where(TraceEvent.trace_id == trace_id).order_by(TraceEvent.seq)
                    )
                ).all()
            )
            feedback = (
                await s.scalars(
                    select(Feedback).where(Feedback.trace_id == trace_id).order_by(Feedback.created_at)
                )
            ).all()
            question = await s.get(Message, trace.user_message_id)
            answer = await s.get(Message, trace.assistant_message_id) if trace.assistant_message_id else None
        calls = tool_calls_of(events)
        return StoredTurn(
            trace=trace,
            events=events,
            tool_calls=calls,
            spans=span_views(spans, calls),
            feedback=list(feedback),
            question=question,
            answer=answer,
        )

    async def page(self, filters: TurnFilters, *, limit: int, offset: int) -> TurnListing:
        """The turns matching ``filters``, newest first, and how many match in all."""
        where = filters.conditions()
        page = (
            select(Trace, Message.content)
            .where(*where)
            .outerjoin(Message, Message.id == Trace.user_message_id)
            .order_by(Trace.started_at.desc(), Trace.id)
            .limit(limit)
            .offset(offset)
        )
        async with self.db.session() as s:
            total = int(await s.scalar(select(func.count(Trace.id)).where(*where)) or 0)
            rows = (await s.execute(page)).all()
            ids = [t.id for t, _ in rows]
            events = (
                (
                    await s.scalars(
                        select(TraceEvent)
                        .where(TraceEvent.trace_id.in_(ids), TraceEvent.type.in_(_LIST_EVENTS))
                        .order_by(TraceEvent.trace_id, TraceEvent.seq)
                    )
                ).all()
                if ids
                else []
            )
        layers: dict[str, str | None] = {}
        calls: dict[str, list[TraceEvent]] = {}
        degradations: dict[str, list[str]] = {}
        for e in events:
            if e.type == "route":
                layers[e.trace_id] = e.payload.get("layer")
            elif e.type == "tool_call":
                calls.setdefault(e.trace_id, []).append(e)
            else:
                degradations.setdefault(e.trace_id, []).append(str(e.payload.get("reason")))
        items = [
            ListedTurn(
                trace=t,
                question=content or "",
                layer=layers.get(t.id),
                tool_calls=tool_calls_of(calls.get(t.id, [])),
                degradations=degradations.get(t.id, []),
            )
            for t, content in rows
        ]
        return TurnListing(total=total, items=items)

    async def latest(self, limit: int) -> list[tuple[Trace, list[dict[str, Any]]]]:
        """The latest turns, newest first, each with its spans (``careerwise traces list``)."""
        async with self.db.session() as s:
            traces = (await s.scalars(select(Trace).order_by(Trace.started_at.desc()).limit(limit))).all()
            ids = [t.id for t in traces]
            spans = (
                await s.scalars(
                    select(TraceSpan)
                    .where(TraceSpan.trace_id.in_(ids))
                    .order_by(TraceSpan.trace_id, TraceSpan.seq)
                )
            ).all()
            events = (
                await s.scalars(
                    select(TraceEvent)
                    .where(TraceEvent.trace_id.in_(ids), TraceEvent.type.in_(("tool_call", "tool_result")))
                    .order_by(TraceEvent.trace_id, TraceEvent.seq)
                )
            ).all()
        by_trace: dict[str, list[TraceSpan]] = {}
        for span in spans:
            by_trace.setdefault(span.trace_id, []).append(span)
        events_of: dict[str, list[TraceEvent]] = {}
        for e in events:
            events_of.setdefault(e.trace_id, []).append(e)
        return [
            (t, span_views(by_trace.get(t.id, []), tool_calls_of(events_of.get(t.id, [])))) for t in traces
        ]
