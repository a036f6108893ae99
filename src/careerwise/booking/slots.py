"""Availability and the slots it opens: pure functions, no database.

Hours are wall-clock minutes in the coach's time zone (Asia/Taipei by default); each day's open
ranges are turned into UTC instants with zoneinfo, so a zone with daylight saving gets the right
instants too. A day's open ranges: its weekday's windows, minus ``closed`` exceptions (the whole day,
or a range), plus ``extra`` exceptions; slots are cut from each merged range from its start, every
``slot_minutes``, and only whole slots count.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

from careerwise.booking.timefmt import slot_label
from careerwise.store import as_utc

DEFAULT_COACH = "summer"
DEFAULT_TIMEZONE = "Asia/Taipei"
Range = tuple[int, int]  # [start, end) in minutes after local midnight


@dataclass(frozen=True)
class DayException:
    day: date
    kind: Literal["closed", "extra"]
    start_minute: int | None = None
    end_minute: int | None = None
    note: str = ""
    id: int | None = None


@dataclass(frozen=True)
class Availability:
    coach_id: str = DEFAULT_COACH
    slot_minutes: int = 30
    timezone: str = DEFAULT_TIMEZONE
    horizon_days: int = 28
    min_notice_minutes: int = 60
    weekly: dict[int, tuple[Range, ...]] = field(default_factory=dict)  # 0 = Monday
    exceptions: tuple[DayException, ...] = ()
    # True while ``weekly`` is the shipped default (CAREERWISE_DEFAULT_HOURS), not yet confirmed or
    # edited by an administrator
    hours_default: bool = False

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)


@dataclass(frozen=True)
class Slot:
    start: datetime  # UTC
    end: datetime  # UTC

    def label(self, tz: ZoneInfo, *, zh: bool) -> str:
        return slot_label(self.start, self.end, tz, zh=zh)


def merge(ranges: Iterable[Range]) -> list[Range]:
    out: list[Range] = []
    for a, b in sorted(r for r in ranges if r[0] < r[1]):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def subtract(ranges: Sequence[Range], cut: Range) -> list[Range]:
    out: list[Range] = []
    for a, b in ranges:
        if cut[1] <= a or cut[0] >= b:
            out.append((a, b))
            continue
        if a < cut[0]:
            out.append((a, cut[0]))
        if cut[1] < b:
            out.append((cut[1], b))
    return out


def open_ranges(av: Availability, day: date) -> list[Range]:
    ranges = merge(av.weekly.get(day.weekday(), ()))
    todays = [e for e in av.exceptions if e.day == day]
    for e in todays:
        if e.kind == "closed":
            if e.start_minute is None or e.end_minute is None:
                ranges = []
            else:
                ranges = subtract(ranges, (e.start_minute, e.end_minute))
    extra = [(e.start_minute, e.end_minute) for e in todays if e.kind == "extra"]
    return merge([*ranges, *((a, b) for a, b in extra if a is not None and b is not None)])


def local_instant(day: date, minute: int, tz: ZoneInfo) -> datetime:
    naive = datetime.combine(day, time()) + timedelta(minutes=minute)
    return naive.replace(tzinfo=tz).astimezone(ZoneInfo("UTC"))


def day_slots(av: Availability, day: date) -> list[Slot]:
    tz, length = av.tz, av.slot_minutes
    slots: list[Slot] = []
    for a, b in open_ranges(av, day):
        m = a
        while m + length <= b:
            slots.append(Slot(local_instant(day, m, tz), local_instant(day, m + length, tz)))
            m += length
    return slots


def local_today(av: Availability, now: datetime) -> date:
    return as_utc(now).astimezone(av.tz).date()


def bookable_window(av: Availability, now: datetime) -> tuple[datetime, date]:
    """The earliest start a booking may have (now + notice) and the last local day that can be booked."""
    return (
        as_utc(now) + timedelta(minutes=av.min_notice_minutes),
        local_today(av, now) + timedelta(days=av.horizon_days),
    )


def grid_slots(av: Availability, start_day: date, days: int) -> list[Slot]:
    return [s for i in range(days) for s in day_slots(av, start_day + timedelta(days=i))]


def free_slots(
    av: Availability,
    *,
    now: datetime,
    start_day: date,
    days: int,
    busy: Sequence[tuple[datetime, datetime]],
) -> list[Slot]:
    """Grid slots from ``start_day`` for ``days`` days that are bookable now and overlap no busy range."""
    earliest, last_day = bookable_window(av, now)
    out: list[Slot] = []
    for s in grid_slots(av, start_day, days):
        if s.start < earliest or s.start.astimezone(av.tz).date() > last_day:
            continue
        if any(s.start < as_utc(b) and as_utc(a) < s.end for a, b in busy):
            continue
        out.append(s)
    return out


def find_slot(av: Availability, start: datetime, *, now: datetime) -> tuple[Slot | None, str]:
    """The grid slot starting at ``start`` if it can be booked now, else None and the reason."""
    start = as_utc(start)
    earliest, last_day = bookable_window(av, now)
    local_day = start.astimezone(av.tz).date()
    match = next((s for s in day_slots(av, local_day) if s.start == start), None)
    if match is None:
        return None, "not_open"
    if start < earliest:
        return None, "too_soon" if start > as_utc(now) else "past"
    if local_day > last_day:
        return None, "beyond_horizon"
    return match, "ok"


def has_hours(av: Availability, today: date) -> bool:
    """Whether any hours are open at all: weekly hours, or extra hours on a day from ``today`` on."""
    if any(av.weekly.get(d) for d in range(7)):
        return True
    return any(e.kind == "extra" and e.day >= today for e in av.exceptions)
