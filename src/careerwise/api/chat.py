"""``POST /api/chat``: Server-Sent Events by default, one JSON body with ``mode: "full"``."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, StringConstraints, field_validator

from careerwise.api._sse import EventStreamResponse, sse_with_keepalive
from careerwise.api._strict import REQUEST_MODEL
from careerwise.api.auth import OptionalUser, client_ip
from careerwise.api.deps import EngineDep, LimitersDep, SettingsDep
from careerwise.api.error_models import errors
from careerwise.engine import HistoryItem, TurnRequest
from careerwise.events import DeltaEvent, Event, event_to_sse
from careerwise.ratelimit import is_young
from careerwise.reply import TurnReply
from careerwise.store import User

router = APIRouter(tags=["chat"])
MAX_CHARS = 4000


class HistoryIn(BaseModel):
    model_config = REQUEST_MODEL
    role: Literal["user", "assistant"]
    content: Annotated[str, StringConstraints(max_length=MAX_CHARS * 4)]


class ChatIn(BaseModel):
    model_config = REQUEST_MODEL
    message: Annotated[str, StringConstraints(max_length=MAX_CHARS)] = Field(
        description="The user's message (1 to 4,000 characters, not only whitespace)."
    )
    history: Annotated[list[HistoryIn], Field(max_length=200)] = Field(default_factory=list)
    mode: Literal["stream", "full"] = "stream"
    conversation_id: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{32}$")] | None = None
    assistant: Annotated[str, StringConstraints(max_length=64)] = Field(
        default="summer", description="Which assistant answers; unknown: 404, disabled: 409."
    )

    @field_validator("message")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("message must not be empty or only whitespace")
        return v


def _turn(body: ChatIn, user: User | None, ip: str, *, young: bool) -> TurnRequest:
    return TurnRequest(
        message=body.message,
        history=[HistoryItem(h.role, h.content) for h in body.history] if body.history else None,
        conversation_id=body.conversation_id,
        user_id=user.id if user else None,
        budget_key=None if user else f"ip:{ip}",
        budget_group=f"young-ip:{ip}" if young else None,
        client=f"ip:{ip}",
        assistant=body.assistant,
    )


@router.post(
    "/api/chat",
    responses={200: {"content": {"text/event-stream": {}, "application/json": {}}}, **errors(404, 409, 429)},
    response_model=None,
)
async def chat(
    body: ChatIn,
    request: Request,
    settings: SettingsDep,
    limiters: LimitersDep,
    engine: EngineDep,
    user: OptionalUser,
) -> EventStreamResponse | JSONResponse:
    ip = client_ip(request)
    young = user is not None and is_young(user.created_at, hours=settings.young_account_hours)
    if user is None:
        await limiters.anonymous_chat.hit(ip, "messages without an account")
    else:
        if young:  # one ceiling for all the new accounts of this IP, beside each account's own
            await limiters.young_accounts_chat.hit(ip, "messages from new accounts on this network")
        await limiters.user_chat.hit(user.id, "messages")
    gen = engine.run(_turn(body, user, ip, young=young))
    # the first event comes after validation and storage: input errors become 4xx before any byte is sent
    first = await gen.__anext__()
    if body.mode == "full":
        events: list[Event] = [first]
        async for e in gen:
            events.append(e)
        return JSONResponse(TurnReply.from_events(events).model_dump(mode="json"))

    frames = sse_with_keepalive(
        gen,
        settings.sse_keepalive_interval,
        flush_interval=settings.sse_flush_interval_ms / 1000,
        text_sent=isinstance(first, DeltaEvent) and bool(first.text),
        coalesce_behind=settings.sse_coalesce_behind_ms / 1000,
    )
    # the first frame is written as the response's prefix: no generator wrapped around the frames just
    # to put it in front (one resumption less per frame)
    return EventStreamResponse(frames, prefix=event_to_sse(first))
