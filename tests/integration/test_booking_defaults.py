"""Booking from the first minute: the shipped default hours apply until an administrator confirms or
edits them, and the chat never dead-ends (no free slot in the window: when the next ones open; no
hours at all: says so; both: how to reach the coach), in Chinese and English. On SQLite, with a fixed
clock: Monday 2026-12-07 09:00 Taipei."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from alembic import command

from careerwise.booking import BookingService
from careerwise.booking.hours import parse_hours
from careerwise.flows.base import FlowContext, FlowOptions
from careerwise.flows.booking import BookingFlow
from careerwise.store import Database
from careerwise.tools.registry import ToolRegistry
from tests.booking_helpers import TOKEN_KEY
from tests.integration.test_postgres import _alembic_config

NOW = datetime(2026, 12, 7, 1, 0, tzinfo=UTC)  # Monday 09:00 in Taipei
MONDAY = date(2026, 12, 7)
CONTACT = "summer@example.com 或 LINE @summercoach"
OLD_DEAD_END = "請過幾天再來看看"


class _NoModel:
    model = "none"  # the booking flow never calls the model


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    url = f"sqlite+aiosqlite:///{tmp_path / 'bookings.db'}"
    Database(url).migrate()
    handle = Database(url)
    yield handle
    await handle.dispose()


def _service(db: Database, hours: str = "mon-fri 10:00-18:00", contact: str = CONTACT) -> BookingService:
    return BookingService(
        db, token_key=TOKEN_KEY, clock=lambda: NOW, default_hours=parse_hours(hours), contact_line=contact
    )


async def _reply(service: BookingService, message: str, *, zh: bool) -> str:
    ctx = FlowContext(
        message=message,
        history=[],
        zh=zh,
        provider=_NoModel(),
        tools=ToolRegistry(),
        intent="booking",
        options=FlowOptions(),
    )
    return "".join([e.text async for e in BookingFlow(service)(ctx) if hasattr(e, "text")])


async def test_default_hours_apply_on_a_fresh_install(db: Database) -> None:
    service = _service(db)
    av = await service.availability()
    assert av.hours_default and av.weekly == parse_hours("mon-fri 10:00-18:00")
    slots = await service.free_slots(start_day=MONDAY, days=7)
    local = [s.start.astimezone(av.tz) for s in slots]
    assert {t.date() for t in local} == {MONDAY + timedelta(days=i) for i in range(5)}  # no weekend
    assert local[0].hour == 10 and local[-1].strftime("%H:%M") == "17:30" and len(slots) == 5 * 16
    assert "1. " in await _reply(service, "我想預約諮詢", zh=True)  # the first minute: slots offered
    # no default configured: nothing to offer, and the reply says so (no row was written meanwhile)
    assert not await _service(db, hours="none").has_hours()


async def test_editing_one_weekday_keeps_the_other_defaults_and_confirms_them(db: Database) -> None:
    service = _service(db)
    av = await service.set_weekly(2, [(14 * 60, 17 * 60)], by="boss")
    assert not av.hours_default
    assert av.weekly[0] == ((600, 1080),) and av.weekly[2] == ((840, 1020),) and 5 not in av.weekly
    # confirmed: a different default later (a changed CAREERWISE_DEFAULT_HOURS) moves nothing
    later = await _service(db, hours="sat 09:00-10:00").availability()
    assert later.weekly == av.weekly and not later.hours_default


async def test_confirming_stores_the_defaults_once(db: Database) -> None:
    service = _service(db)
    first = await service.confirm_hours(by="boss")
    again = await service.confirm_hours(by="boss")
    assert not first.hours_default and first.weekly == again.weekly == parse_hours("mon-fri 10:00-18:00")
    assert (await _service(db, hours="none").availability()).weekly == first.weekly


async def test_an_empty_week_is_no_hours_not_the_defaults_again(db: Database) -> None:
    service = _service(db)
    av = await service.set_week({}, by="boss")
    assert av.weekly == {} and not av.hours_default and not await service.has_hours()
    await service.add_exception(
        day=MONDAY + timedelta(days=1), kind="extra", start_minute=600, end_minute=660
    )
    assert await service.has_hours()


@pytest.mark.parametrize(
    ("message", "zh", "says"),
    [
        ("我想預約諮詢", True, "沒有開放諮詢預約時段"),
        ("I'd like to book a session", False, "no consultation hours"),
    ],
)
async def test_no_hours_at_all_says_so_and_how_to_reach_the_coach(
    db: Database, message: str, zh: bool, says: str
) -> None:
    service = _service(db)
    await service.set_week({}, by="boss")
    reply = await _reply(service, message, zh=zh)
    assert says in reply and CONTACT in reply and OLD_DEAD_END not in reply
    bare = await _reply(_service(db, contact=""), message, zh=zh)
    assert says in bare and ("還沒有留下其他聯絡方式" if zh else "has not left another way") in bare


@pytest.mark.parametrize(
    ("message", "zh", "expected"),
    [
        (
            "我想預約諮詢",
            True,
            ["（到 2026-12-09 (三) 為止）都已經約滿", "2026-12-10 (四)", "2026-12-08 (二)", CONTACT],
        ),
        (
            "book a session",
            False,
            ["(up to Wed 2026-12-09) is taken", "Thu 2026-12-10", "Tue 2026-12-08", CONTACT],
        ),
    ],
)
async def test_a_full_window_says_when_the_next_slots_open(
    db: Database, message: str, zh: bool, expected: list[str]
) -> None:
    """Hours 10:00-11:00 on weekdays, bookable 2 days ahead (Mon to Wed), every slot taken: the next
    day with a free slot is Thursday, which opens for booking on Tuesday."""
    service = _service(db, hours="mon-fri 10:00-11:00")
    await service.update_settings(horizon_days=2, by="boss")
    taken = await service.next_free(limit=50)
    assert len(taken) == 6  # Mon, Tue, Wed at 10:00 and 10:30
    for i, slot in enumerate(taken):
        await service.book(slot_start=slot.start, name=f"客戶{i}", contact=f"c{i}@example.com")
    assert await service.next_free() == []
    reply = await _reply(service, message, zh=zh)
    assert all(part in reply for part in expected), reply
    assert OLD_DEAD_END not in reply


async def test_no_free_slot_within_a_year_still_gives_the_contact(db: Database) -> None:
    service = _service(db)
    await service.set_week({}, by="boss")
    await service.add_exception(
        day=MONDAY + timedelta(days=1), kind="extra", start_minute=600, end_minute=630
    )
    [only] = await service.next_free()
    await service.book(slot_start=only.start, name="王小明", contact="a@example.com")
    assert await service.next_opening() is None
    reply = await _reply(service, "我想預約", zh=True)
    assert "一年內都沒有" in reply and CONTACT in reply


def test_the_upgrade_keeps_hours_someone_set_as_confirmed(tmp_path: Path) -> None:
    """Migration 0018 on a database made before it: a coach with weekly hours is confirmed (the
    defaults never replace them); a coach with a settings row but no hours gets the defaults."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'old.db'}"
    cfg = _alembic_config(url)
    command.upgrade(cfg, "0017")
    with sqlite3.connect(tmp_path / "old.db") as raw:
        for coach in ("summer", "other"):
            raw.execute(
                "INSERT INTO booking_settings (coach_id, slot_minutes, timezone, horizon_days, "
                "min_notice_minutes, updated_at, updated_by) VALUES (?, 30, 'Asia/Taipei', 28, 60, "
                "'2026-11-01 00:00:00', 'boss')",
                (coach,),
            )
        raw.execute(
            "INSERT INTO availability_windows (coach_id, weekday, start_minute, end_minute) "
            "VALUES ('summer', 5, 540, 600)"
        )
    command.upgrade(cfg, "head")
    with sqlite3.connect(tmp_path / "old.db") as raw:
        confirmed = dict(raw.execute("SELECT coach_id, hours_confirmed_at FROM booking_settings").fetchall())
    assert confirmed == {"summer": "2026-11-01 00:00:00", "other": None}

    async def hours(coach: str) -> tuple[bool, dict[int, tuple[tuple[int, int], ...]]]:
        db = Database(url)
        try:
            av = await BookingService(
                db, token_key=TOKEN_KEY, coach_id=coach, default_hours=parse_hours("mon 10:00-11:00")
            ).availability()
            return av.hours_default, av.weekly
        finally:
            await db.dispose()

    assert asyncio.run(hours("summer")) == (False, {5: ((540, 600),)})
    assert asyncio.run(hours("other")) == (True, {0: ((600, 660),)})
