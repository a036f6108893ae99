"""Booking errors: subclasses of the central hierarchy (careerwise.errors), so the one HTTP handler
maps them (409 for conflicts, 400 for requests we cannot accept, 404). ``details`` goes into the JSON
error body: for a slot that cannot be booked, the next free slots.

CareerWiseError
├── UserInputError (400)
│   ├── InvalidBookingError          a name, contact, time or setting that does not validate
│   ├── SlotUnavailableError         not an open slot (closed, off the grid, past, beyond the horizon)
│   ├── IdempotencyKeyReusedError    the same key sent with a different request
│   └── ConflictError (409)
│       ├── SlotTakenError              someone else has that slot
│       └── BookingNotActiveError       cancelled or moved already
├── RateLimitedError (429)
│   └── BookingLimitError            one client (an IP, a LINE user) made or holds too many bookings
└── NotFoundError (404)
    └── BookingNotFoundError
"""

from __future__ import annotations

from typing import Any

from careerwise.errors import ConflictError, NotFoundError, RateLimitedError, UserInputError


class InvalidBookingError(UserInputError):
    code = "invalid_booking"


class SlotUnavailableError(UserInputError):
    code = "slot_unavailable"

    def __init__(self, message: str, *, next_free: list[dict[str, Any]]) -> None:
        super().__init__(message)
        self.details: dict[str, Any] = {"next_free_slots": next_free}


class IdempotencyKeyReusedError(UserInputError):
    code = "idempotency_key_reused"


class SlotTakenError(ConflictError):
    code = "slot_taken"

    def __init__(self, message: str, *, next_free: list[dict[str, Any]]) -> None:
        super().__init__(message)
        self.details: dict[str, Any] = {"next_free_slots": next_free}


class BookingNotActiveError(ConflictError):
    code = "booking_not_active"

    def __init__(self, message: str, *, status: str, moved_to: str | None = None) -> None:
        super().__init__(message)
        self.details: dict[str, Any] = {"status": status, "moved_to": moved_to}


class BookingLimitError(RateLimitedError):
    """``details.limit`` says which: ``held`` (upcoming bookings held at once) or ``per_day`` (bookings
    made in 24 hours); ``details.max`` is the configured number."""

    code = "booking_limit"

    def __init__(self, message: str, *, limit: str, maximum: int, retry_after: int) -> None:
        super().__init__(message, retry_after=retry_after)
        self.details: dict[str, Any] = {"limit": limit, "max": maximum}


class BookingNotFoundError(NotFoundError):
    code = "booking_not_found"
