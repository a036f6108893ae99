"""Consultation booking (預約諮詢), no LLM: availability, slots in the coach's time zone (Asia/Taipei),
bookings with a database-enforced one-booking-per-slot rule, idempotent retries, and .ics files."""

from careerwise.booking._availability import Opening, Outlook
from careerwise.booking.contact import Contact, parse_contact, parse_name
from careerwise.booking.errors import (
    BookingLimitError,
    BookingNotActiveError,
    BookingNotFoundError,
    IdempotencyKeyReusedError,
    InvalidBookingError,
    SlotTakenError,
    SlotUnavailableError,
)
from careerwise.booking.limits import BookingLimits
from careerwise.booking.service import BookingService
from careerwise.booking.slots import DEFAULT_COACH, Availability, DayException, Slot
from careerwise.booking.timefmt import slot_label
from careerwise.booking.tokens import token_key
from careerwise.booking.views import BookingView, BookResult

__all__ = [
    "DEFAULT_COACH",
    "Availability",
    "BookResult",
    "BookingLimitError",
    "BookingLimits",
    "BookingNotActiveError",
    "BookingNotFoundError",
    "BookingService",
    "BookingView",
    "Contact",
    "DayException",
    "IdempotencyKeyReusedError",
    "InvalidBookingError",
    "Opening",
    "Outlook",
    "Slot",
    "SlotTakenError",
    "SlotUnavailableError",
    "parse_contact",
    "parse_name",
    "slot_label",
    "token_key",
]
