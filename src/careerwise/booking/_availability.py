"""The coach's availability, for the booking service: weekly hours (the shipped defaults until an
administrator confirms or edits them), dated exceptions and slot settings, whether any hours exist at
all, and when the next free slots open beyond the booking horizon. Reference: docs/bookings.md and
docs/decisions/0022-default-booking-hours.md.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from itertools import pairwise
from typing import Literal

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from careerwise.booking.errors import BookingNotFoundError, InvalidBookingError
from careerwise.booking.hours import Weekly
from careerwise.booking.slots import (
    Availability,
    DayException,
    Range,
    Slot,
    day_slots,
    free_slots,
    has_hours,
    local_today,
)
from careerwise.store import (
    AvailabilityException,
    AvailabilityWindow,
    Booking,
    BookingSettings,
    Database,
    as_utc,
)

log = logging.getLogger(__name__)
MAX_START_OFFSET_DAYS = 366  # the horizon is at most 365 days


@dataclass(frozen=True)
class Opening:
    """The first day beyond the booking horizon with a free slot, and the day it opens for booking
    (``horizon_days`` before it)."""

    day: date
    opens_on: date


@dataclass(frozen=True)
class Outlook:
    """What to tell someone who found no free slot, so that booking never dead-ends: whether any hours
    exist at all, the last day open for booking, a later free slot within that horizon or else the next
    opening beyond it, and how to reach the coach (empty: no contact configured)."""

    has_hours: bool
    bookable_until: date
    next_free: Slot | None
    opening: Opening | None
    contact_line: str


class AvailabilityMixin:
    """The availability half of :class:`~careerwise.booking.service.BookingService`, which sets these
    attributes in its constructor."""

    db: Database
    coach_id: str
    default_hours: Weekly
    contact_line: str
    _clock: Callable[[], datetime]

    def now(self) -> datetime:
        return as_utc(self._clock())

    # --- availability ---------------------------------------------------------------------------

    async def availability(self) -> Availability:
        async with self.db.session() as s:
            return await self._availability(s)

    async def _availability(self, s: AsyncSession) -> Availability:
        cfg = await s.get(BookingSettings, self.coach_id)
        windows = (
            await s.scalars(
                select(AvailabilityWindow)
                .where(AvailabilityWindow.coach_id == self.coach_id)
                .order_by(AvailabilityWindow.weekday, AvailabilityWindow.start_minute)
            )
        ).all()
        exceptions = (
            await s.scalars(
                select(AvailabilityException)
                .where(AvailabilityException.coach_id == self.coach_id)
                .order_by(AvailabilityException.day, AvailabilityException.id)
            )
        ).all()
        weekly: dict[int, tuple[Range, ...]] = {}
        for w in windows:
            weekly[w.weekday] = (*weekly.get(w.weekday, ()), (w.start_minute, w.end_minute))
        # never confirmed and never set: the shipped defaults are the hours, so booking works from the
        # first minute; a confirmed week with no windows is an administrator's "no hours"
        defaults = not windows and (cfg is None or cfg.hours_confirmed_at is None)
        if defaults:
            weekly = dict(self.default_hours)
        av = Availability(
            coach_id=self.coach_id,
            hours_default=defaults,
            weekly=weekly,
            exceptions=tuple(
                DayException(
                    day=e.day,
                    kind="closed" if e.kind == "closed" else "extra",
                    start_minute=e.start_minute,
                    end_minute=e.end_minute,
                    note=e.note,
                    id=e.id,
                )
                for e in exceptions
            ),
        )
        if cfg is not None:
            av = replace(
                av,
                slot_minutes=cfg.slot_minutes,
                timezone=cfg.timezone,
                horizon_days=cfg.horizon_days,
                min_notice_minutes=cfg.min_notice_minutes,
            )
        return av

    async def set_weekly(self, weekday: int, ranges: Sequence[Range], *, by: str = "") -> Availability:
        """Replace one weekday's hours (an empty list closes that weekday)."""
        if not 0 <= weekday <= 6:
            raise InvalidBookingError("weekday must be 0 (Monday) to 6 (Sunday)")
        for a, b in ranges:
            _check_range(a, b)
        async with self.db.session() as s, s.begin():
            await self._confirm(s, by)
            await s.execute(
                delete(AvailabilityWindow).where(
                    AvailabilityWindow.coach_id == self.coach_id, AvailabilityWindow.weekday == weekday
                )
            )
            s.add_all(
                AvailabilityWindow(coach_id=self.coach_id, weekday=weekday, start_minute=a, end_minute=b)
                for a, b in ranges
            )
            await self._touch_settings(s, by)
        log.info("booking: %s set weekday %d hours to %s", by or "someone", weekday, list(ranges))
        return await self.availability()

    async def set_week(self, weekly: Weekly, *, by: str = "") -> Availability:
        """Replace the whole week's hours in one transaction (a weekday missing from ``weekly`` is
        closed) and confirm them: what the dashboard's hours form saves."""
        if any(not 0 <= d <= 6 for d in weekly):
            raise InvalidBookingError("weekday must be 0 (Monday) to 6 (Sunday)")
        for d, ranges in weekly.items():
            for a, b in ranges:
                _check_range(a, b)
            ordered = sorted(ranges)
            if any(b > c for (_, b), (c, _) in pairwise(ordered)):
                raise InvalidBookingError(f"the hours of weekday {d} overlap")
        async with self.db.session() as s, s.begin():
            await self._confirm(s, by)
            await s.execute(delete(AvailabilityWindow).where(AvailabilityWindow.coach_id == self.coach_id))
            s.add_all(
                AvailabilityWindow(coach_id=self.coach_id, weekday=d, start_minute=a, end_minute=b)
                for d, ranges in weekly.items()
                for a, b in ranges
            )
        log.info("booking: %s set the weekly hours to %s", by or "someone", weekly)
        return await self.availability()

    async def confirm_hours(self, *, by: str = "") -> Availability:
        """Keep the hours as they are shown (the defaults, when they apply) as the coach's own: from
        then on they are stored rows, and a later change of CAREERWISE_DEFAULT_HOURS does not move them.
        Confirming again changes nothing."""
        async with self.db.session() as s, s.begin():
            await self._confirm(s, by)
        return await self.availability()

    async def _confirm(self, s: AsyncSession, by: str) -> None:
        """Inside a writing transaction: stores the default hours as rows if they are what applies, and
        marks the hours confirmed, so an edit of one weekday keeps the other defaults that were shown."""
        cfg = await self._touch_settings(s, by)
        if cfg.hours_confirmed_at is not None:
            return
        has_rows = await s.scalar(
            select(AvailabilityWindow.id).where(AvailabilityWindow.coach_id == self.coach_id).limit(1)
        )
        if has_rows is None:
            s.add_all(
                AvailabilityWindow(coach_id=self.coach_id, weekday=d, start_minute=a, end_minute=b)
                for d, ranges in self.default_hours.items()
                for a, b in ranges
            )
        cfg.hours_confirmed_at = self.now()
        await s.flush()
        log.info("booking: %s confirmed the consultation hours", by or "someone")

    async def add_exception(
        self,
        *,
        day: date,
        kind: Literal["closed", "extra"],
        start_minute: int | None = None,
        end_minute: int | None = None,
        note: str = "",
        by: str = "",
    ) -> DayException:
        if kind not in ("closed", "extra"):
            raise InvalidBookingError("an exception is 'closed' or 'extra'")
        if (start_minute is None) != (end_minute is None):
            raise InvalidBookingError("give both a start and an end time, or neither")
        if start_minute is None or end_minute is None:
            if kind == "extra":
                raise InvalidBookingError("extra hours need a start and an end time")
        else:
            _check_range(start_minute, end_minute)
        if len(note) > 200:
            raise InvalidBookingError("note is longer than 200 characters")
        async with self.db.session() as s, s.begin():
            row = AvailabilityException(
                coach_id=self.coach_id,
                day=day,
                kind=kind,
                start_minute=start_minute,
                end_minute=end_minute,
                note=note,
            )
            s.add(row)
            await self._touch_settings(s, by)
            await s.flush()
            exc_id = row.id
        log.info("booking: %s added a %s exception on %s", by or "someone", kind, day)
        return DayException(day, kind, start_minute, end_minute, note, exc_id)

    async def remove_exception(self, exception_id: int, *, by: str = "") -> None:
        async with self.db.session() as s, s.begin():
            result = await s.execute(
                delete(AvailabilityException).where(
                    AvailabilityException.id == exception_id,
                    AvailabilityException.coach_id == self.coach_id,
                )
            )
            if _rowcount(result) == 0:
                raise BookingNotFoundError(f"availability exception {exception_id} does not exist")
            await self._touch_settings(s, by)

    async def update_settings(
        self,
        *,
        slot_minutes: int | None = None,
        horizon_days: int | None = None,
        min_notice_minutes: int | None = None,
        by: str = "",
    ) -> Availability:
        if slot_minutes is not None and not (10 <= slot_minutes <= 240 and 1440 % slot_minutes == 0):
            raise InvalidBookingError("slot length must be 10 to 240 minutes and divide a day evenly")
        if horizon_days is not None and not 1 <= horizon_days <= 365:
            raise InvalidBookingError("the booking horizon must be 1 to 365 days")
        if min_notice_minutes is not None and not 0 <= min_notice_minutes <= 7 * 24 * 60:
            raise InvalidBookingError("the minimum notice must be 0 to 10080 minutes")
        async with self.db.session() as s, s.begin():
            cfg = await self._touch_settings(s, by)
            if slot_minutes is not None:
                cfg.slot_minutes = slot_minutes
            if horizon_days is not None:
                cfg.horizon_days = horizon_days
            if min_notice_minutes is not None:
                cfg.min_notice_minutes = min_notice_minutes
        return await self.availability()

    async def _touch_settings(self, s: AsyncSession, by: str) -> BookingSettings:
        cfg = await s.get(BookingSettings, self.coach_id)
        if cfg is None:
            d = Availability()
            cfg = BookingSettings(
                coach_id=self.coach_id,
                slot_minutes=d.slot_minutes,
                timezone=d.timezone,
                horizon_days=d.horizon_days,
                min_notice_minutes=d.min_notice_minutes,
            )
            s.add(cfg)
        cfg.updated_at = self.now()
        cfg.updated_by = by
        return cfg

    async def has_hours(self) -> bool:
        """Whether any consultation hours are open (weekly, or extra hours from today on)."""
        av = await self.availability()
        return has_hours(av, local_today(av, self.now()))

    async def _busy(
        self, s: AsyncSession, lo: datetime, hi: datetime | None
    ) -> list[tuple[datetime, datetime]]:
        """The active bookings that overlap [lo, hi) (hi None: no end), in UTC."""
        query = select(Booking.slot_start, Booking.slot_end).where(
            Booking.coach_id == self.coach_id, Booking.status == "active", Booking.slot_end > lo
        )
        if hi is not None:
            query = query.where(Booking.slot_start < hi)
        return [(as_utc(a), as_utc(b)) for a, b in (await s.execute(query)).all()]

    async def next_opening(self) -> Opening | None:
        """When the booking horizon has no free slot: the first later day that has one (looked for up
        to a year ahead) and the day it opens for booking. None when no such day exists."""
        async with self.db.session() as s:
            av = await self._availability(s)
            today = local_today(av, self.now())
            first = today + timedelta(days=av.horizon_days + 1)
            last = today + timedelta(days=MAX_START_OFFSET_DAYS - 1)
            taken = await self._busy(s, _midnight(first - timedelta(days=1)), None)
        day = first
        while day <= last:
            for slot in day_slots(av, day):
                if not any(slot.start < b and a < slot.end for a, b in taken):
                    return Opening(day=day, opens_on=day - timedelta(days=av.horizon_days))
            day += timedelta(days=1)
        return None

    async def outlook(self, *, after: date | None = None) -> Outlook:
        """What to say when no free slot was found (docs/bookings.md, "Never a dead end"). ``after``: the
        last local day already looked at (a page's week); the first free slot on a later day within the
        booking horizon is then ``next_free``. Without it the whole horizon was looked at (the chat). The
        next opening beyond the horizon is looked for only when there are hours and no ``next_free``."""
        async with self.db.session() as s:
            av = await self._availability(s)
            now = self.now()
            today = local_today(av, now)
            until = today + timedelta(days=av.horizon_days)
            hours = has_hours(av, today)
            later: Slot | None = None
            if hours and after is not None and after < until:
                day = max(after + timedelta(days=1), today)
                busy = await self._busy(
                    s, _midnight(day - timedelta(days=1)), _midnight(until + timedelta(days=2))
                )
                while later is None and day <= until:
                    later = next(iter(free_slots(av, now=now, start_day=day, days=1, busy=busy)), None)
                    day += timedelta(days=1)
        opening = await self.next_opening() if hours and later is None else None
        return Outlook(
            has_hours=hours,
            bookable_until=until,
            next_free=later,
            opening=opening,
            contact_line=self.contact_line,
        )


def _check_range(a: int, b: int) -> None:
    if not (0 <= a < b <= 1440):
        raise InvalidBookingError("hours must be a start before an end, between 00:00 and 24:00")


def _midnight(day: date) -> datetime:
    """Midnight UTC of ``day``: a local day's instants lie within a day either side of it."""
    return datetime.combine(day, datetime.min.time(), UTC)


def _rowcount(result: object) -> int:
    return int(getattr(result, "rowcount", 0) or 0)
