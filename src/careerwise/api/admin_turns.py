"""Admin: stored turns (traces) with filters, and one turn's timeline.

Tool calls are read from the stored ``tool_call`` / ``tool_result`` event rows, the very payloads the
user's stream carried (shared/DESIGN.md principle 1): the dashboard never rebuilds requested or effective
arguments from anything else, so it cannot show a value the user did not see (seed 004).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated, Any, Literal

from fastapi import Query
from pydantic import BaseModel
from sqlalchemy import ColumnElement, func, select

from careerwise.api.admin_common import admin_router
from careerwise.api.deps import ServicesDep
from careerwise.api.error_models import errors
from careerwise.errors import NotFoundError, UserInputError
from careerwise.store import Feedback, Message, Trace, TraceEvent, TraceSpan, as_utc
from careerwise.tracing.export import trace_header
from careerwise.tracing.masking import mask_text

router = admin_router("admin: turns")
PREVIEW_CHARS = 160


class TurnRow(BaseModel):
    id: str
    started_at: datetime
    conversation_id: str
    assistant_id: str
    channel: str
    intent: str | None
    tier: str | None
    layer: str | None
    flow: str | None
    path: str | None
    status: str
    error_code: str | None
    degraded: bool
    degradations: list[str]
    model: str | None
    duration_ms: float | None
    first_text_ms: float | None
    question: str
    tool_calls: list[dict[str, Any]]


class TurnPage(BaseModel):
    total: int
    limit: int
    offset: int
    items: list[TurnRow]


@dataclass(frozen=True)
class TurnFilters:
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


@router.get("/turns", responses=errors(400))
async def list_turns(
    services: ServicesDep,
    intent: Literal["greeting", "career", "resume", "booking", "offtopic"] | None = None,
    tier: Literal["simple", "medium", "complex"] | None = None,
    path: Annotated[str | None, Query(max_length=20, description="A, B, greeting, ...")] = None,
    channel: Annotated[str | None, Query(max_length=20, description="web, line, openai, ...")] = None,
    status: Literal["running", "ok", "error", "cancelled"] | None = None,
    degraded: bool | None = None,
    error: Annotated[bool | None, Query(description="true: turns that ended with an error event")] = None,
    assistant_id: Annotated[str | None, Query(max_length=64)] = None,
    conversation_id: Annotated[str | None, Query(pattern=r"^[0-9a-f]{32}$")] = None,
    date_from: Annotated[date | None, Query(description="First UTC day, included.")] = None,
    date_to: Annotated[date | None, Query(description="Last UTC day, included.")] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> TurnPage:
    where = TurnFilters(
        intent=intent,
        tier=tier,
        path=path,
        channel=channel,
        status=status,
        degraded=degraded,
        error=error,
        assistant_id=assistant_id,
        conversation_id=conversation_id,
        date_from=date_from,
        date_to=date_to,
    ).conditions()
    page = (
        select(Trace, Message.content)
        .where(*where)
        .outerjoin(Message, Message.id == Trace.user_message_id)
        .order_by(Trace.started_at.desc(), Trace.id)
        .limit(limit)
        .offset(offset)
    )
    async with services.db.session() as s:
        total = int(await s.scalar(select(func.count(Trace.id)).where(*where)) or 0)
        rows = (await s.execute(page)).all()
        ids = [t.id for t, _ in rows]
        events = (
            (
                await s.scalars(
                    select(TraceEvent)
                    .where(
                        TraceEvent.trace_id.in_(ids),
                        TraceEvent.type.in_(("route", "tool_call", "degraded")),
                    )
                    .order_by(TraceEvent.trace_id, TraceEvent.seq)
                )
            ).all()
            if ids
            else []
        )
    layers: dict[str, str | None] = {}
    calls: dict[str, list[dict[str, Any]]] = {}
    degradations: dict[str, list[str]] = {}
    for e in events:
        if e.type == "route":
            layers[e.trace_id] = e.payload.get("layer")
        elif e.type == "tool_call":
            calls.setdefault(e.trace_id, []).append(_tool_call_view(e.payload))
        else:
            degradations.setdefault(e.trace_id, []).append(str(e.payload.get("reason")))
    items = [
        TurnRow(
            id=t.id,
            started_at=as_utc(t.started_at),
            conversation_id=t.conversation_id,
            assistant_id=t.assistant_id,
            channel=t.channel,
            intent=t.intent,
            tier=t.tier,
            layer=layers.get(t.id),
            flow=t.flow,
            path=t.path,
            status=t.status,
            error_code=t.error_code,
            degraded=t.degraded,
            degradations=degradations.get(t.id, []),
            model=t.model,
            duration_ms=t.duration_ms,
            first_text_ms=t.first_text_ms,
            question=mask_text(content or "")[:PREVIEW_CHARS],
            tool_calls=calls.get(t.id, []),
        )
        for t, content in rows
    ]
    return TurnPage(total=total, limit=limit, offset=offset, items=items)


def _tool_call_view(payload: dict[str, Any]) -> dict[str, Any]:
    """The stored tool_call payload's fields, unchanged (no recomputation)."""
    return {
        "call_id": payload.get("call_id"),
        "name": payload.get("name"),
        "requested_arguments": payload.get("requested_arguments"),
        "effective_arguments": payload.get("effective_arguments"),
        "reason": payload.get("reason"),
    }


def _span_view(span: TraceSpan) -> dict[str, Any]:
    return {
        "seq": span.seq,
        "kind": span.kind,
        "name": span.name,
        "start_ms": span.start_ms,
        "duration_ms": span.duration_ms,
        "status": span.status,
        "attributes": span.attributes,
    }


@router.get("/turns/{trace_id}", responses=errors(404))
async def turn_timeline(trace_id: str, services: ServicesDep) -> dict[str, Any]:
    """One turn: the trace row, every span on one timeline (start offset and duration, in ms from the
    turn's start), the routing record, the LLM calls, the tool calls as the stream showed them with
    their results, degradations, errors, every stored event and the feedback on the answer."""
    async with services.db.session() as s:
        trace = await s.get(Trace, trace_id)
        if trace is None:
            raise NotFoundError(f"no turn {trace_id!r}")
        spans = (
            await s.scalars(select(TraceSpan).where(TraceSpan.trace_id == trace_id).order_by(TraceSpan.seq))
        ).all()
        events = (
            await s.scalars(
                select(TraceEvent).where(TraceEvent.trace_id == trace_id).order_by(TraceEvent.seq)
            )
        ).all()
        feedback = (
            await s.scalars(
                select(Feedback).where(Feedback.trace_id == trace_id).order_by(Feedback.created_at)
            )
        ).all()
        question = await s.get(Message, trace.user_message_id)
        answer = await s.get(Message, trace.assistant_message_id) if trace.assistant_message_id else None
    route: dict[str, Any] | None = None
    tool_calls: list[dict[str, Any]] = []
    by_call: dict[str, dict[str, Any]] = {}
    degradations: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    for e in events:
        body = {k: v for k, v in e.payload.items() if k != "type"}
        if e.type == "route" and route is None:
            route = body
        elif e.type == "tool_call":
            entry = {**body, "t_ms": e.t_ms, "result": None}
            tool_calls.append(entry)
            by_call[str(body.get("call_id"))] = entry
        elif e.type == "tool_result":
            target = by_call.get(str(body.get("call_id")))
            if target is not None:
                target["result"] = {**body, "t_ms": e.t_ms}
        elif e.type == "degraded":
            degradations.append({**body, "t_ms": e.t_ms})
        elif e.type == "error":
            errors.append({**body, "t_ms": e.t_ms})
    span_views = [_span_view(sp) for sp in spans]
    return {
        "trace": trace_header(trace),
        "question": mask_text(question.content) if question else "",
        "answer": mask_text(answer.content) if answer else "",
        "answer_status": answer.status if answer else None,
        "route": route,
        "spans": span_views,
        "llm_calls": [sp for sp in span_views if sp["kind"] == "llm"],
        "tool_calls": tool_calls,
        "degradations": degradations,
        "errors": errors,
        "events": [{"seq": e.seq, "t_ms": e.t_ms, "type": e.type, "payload": e.payload} for e in events],
        "feedback": [
            {
                "rating": f.rating,
                "comment": f.comment,
                "user_id": f.user_id,
                "created_at": as_utc(f.created_at).isoformat(),
            }
            for f in feedback
        ],
    }
