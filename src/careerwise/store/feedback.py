"""Feedback on answers: one rating per assistant message, by the owner of its conversation."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from careerwise.errors import ConflictError, NotFoundError, PermissionDeniedError, UserInputError
from careerwise.store.db import Database
from careerwise.store.models import Conversation, Message, Trace
from careerwise.store.models_observability import Feedback

__all__ = ["FeedbackStore", "StoredRating"]


@dataclass(frozen=True)
class StoredRating:
    id: str
    message_id: str
    conversation_id: str
    trace_id: str | None
    rating: str
    comment: str | None
    replaced: bool  # it replaced an earlier rating of the message
    created_at: datetime
    updated_at: datetime


class FeedbackStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def rate(
        self, *, message_id: str, rating: str, comment: str | None, user_id: str | None
    ) -> StoredRating:
        """Stores the rating (replacing an earlier one) of an answer in a conversation of ``user_id``
        (None: anonymous). Raises NotFoundError for an unknown message or one in someone else's
        conversation, PermissionDeniedError for an anonymous conversation's answer rated by a user,
        UserInputError for a user's message and ConflictError for an answer still being written."""
        try:
            return await self._rate(message_id, rating, comment, user_id)
        except IntegrityError:
            # two first ratings of one message at the same moment: the other one's row exists now
            return await self._rate(message_id, rating, comment, user_id)

    async def _rate(
        self, message_id: str, rating: str, comment: str | None, user_id: str | None
    ) -> StoredRating:
        async with self.db.session() as s, s.begin():
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
            return StoredRating(
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
