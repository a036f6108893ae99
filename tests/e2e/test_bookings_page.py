"""The bookings page in Chromium, as a guest: free slots in Taipei time, book, see it listed, move it to
another slot, cancel it; a week with no free slot says what comes next (a later week to jump to, or the
day the next slots open, and how to reach the coach); a booking carries a topic — under the app's
Content-Security-Policy, with no console errors."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import date, timedelta

from playwright.sync_api import Page, expect

from careerwise.booking import BookingService
from careerwise.booking.slots import local_today
from careerwise.booking.timefmt import day_label
from careerwise.store import Database
from tests.booking_helpers import TOKEN_KEY, setup_database
from tests.conftest import LiveServer
from tests.e2e.conftest import run_async, screenshot

CONTACT = "summer@example.com 或 LINE @summercoach"


def _watch(page: Page) -> list[str]:
    """Script errors and CSP refusals the page hits (resource errors such as a guest's 401 are handled)."""
    problems: list[str] = []
    page.on(
        "console",
        lambda m: (
            problems.append(m.text)
            if m.type == "error" and not m.text.startswith("Failed to load resource")
            else None
        ),
    )
    page.on("pageerror", lambda e: problems.append(str(e)))
    return problems


def test_a_guest_books_moves_and_cancels_a_consultation(
    page: Page, live_server: Callable[..., LiveServer]
) -> None:
    server = live_server()
    run_async(lambda: setup_database(server.services.settings.resolved_database_url))
    # a guest's "my bookings" is a 401 and /favicon.ico a 404: resource errors the page handles; what
    # must not happen is a script error or a CSP refusal ("Refused to apply inline style ...")
    problems = _watch(page)
    page.on("dialog", lambda d: d.accept())  # the cancel confirmation

    page.goto(f"{server.url}/bookings")
    expect(page.locator(".tz").first).to_contain_text("台北時間")
    slots = page.locator("#slots .slot")
    expect(slots.first).to_be_visible()
    first_label = slots.nth(0).inner_text()
    second_label = slots.nth(1).inner_text()
    assert "台北時間" in first_label or ":" in first_label

    slots.nth(0).click()
    expect(page.locator("#chosen")).to_contain_text(first_label)
    page.fill("#name", "王小明")
    page.fill("#contact", "ming@example.com")
    page.click("#submit")
    expect(page.locator("#message")).to_contain_text("預約完成")
    card = page.locator("#mine .booking.active")
    expect(card).to_have_count(1)
    expect(card).to_contain_text(first_label)
    expect(card).to_contain_text("王小明")
    screenshot(page, "bookings-booked")

    card.get_by_role("button", name="改期 Reschedule").click()
    expect(page.locator("#moving")).to_be_visible()
    page.locator("#slots .slot", has_text=second_label).first.click()
    expect(page.locator("#message")).to_contain_text("改期完成")
    active = page.locator("#mine .booking.active")
    expect(active).to_have_count(1)
    expect(active).to_contain_text(second_label)
    expect(page.locator("#mine .booking.rescheduled")).to_have_count(1)

    active.get_by_role("button", name="取消 Cancel").click()
    expect(page.locator("#message")).to_contain_text("已取消")
    expect(page.locator("#mine .booking.active")).to_have_count(0)
    assert problems == []


def _two_extra_days(url: str) -> tuple[date, date]:
    """No weekly hours; one extra half hour 10 days ahead (inside the 28-day horizon) and one 40 days
    ahead (beyond it). Returns those two days."""

    async def run() -> tuple[date, date]:
        db = Database(url)
        try:
            service = BookingService(db, token_key=TOKEN_KEY)
            av = await service.set_week({}, by="test")
            today = local_today(av, service.now())
            days = today + timedelta(days=10), today + timedelta(days=40)
            for day in days:
                await service.add_exception(day=day, kind="extra", start_minute=600, end_minute=630)
            return days
        finally:
            await db.dispose()

    return asyncio.run(run())


def test_an_empty_week_leads_on_and_a_booking_carries_its_topic(
    page: Page, live_server: Callable[..., LiveServer]
) -> None:
    server = live_server(booking_contact=CONTACT)
    soon, later = run_async(lambda: _two_extra_days(server.services.settings.resolved_database_url))
    problems = _watch(page)

    page.goto(f"{server.url}/bookings")
    none = page.locator("#slots #none")
    expect(none).to_contain_text("這一週沒有可預約的時段")
    expect(none.locator(".next")).to_contain_text(f"{day_label(soon, zh=True)} 10:00–10:30 台北時間")
    expect(none.locator(".contact")).to_contain_text(f"想直接聯絡教練：{CONTACT}")

    page.click("#jump")
    slot = page.locator("#slots .slot")
    expect(slot).to_have_count(1)
    expect(slot).to_contain_text(day_label(soon, zh=True))
    slot.click()
    page.fill("#name", "王小明")
    page.fill("#contact", "ming@example.com")
    page.fill("#topic", "想從工程師轉職產品經理")
    page.click("#submit")
    expect(page.locator("#message")).to_contain_text("預約完成")
    expect(page.locator("#message")).to_contain_text("主題 Topic: 想從工程師轉職產品經理")
    expect(page.locator("#mine .booking.active")).to_contain_text("想從工程師轉職產品經理")

    # that week's only slot is taken and nothing else is free within the horizon: the page says on
    # which day (beyond the horizon) the next slot is and from when it can be booked, and the contact
    opening = page.locator("#slots #none .next")
    expect(opening).to_contain_text(f"下一個有空檔的日子是 {day_label(later, zh=True)}（台北時間）")
    expect(opening).to_contain_text("起開放預約")
    expect(opening).to_contain_text(f"The next day with a free slot is {day_label(later, zh=False)}")
    expect(page.locator("#slots #none .contact")).to_contain_text(CONTACT)
    expect(page.locator("#jump")).to_have_count(0)
    screenshot(page, "bookings-next-opening")
    assert problems == []
