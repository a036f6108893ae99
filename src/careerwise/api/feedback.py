"""``POST /api/messages/{message_id}/feedback``: thumbs up or down (and an optional comment) on an answer.

Only the owner of the conversation may rate its answers: a logged-in user their own conversations,
an anonymous caller the anonymous ones (``user_id`` NULL). One rating per message; a second replaces the
first. The row carries the answer's trace id, so the dashboard shows feedback next to the turn. The
comment is masked like a trace (it is read by administrators, not shown back as history).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Path
from pydantic import BaseModel, Field, StringConstraints
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from careerwise.api._strict import REQUEST_MODEL
from careerwise.api.auth import OptionalUser
from careerwise.api.deps import ServicesDep
from careerwise.api.error_models import errors
from careerwise.errors import ConflictError, NotFoundError, PermissionDeniedError, UserInputError
from careerwise.services import Services
from careerwise.store import Conversation, Feedback, Message, Trace
from careerwise.tracing.masking import mask_text

router = APIRouter(tags=["feedback"])
MAX_COMMENT = 1000


class FeedbackIn(BaseModel):
    model_config = REQUEST_MODEL
    rating: Literal["up", "down"]
    comment: Annotated[str, StringConstraints(max_length=MAX_COMMENT)] | None = Field(
        default=None, description="Optional, at most 1,000 characters."
    )


class FeedbackOut(BaseModel):
    id: str
    message_id: str
    conversation_id: str
    trace_id: str | None
    rating: str
    comment: str | None
    replaced: bool = Field(description="True when this rating replaced an earlier one.")
    created_at: datetime
    updated_at: datetime


MessageId = Annotated[str, Path(pattern=r"^[0-9a-f]{32}$", description="The assistant message's id.")]


@router.post("/api/messages/{message_id}/feedback", responses=errors(404, 409))
async def give_feedback(
    message_id: MessageId, body: FeedbackIn, services: ServicesDep, user: OptionalUser
) -> FeedbackOut:
    comment = mask_text(body.comment.strip()) if body.comment and body.comment.strip() else None
    user_id = user.id if user is not None else None
    try:
        out = await _store(services, message_id, body.rating, comment, user_id)
    except IntegrityError:
        # two first ratings of one message at the same moment: the other one's row exists now
        out = await _store(services, message_id, body.rating, comment, user_id)
    services.engine.telemetry.metrics.feedback.labels(body.rating).inc()
    return out


async def _store(
    services: Services, message_id: str, rating: str, comment: str | None, user_id: str | None
) -> FeedbackOut:
    async with services.db.session() as s, s.begin():
        message = await s.get(Message, message_id)
        conv = await s.get(Conversation, message.conversation_id) if message is not None else None
        if message is None or conv is None or (conv.user_id is not None and conv.user_id != user_id):
            # someone else's conversation looks exactly like a missing one
            raise NotFoundError(f"message {message_id} does not exist")
        if conv.user_id is None and user_id is not None:
            raise PermissionDeniedError(
                "this answer is in a conversation held without an account; only an anonymous caller "
                "(logged out) can rate it"
            )
        if message.role != "assistant":
            raise UserInputError("only an assistant's answer can be rated")
        if message.status == "pending":
            raise ConflictError("this answer is still being written; rate it when it is finished")
        row = await s.scalar(select(Feedback).where(Feedback.message_id == message_id))
        now = datetime.now(UTC)
        replaced = row is not None
        if row is None:
            trace = await s.get(Trace, message.trace_id) if message.trace_id else None
            row = Feedback(
                message_id=message_id,
                conversation_id=conv.id,
                trace_id=message.trace_id,
                assistant_id=trace.assistant_id if trace is not None else conv.assistant_id,
                user_id=user_id,
                rating=rating,
                comment=comment,
                created_at=now,
                updated_at=now,
            )
            s.add(row)
        else:
            row.rating, row.comment, row.updated_at = rating, comment, now
        await s.flush()
        return FeedbackOut(
            id=row.id,
            message_id=message_id,
            conversation_id=conv.id,
            trace_id=row.trace_id,
            rating=row.rating,
            comment=row.comment,
            replaced=replaced,
            created_at=row.created_at,
            updated_at=row.updated_at,
        )
