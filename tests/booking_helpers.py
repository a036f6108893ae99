"""Bookings for tests: open the coach's hours on a database and pick slots far enough ahead that the
minimum notice can never catch up with a running test."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from careerwise.booking import BookingService, Slot
from careerwise.store import Database

TOKEN_KEY = b"test booking token key, 32 bytes"


async def open_hours(service: BookingService, *, slot_minutes: int = 30) -> None:
    """Every day 09:00-18:00 (Taipei), ``slot_minutes`` slots, an hour of notice."""
    for weekday in range(7):
        await service.set_weekly(weekday, [(9 * 60, 18 * 60)], by="test")
    await service.update_settings(slot_minutes=slot_minutes, min_notice_minutes=60, by="test")


async def slots_ahead(service: BookingService, n: int, *, days_ahead: int = 2) -> list[Slot]:
    after = service.now() + timedelta(days=days_ahead)
    found = await service.next_free(after=after, limit=n)
    assert len(found) == n, found
    return found


def setup_database(url: str, n: int = 3) -> list[datetime]:
    """Open the hours on the database at ``url`` (from outside a live server's loop) and return the
    starts of ``n`` free slots two days ahead."""

    async def run() -> list[datetime]:
        db = Database(url)
        try:
            service = BookingService(db, token_key=TOKEN_KEY)
            await open_hours(service)
            return [s.start for s in await slots_ahead(service, n)]
        finally:
            await db.dispose()

    return asyncio.run(run())
