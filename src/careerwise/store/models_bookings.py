"""Consultation booking tables: availability (weekly windows, dated exceptions, per-coach settings),
bookings, and the chat's booking dialogue state. Schema: migration 0008.

The rule "a slot is never booked twice" lives in the database: ``uq_bookings_active_slot`` is a
partial unique index on (coach_id, slot_start) over active rows (SQLite and PostgreSQL both support
``CREATE UNIQUE INDEX ... WHERE``). Slots are fixed-length and start on the coach's grid, so a unique
start is the same as "no two active bookings overlap"; docs/bookings.md explains why this was chosen
over a PostgreSQL exclusion constraint.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy import CheckConstraint, Date, DateTime, ForeignKey, Index, Integer, String, text
from sqlalchemy.orm import Mapped, mapped_column

from careerwise.store.models import Base, new_id, utcnow

ACTIVE_ONLY = text("status = 'active'")


class BookingSettings(Base):
    """One coach's booking rules. A coach without a row gets the defaults (see careerwise.booking)."""

    __tablename__ = "booking_settings"
    coach_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    slot_minutes: Mapped[int] = mapped_column(Integer, default=30)
    timezone: Mapped[str] = mapped_column(String(64), default="Asia/Taipei")
    horizon_days: Mapped[int] = mapped_column(Integer, default=28)
    min_notice_minutes: Mapped[int] = mapped_column(Integer, default=60)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_by: Mapped[str] = mapped_column(String(120), default="")
    # null: the weekly hours were never confirmed, so the shipped defaults apply (migration 0018)
    hours_confirmed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)


class AvailabilityWindow(Base):
    """Weekly hours: on ``weekday`` (0 = Monday), from ``start_minute`` to ``end_minute`` after local
    midnight. A weekday can have several windows (morning and afternoon)."""

    __tablename__ = "availability_windows"
    __table_args__ = (
        CheckConstraint("weekday BETWEEN 0 AND 6", name="ck_availability_windows_weekday"),
        CheckConstraint(
            "start_minute >= 0 AND end_minute <= 1440 AND start_minute < end_minute",
            name="ck_availability_windows_range",
        ),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    coach_id: Mapped[str] = mapped_column(String(64), index=True)
    weekday: Mapped[int] = mapped_column(Integer)
    start_minute: Mapped[int] = mapped_column(Integer)
    end_minute: Mapped[int] = mapped_column(Integer)


class AvailabilityException(Base):
    """A dated change to the weekly hours: ``closed`` (the whole day when no times are given, else just
    that range) or ``extra`` (hours added that day)."""

    __tablename__ = "availability_exceptions"
    __table_args__ = (
        CheckConstraint("kind IN ('closed', 'extra')", name="ck_availability_exceptions_kind"),
        CheckConstraint(
            "(start_minute IS NULL AND end_minute IS NULL AND kind = 'closed') OR "
            "(start_minute >= 0 AND end_minute <= 1440 AND start_minute < end_minute)",
            name="ck_availability_exceptions_range",
        ),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    coach_id: Mapped[str] = mapped_column(String(64), index=True)
    day: Mapped[date] = mapped_column(Date)
    kind: Mapped[str] = mapped_column(String(8))
    start_minute: Mapped[int | None] = mapped_column(Integer, default=None)
    end_minute: Mapped[int | None] = mapped_column(Integer, default=None)
    note: Mapped[str] = mapped_column(String(200), default="")


class Booking(Base):
    """One booked slot. A reschedule marks the row ``rescheduled`` and adds a new active row whose
    ``rescheduled_from`` points back; every row of that chain shares ``origin_id`` (what an anonymous
    caller's booking token names)."""

    __tablename__ = "bookings"
    __table_args__ = (
        # do not 'simplify' into a plain unique constraint: cancelled and rescheduled rows keep their
        # slot_start, and the slot must be bookable again
        Index(
            "uq_bookings_active_slot",
            "coach_id",
            "slot_start",
            unique=True,
            sqlite_where=ACTIVE_ONLY,
            postgresql_where=ACTIVE_ONLY,
        ),
        Index("uq_bookings_idempotency_key", "idempotency_key", unique=True),
        CheckConstraint("status IN ('active', 'cancelled', 'rescheduled')", name="ck_bookings_status"),
        CheckConstraint("slot_end > slot_start", name="ck_bookings_slot_order"),
    )
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    coach_id: Mapped[str] = mapped_column(String(64))
    slot_start: Mapped[datetime] = mapped_column(DateTime(timezone=True))  # UTC
    slot_end: Mapped[datetime] = mapped_column(DateTime(timezone=True))  # UTC
    user_id: Mapped[str | None] = mapped_column(String(64), index=True, default=None)
    conversation_id: Mapped[str | None] = mapped_column(
        ForeignKey("conversations.id", ondelete="SET NULL"), index=True, default=None
    )
    name: Mapped[str] = mapped_column(String(80))
    contact: Mapped[str] = mapped_column(String(254))
    contact_kind: Mapped[str] = mapped_column(String(8))  # email / line
    status: Mapped[str] = mapped_column(String(16), default="active")
    channel: Mapped[str] = mapped_column(String(20), default="web")
    idempotency_key: Mapped[str | None] = mapped_column(String(200), default=None)
    request_hash: Mapped[str | None] = mapped_column(String(64), default=None)
    origin_id: Mapped[str] = mapped_column(String(32), index=True)
    rescheduled_from: Mapped[str | None] = mapped_column(String(32), default=None)
    # who made it ("ip:1.2.3.4", "line:U123"; migration 0017): the per-client booking limits count these
    client_key: Mapped[str | None] = mapped_column(String(80), index=True, default=None)
    # what the consultation is about: given on the API, or the chat message that asked to book (0018)
    topic: Mapped[str | None] = mapped_column(String(200), default=None)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class BookingDialogue(Base):
    """Where a chat booking dialogue stands in one conversation (the step, the slots offered, the name
    and contact given so far). Kept in the database, not in process memory, so the next message can
    land on another process or after a restart."""

    __tablename__ = "booking_dialogues"
    conversation_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), primary_key=True
    )
    step: Mapped[str] = mapped_column(String(20))
    lang: Mapped[str] = mapped_column(String(5), default="zh")
    data: Mapped[dict[str, Any]] = mapped_column(default=dict)
    nonce: Mapped[str] = mapped_column(String(32), default=new_id)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
