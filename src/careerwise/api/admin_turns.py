"""Admin: stored turns (traces) with filters, and one turn's timeline.

Tool calls are read from the stored ``tool_call`` / ``tool_result`` event rows, the very payloads the
user's stream carried (shared/DESIGN.md principle 1), through store/traces.py as ``careerwise traces``
reads them: the dashboard never rebuilds requested or effective arguments from anything else, so it
cannot show a value the user did not see (seed 004).
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated, Any, Literal

from fastapi import Query
from pydantic import BaseModel

from careerwise.api.admin_common import admin_router
from careerwise.api.deps import TracesDep
from careerwise.api.error_models import errors
from careerwise.errors import NotFoundError
from careerwise.store import as_utc
from careerwise.store.traces import StoredToolCall, TurnFilters
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


@router.get("/turns", responses=errors(400))
async def list_turns(
    traces: TracesDep,
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
    filters = TurnFilters(
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
    )
    listing = await traces.page(filters, limit=limit, offset=offset)
    items = [
        TurnRow(
            id=t.id,
            started_at=as_utc(t.started_at),
            conversation_id=t.conversation_id,
            assistant_id=t.assistant_id,
            channel=t.channel,
            intent=t.intent,
            tier=t.tier,
            layer=row.layer,
            flow=t.flow,
            path=t.path,
            status=t.status,
            error_code=t.error_code,
            degraded=t.degraded,
            degradations=row.degradations,
            model=t.model,
            duration_ms=t.duration_ms,
            first_text_ms=t.first_text_ms,
            question=mask_text(row.question)[:PREVIEW_CHARS],
            tool_calls=[_tool_call_view(c) for c in row.tool_calls],
        )
        for row in listing.items
        for t in (row.trace,)
    ]
    return TurnPage(total=listing.total, limit=limit, offset=offset, items=items)


def _tool_call_view(call: StoredToolCall) -> dict[str, Any]:
    """The stored tool_call payload's fields, unchanged (no recomputation)."""
    return {
        key: call.call.get(key)
        for key in ("call_id", "name", "requested_arguments", "effective_arguments", "reason")
    }


@router.get("/turns/{trace_id}", responses=errors(404))
async def turn_timeline(trace_id: str, traces: TracesDep) -> dict[str, Any]:
    """One turn: the trace row, every span on one timeline (start offset and duration, in ms from the
    turn's start), the routing record, the LLM calls, the tool calls as the stream showed them with
    their results, degradations, errors, every stored event and the feedback on the answer."""
    turn = await traces.turn(trace_id)
    if turn is None:
        raise NotFoundError(f"no turn {trace_id!r}")
    route: dict[str, Any] | None = None
    degradations: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    for e in turn.events:
        body = {k: v for k, v in e.payload.items() if k != "type"}
        if e.type == "route" and route is None:
            route = body
        elif e.type == "degraded":
            degradations.append({**body, "t_ms": e.t_ms})
        elif e.type == "error":
            errors.append({**body, "t_ms": e.t_ms})
    tool_calls = [
        {
            **c.call,
            "t_ms": c.t_ms,
            "result": {**c.result, "t_ms": c.result_t_ms} if c.result is not None else None,
        }
        for c in turn.tool_calls
    ]
    question, answer = turn.question, turn.answer
    return {
        "trace": trace_header(turn.trace),
        "question": mask_text(question.content) if question else "",
        "answer": mask_text(answer.content) if answer else "",
        "answer_status": answer.status if answer else None,
        "route": route,
        "spans": turn.spans,
        "llm_calls": [sp for sp in turn.spans if sp["kind"] == "llm"],
        "tool_calls": tool_calls,
        "degradations": degradations,
        "errors": errors,
        "events": [{"seq": e.seq, "t_ms": e.t_ms, "type": e.type, "payload": e.payload} for e in turn.events],
        "feedback": [
            {
                "rating": f.rating,
                "comment": f.comment,
                "user_id": f.user_id,
                "created_at": as_utc(f.created_at).isoformat(),
            }
            for f in turn.feedback
        ],
    }
