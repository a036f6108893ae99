"""Resumes and their reviews, per owner: a user, or (for a visitor without an account) a conversation.

``owner_key`` is ``user:<id>`` or ``conversation:<id>``; versions count up per owner and the pair is
unique, so two uploads at once cannot both become version 2. The text is stored with contact details
masked (the review never needs them); ``sha256`` is of the text as extracted, to tell a re-upload of the
same file. Deleting a user or an anonymous owner's conversation deletes their resumes and reviews.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import DateTime, Float, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from careerwise.store.models import Base, new_id, utcnow


class Resume(Base):
    __tablename__ = "resumes"
    __table_args__ = (UniqueConstraint("owner_key", "version", name="uq_resumes_owner_version"),)
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    owner_key: Mapped[str] = mapped_column(String(80), index=True)
    user_id: Mapped[str | None] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), index=True, default=None
    )
    # set for anonymous owners only: their resumes live and die with the conversation
    conversation_id: Mapped[str | None] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), index=True, default=None
    )
    version: Mapped[int] = mapped_column(Integer)
    filename: Mapped[str | None] = mapped_column(String(255), default=None)
    kind: Mapped[str] = mapped_column(String(10))  # pdf | docx | text | chat
    pages: Mapped[int | None] = mapped_column(Integer, default=None)
    chars: Mapped[int] = mapped_column(Integer, default=0)
    sha256: Mapped[str] = mapped_column(String(64))
    text: Mapped[str] = mapped_column(Text)  # contact details masked
    contact: Mapped[dict[str, Any]] = mapped_column(default=dict)  # what was masked: counts per kind
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ResumeReview(Base):
    __tablename__ = "resume_reviews"
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    resume_id: Mapped[str] = mapped_column(ForeignKey("resumes.id", ondelete="CASCADE"), index=True)
    target_role: Mapped[str | None] = mapped_column(String(200), default=None)
    scores: Mapped[dict[str, Any]] = mapped_column(default=dict)  # section -> {score, criteria, comment}
    overall: Mapped[float] = mapped_column(Float, default=0.0)
    structure_source: Mapped[str] = mapped_column(String(10), default="headings")  # llm | headings
    scoring_source: Mapped[str] = mapped_column(String(10), default="rules")  # llm | rules
    degraded: Mapped[list[Any]] = mapped_column(default=list)
    report: Mapped[dict[str, Any]] = mapped_column(default=dict)  # the ReportEvent as the user saw it
    trace_id: Mapped[str | None] = mapped_column(String(32), index=True, default=None)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
