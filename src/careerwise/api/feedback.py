"""``POST /api/messages/{message_id}/feedback``: thumbs up or down (and an optional comment) on an answer.

Only the owner of the conversation may rate its answers: a logged-in user their own conversations,
an anonymous caller the anonymous ones (``user_id`` NULL). One rating per message; a second replaces the
first. The row carries the answer's trace id, so the dashboard shows feedback next to the turn. The
comment is masked like a trace (it is read by administrators, not shown back as history).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Path
from pydantic import BaseModel, Field, StringConstraints

from careerwise.api._strict import REQUEST_MODEL
from careerwise.api.auth import OptionalUser
from careerwise.api.deps import FeedbackDep, MetricsDep
from careerwise.api.error_models import errors
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
    message_id: MessageId, body: FeedbackIn, feedback: FeedbackDep, metrics: MetricsDep, user: OptionalUser
) -> FeedbackOut:
    comment = mask_text(body.comment.strip()) if body.comment and body.comment.strip() else None
    stored = await feedback.rate(
        message_id=message_id,
        rating=body.rating,
        comment=comment,
        user_id=user.id if user is not None else None,
    )
    metrics.feedback.labels(body.rating).inc()
    return FeedbackOut(
        id=stored.id,
        message_id=stored.message_id,
        conversation_id=stored.conversation_id,
        trace_id=stored.trace_id,
        rating=stored.rating,
        comment=stored.comment,
        replaced=stored.replaced,
        created_at=stored.created_at,
        updated_at=stored.updated_at,
    )
