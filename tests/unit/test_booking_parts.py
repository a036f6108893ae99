"""Booking parts without a database: slots from availability, Taipei labels, contact checks, the .ics
writer, and reading the chat dialogue's answers."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from careerwise.booking import dialogue
from careerwise.booking.contact import parse_contact, parse_name
from careerwise.booking.errors import InvalidBookingError
from careerwise.booking.ics import CalendarEvent, escape_text, fold, render
from careerwise.booking.slots import Availability, DayException, day_slots, find_slot, free_slots
from careerwise.booking.timefmt import slot_label

TPE = ZoneInfo("Asia/Taipei")
WED = date(2026, 12, 2)  # a Wednesday
NOW = datetime(2026, 11, 30, 0, 0, tzinfo=UTC)


def _av(**kw: object) -> Availability:
    base: dict[str, object] = {"weekly": {2: ((14 * 60, 16 * 60),)}, "slot_minutes": 30}
    base.update(kw)
    return Availability(**base)  # type: ignore[arg-type]


def test_weekly_hours_become_utc_slots_on_the_grid() -> None:
    slots = day_slots(_av(), WED)
    assert [s.start for s in slots] == [
        datetime(2026, 12, 2, 6, 0, tzinfo=UTC),
        datetime(2026, 12, 2, 6, 30, tzinfo=UTC),
        datetime(2026, 12, 2, 7, 0, tzinfo=UTC),
        datetime(2026, 12, 2, 7, 30, tzinfo=UTC),
    ]
    assert all(s.end - s.start == timedelta(minutes=30) for s in slots)
    assert day_slots(_av(), WED + timedelta(days=1)) == []  # Thursday: no hours


def test_exceptions_close_a_day_close_a_range_and_add_hours() -> None:
    closed_day = _av(exceptions=(DayException(WED, "closed"),))
    assert day_slots(closed_day, WED) == []
    closed_hour = _av(exceptions=(DayException(WED, "closed", 14 * 60, 15 * 60),))
    assert [s.start.astimezone(TPE).strftime("%H:%M") for s in day_slots(closed_hour, WED)] == [
        "15:00",
        "15:30",
    ]
    extra = _av(exceptions=(DayException(WED, "extra", 15 * 60 + 30, 17 * 60),))  # overlaps: merged
    assert [s.start.astimezone(TPE).strftime("%H:%M") for s in day_slots(extra, WED)] == [
        "14:00",
        "14:30",
        "15:00",
        "15:30",
        "16:00",
        "16:30",
    ]


def test_a_slot_that_does_not_fit_whole_is_not_offered() -> None:
    av = _av(weekly={2: ((14 * 60, 15 * 60 + 45),)}, slot_minutes=60)
    assert [s.start.astimezone(TPE).hour for s in day_slots(av, WED)] == [14]


def test_daylight_saving_zones_get_the_right_instants() -> None:
    # 2026-03-29: Europe/Berlin moves from UTC+1 to UTC+2 at 02:00
    av = Availability(weekly={6: ((9 * 60, 10 * 60),), 5: ((9 * 60, 10 * 60),)}, timezone="Europe/Berlin")
    assert day_slots(av, date(2026, 3, 28))[0].start == datetime(2026, 3, 28, 8, 0, tzinfo=UTC)
    assert day_slots(av, date(2026, 3, 29))[0].start == datetime(2026, 3, 29, 7, 0, tzinfo=UTC)


def test_free_slots_skip_busy_too_soon_and_beyond_the_horizon() -> None:
    av = _av(horizon_days=3, min_notice_minutes=60)
    busy = [(datetime(2026, 12, 2, 6, 30, tzinfo=UTC), datetime(2026, 12, 2, 7, 0, tzinfo=UTC))]
    got = free_slots(av, now=NOW, start_day=WED, days=1, busy=busy)
    assert [s.start.astimezone(TPE).strftime("%H:%M") for s in got] == ["14:00", "15:00", "15:30"]
    # now is 13:30 Taipei on that day: the 14:00 slot is within the hour of notice
    late = datetime(2026, 12, 2, 5, 30, tzinfo=UTC)
    soon = free_slots(av, now=late, start_day=WED, days=1, busy=[])
    assert [s.start.astimezone(TPE).strftime("%H:%M") for s in soon] == ["14:30", "15:00", "15:30"]
    assert free_slots(av, now=NOW - timedelta(days=10), start_day=WED, days=1, busy=[]) == []


def test_find_slot_says_why_a_time_cannot_be_booked() -> None:
    av = _av(horizon_days=3)
    assert find_slot(av, datetime(2026, 12, 2, 6, 0, tzinfo=UTC), now=NOW)[1] == "ok"
    assert find_slot(av, datetime(2026, 12, 2, 6, 10, tzinfo=UTC), now=NOW)[1] == "not_open"
    assert (
        find_slot(av, datetime(2026, 12, 2, 6, 0, tzinfo=UTC), now=datetime(2026, 12, 3, tzinfo=UTC))[1]
        == "past"
    )
    assert find_slot(av, datetime(2026, 12, 2, 6, 0, tzinfo=UTC), now=NOW - timedelta(days=5))[1] == (
        "beyond_horizon"
    )


def test_labels_say_the_time_zone() -> None:
    start = datetime(2026, 12, 2, 6, 0, tzinfo=UTC)
    end = start + timedelta(minutes=30)
    assert slot_label(start, end, TPE, zh=True) == "2026-12-02 (三) 14:00–14:30 台北時間"
    assert slot_label(start, end, TPE, zh=False) == "Wed 2026-12-02 14:00–14:30 Taipei time (UTC+08:00)"
    # a naive value from SQLite means UTC
    assert slot_label(start.replace(tzinfo=None), end, TPE, zh=True).startswith("2026-12-02 (三) 14:00")


@pytest.mark.parametrize(
    ("raw", "kind", "value"),
    [
        ("a@b.com", "email", "a@b.com"),
        (" Mei.Lin+cw@Example.COM.tw ", "email", "Mei.Lin+cw@example.com.tw"),
        ("LINE: Summer.Coach", "line", "summer.coach"),
        ("line id mei_123", "line", "mei_123"),
        ("@careerwise", "line", "@careerwise"),
        ("ｌｉｎｅ：ｍｅｉ１２３", "line", "mei123"),  # full-width input from a phone keyboard
    ],
)
def test_contacts_that_validate(raw: str, kind: str, value: str) -> None:
    c = parse_contact(raw)
    assert (c.kind, c.value) == (kind, value)


@pytest.mark.parametrize("raw", ["", "王小明", "a@b", "a@@b.com", "a b@c.com", "abc", "x" * 21, "a..b@c.com"])
def test_contacts_that_do_not(raw: str) -> None:
    with pytest.raises(InvalidBookingError):
        parse_contact(raw)


def test_names() -> None:
    assert parse_name("  王   小明 ") == "王 小明"
    for bad in ("", "   ", "2", "x" * 81, "a\x00b"):
        with pytest.raises(InvalidBookingError):
            parse_name(bad)


def _unfold(data: bytes) -> list[str]:
    return data.decode("utf-8").replace("\r\n ", "").split("\r\n")


def test_ics_is_rfc5545_crlf_folded_and_escaped() -> None:
    start = datetime(2026, 12, 2, 6, 0, tzinfo=UTC)
    description = "2026-12-02 (三) 14:00–14:30 台北時間\n姓名: 王小明; 備註, 其他\\" + "長" * 60
    data = render(
        CalendarEvent(
            uid="abc@careerwise",
            start=start,
            end=start + timedelta(minutes=30),
            stamp=datetime(2026, 11, 30, 1, 2, 3, tzinfo=UTC),
            summary="職涯諮詢 with Summer",
            description=description,
            sequence=1,
        )
    )
    assert data.endswith(b"END:VCALENDAR\r\n")
    assert b"\n" not in data.replace(b"\r\n", b"")  # no bare LF anywhere
    physical = data.split(b"\r\n")[:-1]
    assert all(len(line) <= 75 for line in physical)
    assert any(line.startswith(b" ") for line in physical)  # the long description was folded
    for line in physical:
        line.decode("utf-8")  # never folded inside a UTF-8 sequence
    lines = _unfold(data)
    assert lines[:3] == ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//CareerWise//Bookings//ZH-TW"]
    assert "DTSTART:20261202T060000Z" in lines and "DTEND:20261202T063000Z" in lines
    assert "DTSTAMP:20261130T010203Z" in lines and "UID:abc@careerwise" in lines
    assert "SEQUENCE:1" in lines and "STATUS:CONFIRMED" in lines and "METHOD:PUBLISH" in lines
    desc = next(x for x in lines if x.startswith("DESCRIPTION:"))
    assert desc == "DESCRIPTION:" + escape_text(description)
    assert "\\n姓名: 王小明\\; 備註\\, 其他\\\\" in desc


def test_ics_for_a_cancelled_booking() -> None:
    start = datetime(2026, 12, 2, 6, 0, tzinfo=UTC)
    event = CalendarEvent("u@x", start, start + timedelta(minutes=30), start, "s", cancelled=True)
    lines = _unfold(render(event))
    assert "STATUS:CANCELLED" in lines and "METHOD:CANCEL" in lines


def test_fold_keeps_short_lines_and_splits_exactly_at_75_octets() -> None:
    assert fold("A" * 75) == "A" * 75
    assert fold("A" * 76) == "A" * 75 + "\r\n A"
    assert fold("台" * 30).split("\r\n")[0] == "台" * 25  # 75 octets = 25 three-byte characters


def test_dialogue_reading() -> None:
    offered = [datetime(2026, 12, 2, 6, 0, tzinfo=UTC), datetime(2026, 12, 3, 6, 0, tzinfo=UTC)]
    assert dialogue.pick("2", offered, TPE) == offered[1]
    assert dialogue.pick("第1個", offered, TPE) == offered[0]
    assert dialogue.pick("12/03 14:00", offered, TPE) == offered[1]
    assert dialogue.pick("12月2日 下午2點", offered, TPE) == offered[0]
    assert dialogue.pick("14:00", offered, TPE) is None  # two offered slots at 14:00: ambiguous
    assert dialogue.pick("3", offered, TPE) is None
    assert dialogue.command("我的預約") == "list" and dialogue.command("my bookings") == "list"
    assert dialogue.command("取消我的預約") == "cancel" and dialogue.command("cancel my booking") == "cancel"
    assert dialogue.command("可以改期嗎") == "reschedule" and dialogue.command("reschedule") == "reschedule"
    assert dialogue.is_abort("取消") and dialogue.is_abort("算了") and not dialogue.is_abort("取消預約")
    assert dialogue.is_yes("確認") and dialogue.is_yes("yes") and not dialogue.is_yes("確認一下時間")
    assert dialogue.looks_like_answer("pick", "2") and dialogue.looks_like_answer("name", "王小明")
    assert dialogue.looks_like_answer("contact", "a@b.com") and dialogue.looks_like_answer("confirm", "確認")
    assert not dialogue.looks_like_answer("name", "面試要穿什麼？")
    assert not dialogue.looks_like_answer("pick", "我想問轉職前端要準備多久，現在在做行政工作，三十歲")
