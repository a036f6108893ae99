"""The per-client booking limits, counted in the booking's own transaction.

:class:`BookingLimits` says what one client (``client_key``: an IP, a LINE user) may do: bookings made
in any 24 hours and upcoming bookings held; 0 means no limit, and a booking without a client key is
not limited. :func:`refuse_over_limits` counts in the caller's transaction, the new row included when
it is already flushed, and raises :class:`BookingLimitError` (429) with when to try again; held is
checked first, since its message says what to do. :func:`lock_client` makes one client's count and
insert take turns on PostgreSQL (an advisory lock for the transaction); SQLite's write lock already
serialises every writing transaction. Together they hold under concurrent requests from one client.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession

from careerwise.booking.errors import BookingLimitError
from careerwise.store import Booking, as_utc

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BookingLimits:
    """What one client (``client_key``: an IP, a LINE user) may do; 0 = no limit. A booking made
    without a client key (the admin CLI, a direct caller) is not limited."""

    per_day: int = 0  # bookings made in any 24 hours, cancelled ones included (reschedules are not new)
    held: int = 0  # active bookings whose slot has not ended yet


DAY = timedelta(hours=24)


def seconds(span: timedelta) -> int:
    """A wait in whole seconds, at least one (a ``Retry-After`` of 0 would invite an instant retry)."""
    return max(1, math.ceil(span.total_seconds()))


async def lock_client(
    s: AsyncSession, limits: BookingLimits, client_key: str | None, *, postgresql: bool
) -> None:
    """PostgreSQL: one client's bookings are counted and inserted one transaction at a time (READ
    COMMITTED would let two concurrent transactions each miss the other's new row). SQLite's write
    lock already serialises every writing transaction."""
    if client_key is not None and postgresql and (limits.per_day or limits.held):
        await s.execute(
            text("SELECT pg_advisory_xact_lock(hashtext(:key))"), {"key": f"booking:{client_key}"}
        )


async def refuse_over_limits(
    s: AsyncSession, limits: BookingLimits, client_key: str | None, *, now: datetime, counting_new: bool
) -> None:
    """``counting_new``: the new booking is already flushed in ``s`` and counted; else one more is
    asked for. Held first: its message tells the client what to do (cancel one)."""
    if client_key is None:
        return
    extra = 0 if counting_new else 1
    mine = Booking.client_key == client_key
    if limits.held:
        held_ends = (
            await s.scalars(
                select(Booking.slot_end)
                .where(mine, Booking.status == "active", Booking.slot_end > now)
                .order_by(Booking.slot_end)
            )
        ).all()
        if len(held_ends) + extra > limits.held:
            log.info("booking: %s holds %d upcoming bookings: refused", client_key, len(held_ends))
            first_end = as_utc(held_ends[0]) if held_ends else now
            raise BookingLimitError(
                f"you already hold {limits.held} upcoming consultations, the most one person may "
                "hold at a time; cancel one, or book again once one has taken place",
                limit="held",
                maximum=limits.held,
                retry_after=seconds(first_end - now),
            )
    if limits.per_day:
        made = (
            await s.scalars(
                select(Booking.created_at)
                .where(mine, Booking.rescheduled_from.is_(None), Booking.created_at > now - DAY)
                .order_by(Booking.created_at)
            )
        ).all()
        if len(made) + extra > limits.per_day:
            log.info("booking: %s made %d bookings in 24 hours: refused", client_key, len(made))
            wait = seconds(as_utc(made[0]) + DAY - now) if made else 1
            raise BookingLimitError(
                f"{limits.per_day} bookings were already made from here in the last 24 hours, the "
                f"most allowed; you can book again in about {max(1, round(wait / 3600))} hour(s)",
                limit="per_day",
                maximum=limits.per_day,
                retry_after=wait,
            )
