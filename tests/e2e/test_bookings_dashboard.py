"""The dashboard's Bookings view in Chromium, under the app's Content-Security-Policy: the shipped
default hours flagged "confirm or edit", upcoming bookings with name, contact and topic, a day exported
as .ics, a booking moved and one cancelled, the weekly hours form (a refused value, a saved week),
an exception added and removed, and the warning when no hours are left."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from playwright.sync_api import BrowserContext, Page, expect

from tests.conftest import LiveServer, client
from tests.e2e.test_topk_dashboard import browser_login, watch_console
from tests.integration.test_admin_api import ADMIN, admin_client


def _free_day(server: LiveServer) -> tuple[str, list[dict[str, Any]]]:
    """A day at least two days ahead with four free slots (the default hours: a weekday)."""
    with client(server) as c:
        slots = c.get("/api/slots", params={"days": 14}).json()["slots"]
    by_day: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in slots:
        by_day[s["start_local"][:10]].append(s)
    today = datetime.fromisoformat(slots[0]["start_local"]).date()
    day = next(
        d
        for d, found in sorted(by_day.items())
        if len(found) >= 4 and (datetime.fromisoformat(d).date() - today).days >= 2
    )
    return day, by_day[day]


def test_the_coach_manages_bookings_and_hours(
    live_server: Callable[..., LiveServer], context: BrowserContext, page: Page
) -> None:
    server = live_server()
    with admin_client(server) as boss:
        day, slots = _free_day(server)
        with client(server) as guest:
            for slot, name, topic in ((slots[0], "王小明", "轉職到資料分析"), (slots[1], "Amy Chen", None)):
                body = {
                    "slot_start": slot["start"],
                    "name": name,
                    "contact": "LINE: ming.wang" if topic else "amy@example.com",
                }
                if topic:
                    body["topic"] = topic
                assert guest.post("/api/bookings", json=body).status_code == 201
        browser_login(context, server, ADMIN)
        problems = watch_console(page)
        page.on("dialog", lambda d: d.accept())  # the cancel confirmation

        page.goto(f"{server.url}/admin")
        expect(page.locator('[data-test="default-hours"]')).to_contain_text("shipped defaults")
        page.click('#tabs a[href="#bookings"]')
        expect(page.locator('[data-test="hours-banner"]')).to_contain_text("Default hours — confirm or edit")
        expect(page.locator('[data-test="no-contact-banner"]')).to_be_visible()
        rows = page.locator("#bookings-table tbody tr")
        expect(rows).to_have_count(2)
        expect(rows.nth(0).locator('[data-test="name"]')).to_have_text("王小明")
        expect(rows.nth(0).locator('[data-test="contact"]')).to_contain_text("LINE")
        expect(rows.nth(0).locator('[data-test="topic"]')).to_have_text("轉職到資料分析")
        expect(rows.nth(1).locator('[data-test="topic"]')).to_have_text("–")
        expect(rows.nth(0).locator('[data-test="when"]')).to_have_text(slots[0]["label_en"])

        # the day as .ics: both bookings in one calendar
        page.fill('[data-test="ics-day"]', day)
        with page.expect_download() as download:
            page.click('[data-test="ics-export"]')
        path = download.value.path()
        assert path is not None
        text = Path(path).read_bytes().decode()
        assert text.startswith("BEGIN:VCALENDAR\r\n") and text.count("BEGIN:VEVENT") == 2
        assert download.value.suggested_filename == f"careerwise-{day}.ics"

        # move the first booking to the fourth slot, cancel the second
        rows.nth(0).locator('[data-test="move"]').click()
        page.select_option('[data-test="move-to"]', slots[3]["start"])
        page.click('[data-test="move-confirm"]')
        expect(page.locator('#bookings-table [data-test="status"]')).to_have_text(
            ["moved", "active", "active"]
        )
        expect(rows.nth(2).locator('[data-test="when"]')).to_have_text(slots[3]["label_en"])
        rows.nth(1).locator('[data-test="cancel"]').click()
        expect(page.locator('#bookings-table [data-test="status"]')).to_have_text(
            ["moved", "cancelled", "active"]
        )
        every = boss.get("/api/admin/bookings").json()["bookings"]
        assert [(b["name"], b["status"]) for b in every] == [
            ("王小明", "rescheduled"),
            ("Amy Chen", "cancelled"),
            ("王小明", "active"),
        ]

        # the weekly hours: a value the form refuses changes nothing; a saved week confirms the hours
        page.fill('[data-test="hours-0"]', "9-5")
        page.click('[data-test="hours-save"]')
        expect(page.locator('[data-test="hours-error"]')).to_contain_text("not a range like 10:00-18:00")
        assert boss.get("/api/admin/availability").json()["hours_source"] == "default"
        page.fill('[data-test="hours-0"]', "09:00-12:00, 13:00-17:00")
        page.fill('[data-test="hours-4"]', "")
        page.fill('[data-test="hours-5"]', "10:00-12:00")
        page.click('[data-test="hours-save"]')
        expect(page.locator('[data-test="hours-banner"]')).to_have_count(0)
        expect(page.locator('[data-test="default-hours"]')).to_have_count(0)
        av = boss.get("/api/admin/availability").json()
        assert av["hours_source"] == "set"
        assert av["weekly"]["0"] == [{"start": "09:00", "end": "12:00"}, {"start": "13:00", "end": "17:00"}]
        assert av["weekly"]["1"] == [{"start": "10:00", "end": "18:00"}]  # a default left as shown
        assert av["weekly"]["4"] == [] and av["weekly"]["5"] == [{"start": "10:00", "end": "12:00"}]

        # an exception added, then removed
        page.fill('[data-test="exception-day"]', day)
        page.fill('[data-test="exception-note"]', "國定假日")
        page.click('[data-test="exception-add"]')
        expect(page.locator("#exceptions-table tbody tr")).to_have_count(1)
        expect(page.locator("#exceptions-table")).to_contain_text("國定假日")
        page.click('[data-test="remove-exception"]')
        expect(page.locator("#exceptions-table")).to_have_count(0)

        # no hours at all: the view and the health strip say so
        for d in range(7):
            page.fill(f'[data-test="hours-{d}"]', "")
        page.click('[data-test="hours-save"]')
        expect(page.locator('[data-test="no-hours-banner"]')).to_be_visible()
        expect(page.locator('[data-test="no-hours"]')).to_contain_text("No consultation hours are set")
        assert problems == [], problems
