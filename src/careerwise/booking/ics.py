"""iCalendar (RFC 5545) for one booking, written by hand: one VCALENDAR with one VEVENT.

Times are UTC ("Z" form), so no VTIMEZONE is needed. Content lines end with CRLF and are folded at 75
octets (RFC 5545 §3.1), never inside a UTF-8 sequence. The UID is the booking's origin id: a
rescheduled booking keeps its UID with a higher SEQUENCE, so a calendar moves the event instead of
adding a second one; a cancelled booking is published with STATUS:CANCELLED.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from careerwise.booking.timefmt import slot_label
from careerwise.booking.views import BookingView
from careerwise.store import as_utc

CRLF = "\r\n"
MAX_OCTETS = 75


@dataclass(frozen=True)
class CalendarEvent:
    uid: str
    start: datetime
    end: datetime
    stamp: datetime
    summary: str
    description: str = ""
    url: str | None = None
    sequence: int = 0
    cancelled: bool = False


def escape_text(value: str) -> str:
    """TEXT values (§3.3.11): backslash, semicolon, comma and newlines escaped."""
    return (
        value.replace("\\", "\\\\")
        .replace(";", "\\;")
        .replace(",", "\\,")
        .replace("\r\n", "\\n")
        .replace("\n", "\\n")
        .replace("\r", "\\n")
    )


def fold(line: str) -> str:
    """One content line, folded: at most 75 octets per physical line, continuation lines start with a
    space (which counts towards their 75)."""
    out: list[str] = []
    current: list[str] = []
    size = 0
    for ch in line:
        n = len(ch.encode("utf-8"))
        if size + n > MAX_OCTETS:
            out.append("".join(current))
            current, size = [" "], 1
        current.append(ch)
        size += n
    out.append("".join(current))
    return CRLF.join(out)


def utc_stamp(value: datetime) -> str:
    return as_utc(value).strftime("%Y%m%dT%H%M%SZ")


def render(event: CalendarEvent, *, prodid: str = "-//CareerWise//Bookings//ZH-TW") -> bytes:
    return render_calendar([event], method="CANCEL" if event.cancelled else "PUBLISH", prodid=prodid)


def render_calendar(
    events: list[CalendarEvent], *, method: str = "PUBLISH", prodid: str = "-//CareerWise//Bookings//ZH-TW"
) -> bytes:
    """One VCALENDAR holding ``events`` (at least one: RFC 5545 §3.6 requires a component)."""
    if not events:
        raise ValueError("a calendar needs at least one event")
    lines = [
        "BEGIN:VCALENDAR",
        "VERSION:2.0",
        f"PRODID:{prodid}",
        "CALSCALE:GREGORIAN",
        f"METHOD:{method}",
    ]
    for event in events:
        lines += _vevent(event)
    lines.append("END:VCALENDAR")
    return "".join(fold(line) + CRLF for line in lines).encode("utf-8")


def _vevent(event: CalendarEvent) -> list[str]:
    lines = [
        "BEGIN:VEVENT",
        f"UID:{event.uid}",
        f"DTSTAMP:{utc_stamp(event.stamp)}",
        f"DTSTART:{utc_stamp(event.start)}",
        f"DTEND:{utc_stamp(event.end)}",
        f"SEQUENCE:{event.sequence}",
        f"SUMMARY:{escape_text(event.summary)}",
    ]
    if event.description:
        lines.append(f"DESCRIPTION:{escape_text(event.description)}")
    if event.url:
        lines.append(f"URL:{event.url}")
    lines += [
        f"STATUS:{'CANCELLED' if event.cancelled else 'CONFIRMED'}",
        "TRANSP:OPAQUE",
        "END:VEVENT",
    ]
    return lines


def booking_event(view: BookingView, tz: ZoneInfo, *, sequence: int, url: str | None) -> CalendarEvent:
    """The VEVENT of one booking: UID its origin id, ``sequence`` the earlier bookings of its chain."""
    label = slot_label(view.slot_start, view.slot_end, tz, zh=True)
    topic = f"\n主題 Topic: {view.topic}" if view.topic else ""
    return CalendarEvent(
        uid=f"{view.origin_id}@careerwise",
        start=view.slot_start,
        end=view.slot_end,
        stamp=view.updated_at,
        summary="職涯諮詢 with Summer (CareerWise)",
        description=(
            f"{label}\n預約人 Name: {view.name}\n聯絡方式 Contact: {view.contact.display()}\n"
            f"預約編號 Booking: {view.id}{topic}"
        ),
        url=url,
        sequence=sequence,
        cancelled=view.status == "cancelled",
    )
