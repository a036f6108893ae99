"""``GET /api/slots`` never dead-ends: a range with no free slot says whether there are hours at all, the
first free slot later within the booking horizon, or else when the next slots open (the first day beyond
the horizon with a free slot and the day it opens for booking), and how to reach the coach (the
configured contact line, null when none). Over a live server whose booking service has a fixed clock:
Monday 2026-12-07 09:00 Taipei."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import Any

import pytest

from careerwise.api.deps import get_bookings
from careerwise.booking import BookingService
from careerwise.booking.hours import parse_hours
from careerwise.store import Database
from tests.booking_helpers import TOKEN_KEY
from tests.conftest import LiveServer, client, on_db

NOW = datetime(2026, 12, 7, 1, 0, tzinfo=UTC)  # Monday 09:00 in Taipei
CONTACT = "summer@example.com 或 LINE @summercoach"
NEW_FIELDS = ("has_hours", "next_free_slot", "next_opening", "contact_line")


def _service(db: Database, hours: str, contact: str = CONTACT) -> BookingService:
    return BookingService(
        db, token_key=TOKEN_KEY, clock=lambda: NOW, default_hours=parse_hours(hours), contact_line=contact
    )


def _serve(server: LiveServer, hours: str, contact: str = CONTACT) -> None:
    """The server's bookings answer with the fixed clock, these default hours and this contact line."""
    service = _service(server.services.db, hours, contact)

    async def fixed() -> BookingService:
        return service

    server.app.dependency_overrides[get_bookings] = fixed


def _slots(server: LiveServer, start: str, days: int = 7) -> dict[str, Any]:
    with client(server) as c:
        r = c.get("/api/slots", params={"from": start, "days": days})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


@pytest.mark.parametrize("contact", [CONTACT, ""])
def test_a_full_horizon_says_when_the_next_slots_open_and_how_to_reach_the_coach(
    live_server: Callable[..., LiveServer], contact: str
) -> None:
    """Weekdays 10:00-11:00, bookable 2 days ahead (Mon to Wed), every one of those slots taken: the
    week has no free slot; the next day with one is Thursday, which opens for booking on Tuesday."""
    server = live_server()
    hours = "mon-fri 10:00-11:00"

    async def fill(db: Database) -> None:
        service = _service(db, hours)
        await service.update_settings(horizon_days=2, by="boss")
        for i, slot in enumerate(await service.next_free(limit=50)):
            await service.book(slot_start=slot.start, name=f"客戶{i}", contact=f"c{i}@example.com")

    on_db(server, fill)
    _serve(server, hours, contact)
    body = _slots(server, "2026-12-07")
    assert body["slots"] == [] and body["has_hours"] is True and body["next_free_slot"] is None
    assert body["next_opening"] == {
        "day": "2026-12-10",
        "opens_on": "2026-12-08",
        "label": "2026-12-10 (四)",
        "label_en": "Thu 2026-12-10",
        "opens_label": "2026-12-08 (二)",
        "opens_label_en": "Tue 2026-12-08",
    }
    assert body["contact_line"] == (contact or None)
    # the fields that were there before keep their meaning
    assert (body["timezone"], body["slot_minutes"], body["start_day"], body["days"]) == (
        "Asia/Taipei",
        30,
        "2026-12-07",
        7,
    )


def test_a_later_week_with_a_free_slot_is_named_and_a_week_with_slots_adds_nothing(
    live_server: Callable[..., LiveServer],
) -> None:
    """No weekly hours, one extra half hour on Monday 2026-12-21 (within the 28-day horizon)."""
    server = live_server()

    async def extra(db: Database) -> None:
        service = _service(db, "none")
        await service.add_exception(day=date(2026, 12, 21), kind="extra", start_minute=600, end_minute=630)

    on_db(server, extra)
    _serve(server, "none")
    empty = _slots(server, "2026-12-07")
    assert empty["slots"] == [] and empty["has_hours"] is True and empty["next_opening"] is None
    nxt = empty["next_free_slot"]
    assert nxt["start"] == "2026-12-21T02:00:00Z" and nxt["start_local"] == "2026-12-21T10:00:00+08:00"
    assert nxt["label"] == "2026-12-21 (一) 10:00–10:30 台北時間"
    assert empty["contact_line"] == CONTACT

    week = _slots(server, "2026-12-21")
    assert [s["start"] for s in week["slots"]] == ["2026-12-21T02:00:00Z"]
    assert week["has_hours"] is True
    assert (week["next_free_slot"], week["next_opening"], week["contact_line"]) == (None, None, None)

    # after that week, inside the horizon: nothing later, and no day beyond the horizon has a slot
    after = _slots(server, "2026-12-22")
    assert after["slots"] == [] and after["has_hours"] is True
    assert (after["next_free_slot"], after["next_opening"], after["contact_line"]) == (None, None, CONTACT)


@pytest.mark.parametrize("contact", [CONTACT, ""])
def test_no_hours_at_all_says_so(live_server: Callable[..., LiveServer], contact: str) -> None:
    server = live_server()
    _serve(server, "none", contact)
    body = _slots(server, "2026-12-07", days=14)
    assert body["slots"] == [] and body["has_hours"] is False
    assert (body["next_free_slot"], body["next_opening"]) == (None, None)
    assert body["contact_line"] == (contact or None)


def test_the_new_fields_are_documented_in_the_openapi_schema(live_server: Callable[..., LiveServer]) -> None:
    server = live_server()
    with client(server) as c:
        schemas = c.get("/openapi.json").json()["components"]["schemas"]
    props = schemas["SlotsOut"]["properties"]
    for name in NEW_FIELDS:
        assert props[name].get("description"), name
    assert "has_hours" in schemas["SlotsOut"]["required"]
    opening = schemas["OpeningOut"]["properties"]
    assert {"day", "opens_on", "label", "label_en", "opens_label", "opens_label_en"} <= set(opening)
    assert all(opening[k].get("description") for k in ("day", "opens_on"))
