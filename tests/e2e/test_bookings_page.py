"""The bookings page in Chromium, as a guest: free slots in Taipei time, book, see it listed, move it to
another slot, cancel it — under the app's Content-Security-Policy, with no console errors."""

from __future__ import annotations

from collections.abc import Callable

from playwright.sync_api import Page, expect

from tests.booking_helpers import setup_database
from tests.conftest import LiveServer
from tests.e2e.conftest import run_async, screenshot


def test_a_guest_books_moves_and_cancels_a_consultation(
    page: Page, live_server: Callable[..., LiveServer]
) -> None:
    server = live_server()
    run_async(lambda: setup_database(server.services.settings.resolved_database_url))
    problems: list[str] = []
    # a guest's "my bookings" is a 401 and /favicon.ico a 404: resource errors the page handles; what
    # must not happen is a script error or a CSP refusal ("Refused to apply inline style ...")
    page.on(
        "console",
        lambda m: (
            problems.append(m.text)
            if m.type == "error" and not m.text.startswith("Failed to load resource")
            else None
        ),
    )
    page.on("pageerror", lambda e: problems.append(str(e)))
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
