"""The calendar half of :class:`~careerwise.booking.service.BookingService`: a booking, or the coach's
day, as an iCalendar file.

A booking's event keeps its chain's UID and counts the chain's earlier bookings as its SEQUENCE, so a
calendar app moves a rescheduled consultation instead of adding a second one (:mod:`.ics`). A day's
calendar holds that local day's active bookings in time order; a day with none is
``BookingNotFoundError``, since a calendar must hold an event, and a day further than
:data:`MAX_START_OFFSET_DAYS` from today is refused.
"""

from __future__ import annotations

from datetime import date, timedelta

from sqlalchemy import func, select

from careerwise.booking import ics
from careerwise.booking._availability import MAX_START_OFFSET_DAYS, AvailabilityMixin
from careerwise.booking.errors import BookingNotFoundError, InvalidBookingError
from careerwise.booking.slots import Availability, local_instant, local_today
from careerwise.booking.views import BookingView
from careerwise.store import Booking


class CalendarMixin(AvailabilityMixin):
    """Reads bookings through the attributes :class:`AvailabilityMixin` names."""

    async def calendar(self, view: BookingView, *, url: str | None = None) -> bytes:
        av = await self.availability()
        return ics.render(await self._event(view, av, url=url))

    async def day_calendar(self, day: date, *, url: str | None = None) -> bytes:
        """The active bookings of one local day as one VCALENDAR (the coach's day in a calendar app);
        BookingNotFoundError when there are none, since a calendar must hold an event."""
        today = local_today(await self.availability(), self.now())
        if abs((day - today).days) > MAX_START_OFFSET_DAYS:
            raise InvalidBookingError(
                f"the day must be within {MAX_START_OFFSET_DAYS} days of today ({today})"
            )
        views = await self.day_bookings(day)
        if not views:
            raise BookingNotFoundError(f"there are no active bookings on {day.isoformat()}")
        av = await self.availability()
        events = [await self._event(v, av, url=url) for v in views]
        return ics.render_calendar(events, prodid="-//CareerWise//Coach day//ZH-TW")

    async def day_bookings(self, day: date) -> list[BookingView]:
        """Active bookings whose slot starts on ``day`` in the coach's time zone, in time order."""
        av = await self.availability()
        lo = local_instant(day, 0, av.tz)
        hi = local_instant(day + timedelta(days=1), 0, av.tz)
        async with self.db.session() as s:
            rows = (
                await s.scalars(
                    select(Booking)
                    .where(
                        Booking.coach_id == self.coach_id,
                        Booking.status == "active",
                        Booking.slot_start >= lo,
                        Booking.slot_start < hi,
                    )
                    .order_by(Booking.slot_start)
                )
            ).all()
        return [BookingView.of(r) for r in rows]

    async def _event(self, view: BookingView, av: Availability, *, url: str | None) -> ics.CalendarEvent:
        async with self.db.session() as s:
            sequence = await s.scalar(
                select(func.count())
                .select_from(Booking)
                .where(Booking.origin_id == view.origin_id, Booking.created_at < view.created_at)
            )
        return ics.booking_event(view, av.tz, sequence=int(sequence or 0), url=url)
