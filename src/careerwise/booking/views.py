"""What a caller sees of a booking: a frozen copy of its row, detached from any session.

:class:`BookingView` carries the stored values with every timestamp in UTC (:func:`as_utc`), so it may
be read after its session closed, by any layer, without touching the database again.
:class:`BookResult` says whether a booking call made the booking or replayed an earlier one (an
idempotent retry).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from careerwise.booking.contact import Contact
from careerwise.store import Booking, as_utc


@dataclass(frozen=True)
class BookingView:
    id: str
    coach_id: str
    slot_start: datetime
    slot_end: datetime
    name: str
    contact: Contact
    status: str
    user_id: str | None
    conversation_id: str | None
    channel: str
    origin_id: str
    rescheduled_from: str | None
    created_at: datetime
    updated_at: datetime
    client_key: str | None = None
    topic: str | None = None

    @classmethod
    def of(cls, row: Booking) -> BookingView:
        return cls(
            id=row.id,
            coach_id=row.coach_id,
            slot_start=as_utc(row.slot_start),
            slot_end=as_utc(row.slot_end),
            name=row.name,
            contact=Contact("email" if row.contact_kind == "email" else "line", row.contact),
            status=row.status,
            user_id=row.user_id,
            conversation_id=row.conversation_id,
            channel=row.channel,
            origin_id=row.origin_id,
            rescheduled_from=row.rescheduled_from,
            created_at=as_utc(row.created_at),
            updated_at=as_utc(row.updated_at),
            client_key=row.client_key,
            topic=row.topic,
        )


@dataclass(frozen=True)
class BookResult:
    booking: BookingView
    created: bool  # False: an idempotent replay returned the booking made earlier
