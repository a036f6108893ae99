"""Conversations and their messages as the chat page reads them, and what the turns' traces add to
each answer: the stored events (the report, the tool calls with their effective arguments, the sources,
the notices) and the feedback given. Who may see what is the API's to decide (api/conversations.py)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, select

from careerwise.errors import ConversationBusyError
from careerwise.store.db import Database
from careerwise.store.models import Conversation, Message, TraceEvent
from careerwise.store.models_observability import Feedback

__all__ = ["ConversationStore", "MessageExtras"]

# the events a stored answer is shown with
VIEW_EVENTS = ("tool_call", "tool_result", "report", "degraded", "error")
_IN_BATCH = 500  # ids per IN (...) list


@dataclass(frozen=True)
class MessageExtras:
    """Per answer: its turn's stored view events in stream order (by trace id) and its rating."""

    events: dict[str, list[TraceEvent]]
    ratings: dict[str, str]


class ConversationStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def get(self, conversation_id: str) -> Conversation | None:
        async with self.db.session() as s:
            return await s.get(Conversation, conversation_id)

    async def of_user(self, user_id: str, *, channel: str, limit: int) -> list[Conversation]:
        """The user's conversations on ``channel``, most recently active first."""
        async with self.db.session() as s:
            rows = await s.scalars(
                select(Conversation)
                .where(Conversation.user_id == user_id, Conversation.channel == channel)
                .order_by(Conversation.updated_at.desc(), Conversation.id)
                .limit(limit)
            )
            return list(rows)

    async def create(self, *, title: str, channel: str, user_id: str | None) -> Conversation:
        conv = Conversation(title=title, channel=channel, user_id=user_id)
        async with self.db.session() as s, s.begin():
            s.add(conv)
            await s.flush()
        return conv

    async def messages(self, conversation_id: str) -> list[Message]:
        """The conversation's messages, oldest first; of a turn's two, the question first (created in one
        transaction, they can share a timestamp)."""
        async with self.db.session() as s:
            rows = list(await s.scalars(select(Message).where(Message.conversation_id == conversation_id)))
        rows.sort(key=lambda m: (m.created_at, m.role != "user"))
        return rows

    async def message(self, message_id: str) -> tuple[Message | None, Conversation | None]:
        """A message and its conversation (None for an unknown id)."""
        async with self.db.session() as s:
            message = await s.get(Message, message_id)
            conv = await s.get(Conversation, message.conversation_id) if message is not None else None
        return message, conv

    async def extras(self, messages: Sequence[Message]) -> MessageExtras:
        """The view events of the answers' turns and the answers' ratings."""
        trace_ids = sorted({m.trace_id for m in messages if m.role == "assistant" and m.trace_id})
        answer_ids = sorted(m.id for m in messages if m.role == "assistant")
        events: dict[str, list[TraceEvent]] = defaultdict(list)
        ratings: dict[str, str] = {}
        async with self.db.session() as s:
            for start in range(0, len(trace_ids), _IN_BATCH):
                batch = trace_ids[start : start + _IN_BATCH]
                rows = await s.scalars(
                    select(TraceEvent)
                    .where(TraceEvent.trace_id.in_(batch), TraceEvent.type.in_(VIEW_EVENTS))
                    .order_by(TraceEvent.trace_id, TraceEvent.seq)
                )
                for row in rows:
                    events[row.trace_id].append(row)
            for start in range(0, len(answer_ids), _IN_BATCH):
                batch = answer_ids[start : start + _IN_BATCH]
                found = await s.execute(
                    select(Feedback.message_id, Feedback.rating).where(Feedback.message_id.in_(batch))
                )
                ratings.update({message_id: rating for message_id, rating in found})
        return MessageExtras(events=dict(events), ratings=ratings)

    async def delete_unless_answering(self, conversation_id: str, *, since: datetime) -> None:
        """Deletes the conversation with its messages, traces and feedback (the database cascades).
        Raises ConversationBusyError while a reply written after ``since`` is pending: the turn writing
        it would find its rows gone (an older pending reply is left over from a crashed process)."""
        async with self.db.session() as s, s.begin():
            running = await s.scalar(
                select(Message.id)
                .where(
                    Message.conversation_id == conversation_id,
                    Message.status == "pending",
                    Message.created_at > since,
                )
                .limit(1)
            )
            if running is not None:
                raise ConversationBusyError(
                    "an answer is still being written in this conversation; stop it first"
                )
            await s.execute(delete(Conversation).where(Conversation.id == conversation_id))
