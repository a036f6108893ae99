"""The shipped default consultation hours: ``CAREERWISE_DEFAULT_HOURS`` parsed into weekly ranges.

The format is what an operator would write in an environment variable::

    mon-fri 10:00-18:00                     the default
    mon-fri 10:00-12:00,14:00-18:00; sat 10:00-12:00
    none                                    (or empty) no default hours

Entries are separated by ``;``; each is a day spec (``mon``, ``mon-fri``, ``mon,wed,fri``) and one or
more ranges (``HH:MM-HH:MM``, comma or space separated; ``24:00`` ends a day). Ranges are wall-clock
times in the coach's time zone. A value that does not parse raises ValueError, so a typo stops the
process at start instead of silently opening no hours.
"""

from __future__ import annotations

import re
from itertools import pairwise

from careerwise.booking.timefmt import hhmm

Weekly = dict[int, tuple[tuple[int, int], ...]]
DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_FULL = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_RANGE = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)-(?:([01]\d|2[0-3]):([0-5]\d)|(24):(00))$")


def _day(name: str) -> int:
    key = name.strip().lower()
    for i, (short, full) in enumerate(zip(DAYS, _FULL, strict=True)):
        if key in (short, full):
            return i
    raise ValueError(f"unknown weekday {name!r} (use mon, tue, wed, thu, fri, sat, sun)")


def _days(spec: str) -> list[int]:
    out: list[int] = []
    for part in spec.split(","):
        if "-" in part:
            a, b = (_day(x) for x in part.split("-", 1))
            if b < a:
                raise ValueError(f"day range {part!r} runs backwards")
            out.extend(range(a, b + 1))
        else:
            out.append(_day(part))
    return out


def _minutes(text: str) -> tuple[int, int]:
    m = _RANGE.match(text)
    if m is None:
        raise ValueError(f"{text!r} is not a range like 10:00-18:00")
    start = int(m[1]) * 60 + int(m[2])
    end = int(m[3] or m[5]) * 60 + int(m[4] or m[6])
    if start >= end:
        raise ValueError(f"{text!r} ends before it starts")
    return start, end


def parse_hours(value: str) -> Weekly:
    """``{weekday: ((start_minute, end_minute), ...)}`` (0 = Monday), ranges sorted and merged-free."""
    text = value.strip()
    if text.lower() in ("", "none"):
        return {}
    weekly: dict[int, list[tuple[int, int]]] = {}
    for entry in filter(None, (e.strip() for e in text.split(";"))):
        spec, _, rest = entry.partition(" ")
        ranges = [_minutes(r) for r in re.split(r"[,\s]+", rest.strip()) if r]
        if not ranges:
            raise ValueError(f"{entry!r} names days but no hours (e.g. 'mon-fri 10:00-18:00')")
        for day in _days(spec):
            weekly.setdefault(day, []).extend(ranges)
    out: Weekly = {}
    for day, ranges in sorted(weekly.items()):
        ranges.sort()
        for (_, end), (start, _) in pairwise(ranges):
            if start < end:
                raise ValueError(f"hours overlap on {DAYS[day]}")
        out[day] = tuple(ranges)
    return out


def describe(weekly: Weekly) -> str:
    """The hours as the operator would write them again, e.g. ``mon 10:00-18:00; tue 10:00-18:00``."""
    return (
        "; ".join(
            f"{DAYS[d]} " + ",".join(f"{hhmm(a)}-{hhmm(b)}" for a, b in weekly[d]) for d in sorted(weekly)
        )
        or "none"
    )
