"""``careerwise slots``: hours, exceptions, slot length, free slots and bookings, through the real
command with settings from the environment."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from datetime import date, timedelta

import pytest
from typer.testing import CliRunner

from careerwise.booking import BookingService
from careerwise.cli import app
from careerwise.config import Settings, get_settings
from careerwise.store import Database
from tests.booking_helpers import TOKEN_KEY, slots_ahead


@pytest.fixture
def slots_env(monkeypatch: pytest.MonkeyPatch, make_settings: Callable[..., Settings]) -> Iterator[Settings]:
    settings = make_settings(with_corpus=False)
    monkeypatch.setenv("CAREERWISE_DATA_DIR", str(settings.data_dir))
    get_settings.cache_clear()
    yield settings
    get_settings.cache_clear()


def _cli(*args: str) -> str:
    result = CliRunner().invoke(app, ["slots", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_slots_cli(slots_env: Settings) -> None:
    for weekday in range(7):
        _cli("hours", str(weekday), "09:00-12:00", "14:00-18:00")
    out = _cli("length", "60")
    assert "slots of 60 min" in out and "0 Mon 一  09:00-12:00, 14:00-18:00" in out
    closed = date.today() + timedelta(days=3)
    assert "closed" in _cli("close", closed.isoformat(), "--note", "國定假日")
    extra = _cli("open", (closed + timedelta(days=1)).isoformat(), "19:00-21:00")
    assert "extra 19:00-21:00" in extra
    shown = _cli("show", "--from", closed.isoformat(), "--days", "2")
    assert f"{closed} closed all day 國定假日" in shown
    day_after = (closed + timedelta(days=1)).isoformat()
    assert f"{day_after} (" in shown and "19:00–20:00 台北時間" in shown and "20:00–21:00 台北時間" in shown
    assert f"{closed.isoformat()} (" not in shown.split("free slots")[1]  # nothing that day

    async def book() -> str:
        db = Database(slots_env.resolved_database_url)
        try:
            service = BookingService(db, token_key=TOKEN_KEY)
            [slot] = await slots_ahead(service, 1)
            return (await service.book(slot_start=slot.start, name="王小明", contact="a@b.com")).booking.id
        finally:
            await db.dispose()

    booking_id = asyncio.run(book())
    listed = _cli("bookings")
    assert booking_id in listed and "王小明" in listed and "台北時間" in listed
    assert '"status": "active"' in _cli("bookings", "--json")

    bad = CliRunner().invoke(app, ["slots", "hours", "1", "18:00-09:00"])
    assert bad.exit_code == 1 and "error:" in bad.output
    bad = CliRunner().invoke(app, ["slots", "length", "7"])
    assert bad.exit_code == 1 and "slot length" in bad.output
    bad = CliRunner().invoke(app, ["slots", "close", "someday"])
    assert bad.exit_code == 2


def test_slots_cli_shows_and_confirms_the_default_hours(
    slots_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAREERWISE_DEFAULT_HOURS", "mon-fri 10:00-12:00; sat 09:00-10:00")
    get_settings.cache_clear()
    shown = _cli("show")
    assert (
        "the shipped defaults" in shown
        and "0 Mon 一  10:00-12:00" in shown
        and "5 Sat 六  09:00-10:00" in shown
    )
    confirmed = _cli("confirm")
    assert "shipped defaults" not in confirmed and "5 Sat 六  09:00-10:00" in confirmed
    # confirmed: another default later changes nothing
    monkeypatch.setenv("CAREERWISE_DEFAULT_HOURS", "none")
    get_settings.cache_clear()
    assert "0 Mon 一  10:00-12:00" in _cli("show")
