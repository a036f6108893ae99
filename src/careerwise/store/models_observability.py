"""Observability tables: a turn's spans and the feedback on answers (migration 0007).

The trace row (``traces``) is the turn; ``trace_spans`` are its parts on one timeline, each with a start
offset from the turn's start and a duration: the routing, every LLM call, every tool call, every
degradation and error. Attributes are masked before they get here (careerwise.tracing.masking).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import DateTime, Float, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from careerwise.store.models import Base, new_id, utcnow


class TraceSpan(Base):
    __tablename__ = "trace_spans"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    trace_id: Mapped[str] = mapped_column(ForeignKey("traces.id", ondelete="CASCADE"), index=True)
    seq: Mapped[int] = mapped_column(Integer)
    # route | llm | tool | degraded | error
    kind: Mapped[str] = mapped_column(String(16))
    # "route", "chat fake-model", "execute_tool searchKnowledge", a degradation reason, an error code
    name: Mapped[str] = mapped_column(String(160))
    start_ms: Mapped[float] = mapped_column(Float)
    duration_ms: Mapped[float] = mapped_column(Float, default=0.0)
    status: Mapped[str] = mapped_column(String(16), default="ok")  # ok | error
    attributes: Mapped[dict[str, Any]] = mapped_column(default=dict)


class Feedback(Base):
    """Thumbs up or down on one assistant message, by the owner of its conversation.

    One row per message: only the conversation's owner may rate it (anonymous conversations: anonymous
    callers), so "one per message per user" is "one per message"; a second rating replaces the first.
    """

    __tablename__ = "feedback"
    __table_args__ = (UniqueConstraint("message_id", name="uq_feedback_message_id"),)
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    message_id: Mapped[str] = mapped_column(ForeignKey("messages.id", ondelete="CASCADE"))
    conversation_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), index=True
    )
    trace_id: Mapped[str | None] = mapped_column(String(32), index=True, default=None)
    assistant_id: Mapped[str] = mapped_column(String(64), index=True, default="summer")
    user_id: Mapped[str | None] = mapped_column(String(32), index=True, default=None)
    rating: Mapped[str] = mapped_column(String(8))  # up | down
    comment: Mapped[str | None] = mapped_column(Text, default=None)  # masked
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
