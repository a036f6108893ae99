"""Times as people read them: always in the coach's time zone, and always saying which one."""

from __future__ import annotations

from datetime import date, datetime
from zoneinfo import ZoneInfo

from careerwise.store import as_utc

_WEEKDAY_ZH = "一二三四五六日"
_WEEKDAY_EN = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_ZONE_NAMES = {"Asia/Taipei": ("台北時間", "Taipei time")}


def zone_name(tz: ZoneInfo, zh: bool) -> str:
    names = _ZONE_NAMES.get(tz.key)
    if names is not None:
        return names[0] if zh else names[1]
    return f"{tz.key} 時間" if zh else f"{tz.key} time"


def slot_label(start: datetime, end: datetime, tz: ZoneInfo, *, zh: bool) -> str:
    """``2026-12-02 (三) 14:00–14:30 台北時間`` / ``Wed 2026-12-02 14:00–14:30 Taipei time (UTC+08:00)``."""
    a, b = as_utc(start).astimezone(tz), as_utc(end).astimezone(tz)
    if zh:
        return f"{a:%Y-%m-%d} ({_WEEKDAY_ZH[a.weekday()]}) {a:%H:%M}–{b:%H:%M} {zone_name(tz, True)}"
    offset = a.strftime("%z")
    return (
        f"{_WEEKDAY_EN[a.weekday()]} {a:%Y-%m-%d} {a:%H:%M}–{b:%H:%M} {zone_name(tz, False)} "
        f"(UTC{offset[:3]}:{offset[3:]})"
    )


def day_label(day: date, zh: bool) -> str:
    """``2026-12-02 (三)`` / ``Wed 2026-12-02``: a local date, as the slot labels write it."""
    if zh:
        return f"{day:%Y-%m-%d} ({_WEEKDAY_ZH[day.weekday()]})"
    return f"{_WEEKDAY_EN[day.weekday()]} {day:%Y-%m-%d}"


def hhmm(minute: int) -> str:
    return f"{minute // 60:02d}:{minute % 60:02d}"
