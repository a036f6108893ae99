"""Days and times near the ends of the calendar: free slots from 0001-01-01 or
9999-12-31 and a booking at 9999-12-31T23:59Z or 0001-01-01T00:00+14:00 overflowed the slot window's
arithmetic, a 500. They are refused as invalid (400): nothing is more than a year from now."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from careerwise.booking import BookingService, InvalidBookingError
from careerwise.store import Database
from tests.booking_helpers import TOKEN_KEY, open_hours

FAR_DAYS = [date.min, date.max, date(9999, 12, 1)]
FAR_TIMES = [
    datetime(9999, 12, 31, 23, 59, tzinfo=UTC),
    datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=14))),
    datetime(1, 1, 1, tzinfo=UTC),
]


@pytest.mark.parametrize("day", FAR_DAYS)
async def test_free_slots_from_a_day_at_the_calendars_ends_are_refused(empty_db_url: str, day: date) -> None:
    db = Database(empty_db_url)
    try:
        service = BookingService(db, token_key=TOKEN_KEY)
        await open_hours(service)
        with pytest.raises(InvalidBookingError, match="within 366 days"):
            await service.free_slots(start_day=day, days=90)
        assert await service.free_slots(days=7)  # an ordinary week still has its slots
    finally:
        await db.dispose()


@pytest.mark.parametrize("start", FAR_TIMES)
async def test_a_booking_at_the_calendars_ends_is_refused_and_nothing_is_stored(
    empty_db_url: str, start: datetime
) -> None:
    db = Database(empty_db_url)
    try:
        service = BookingService(db, token_key=TOKEN_KEY)
        await open_hours(service)
        with pytest.raises(InvalidBookingError, match="within 366 days"):
            await service.book(
                slot_start=start, name="訪客", contact="visitor@example.com", client_key="ip:1"
            )
        assert await service.list_bookings(everyone=True, upcoming_only=False) == []
    finally:
        await db.dispose()
