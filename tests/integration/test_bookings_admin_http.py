"""The coach's side of booking over real HTTP: the shipped default hours on a fresh install (and the
chat offering them), confirming them, the whole week as one form, no hours at all in the chat, every
booking upcoming and past with its topic, an administrator cancelling and moving someone's booking,
and one day's bookings as an .ics calendar, with the 4xx answers and the admin-only gate."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import httpx

from careerwise.store import Booking, Database
from tests.auth_helpers import login_sync
from tests.conftest import LiveServer, client
from tests.integration.test_admin_api import ADMIN, USER, make_user

TAIPEI = ZoneInfo("Asia/Taipei")
CONTACT = "summer@example.com"


def _chat(c: httpx.Client, message: str, conversation_id: str | None = None) -> str:
    return str(_turn(c, message, conversation_id)["answer"])


def _turn(c: httpx.Client, message: str, conversation_id: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"message": message, "mode": "full"}
    if conversation_id:
        body["conversation_id"] = conversation_id
    r = c.post("/api/chat", json=body)
    assert r.status_code == 200, r.text
    reply: dict[str, Any] = r.json()
    assert reply["route"]["intent"] == "booking", reply["route"]
    return reply


@contextmanager
def _clients(server: LiveServer) -> Iterator[tuple[httpx.Client, httpx.Client, httpx.Client]]:
    """An administrator, a user and an anonymous caller, each with a client of their own."""
    make_user(server, ADMIN, admin=True)
    make_user(server, USER)
    with client(server) as boss, client(server) as mei, client(server) as anon:
        login_sync(boss, ADMIN)
        login_sync(mei, USER)
        yield boss, mei, anon


def test_fresh_install_offers_default_hours_until_confirmed(live_server: Callable[..., LiveServer]) -> None:
    server = live_server(booking_contact=CONTACT)
    with _clients(server) as (boss, mei, anon):
        av = boss.get("/api/admin/availability").json()
        assert av["hours_source"] == "default" and av["has_hours"] and av["contact_line"] == CONTACT
        assert (
            av["default_hours"]
            == "mon 10:00-18:00; tue 10:00-18:00; wed 10:00-18:00; thu 10:00-18:00; fri 10:00-18:00"
        )
        assert av["weekly"]["0"] == [{"start": "10:00", "end": "18:00"}] and av["weekly"]["5"] == []
        slots = anon.get("/api/slots", params={"days": 7}).json()["slots"]
        assert slots and all(
            datetime.fromisoformat(s["start_local"]).weekday() < 5
            and "10:00" <= s["start_local"][11:16] < "18:00"
            for s in slots
        )
        # the dead end: 「我想預約諮詢」 on a fresh install now lists slots, and books one; the
        # message that asked is the booking's topic for the coach
        first = _turn(anon, "我想預約諮詢")
        conv = first["conversation_id"]
        assert "1. " in first["answer"]
        for message in ("1", "王小明", "ming@example.com"):
            _chat(anon, message, conv)
        assert "預約完成" in _chat(anon, "確認", conv)
        [booked] = boss.get("/api/admin/bookings").json()["bookings"]
        assert (booked["name"], booked["topic"], booked["channel"]) == ("王小明", "我想預約諮詢", "web")

        assert anon.post("/api/admin/availability/confirm").status_code == 401
        assert mei.post("/api/admin/availability/confirm").status_code == 403
        confirmed = boss.post("/api/admin/availability/confirm")
        assert confirmed.status_code == 200 and confirmed.json()["hours_source"] == "set"
        assert confirmed.json()["weekly"] == av["weekly"]


def test_the_week_as_one_form_and_no_hours_in_the_chat(live_server: Callable[..., LiveServer]) -> None:
    server = live_server(booking_contact=CONTACT)
    with _clients(server) as (boss, mei, anon):
        week = {"0": [{"start": "09:00", "end": "12:00"}, {"start": "13:00", "end": "17:00"}], "5": []}
        r = boss.put("/api/admin/availability/weekly", json={"days": week})
        assert r.status_code == 200, r.text
        out = r.json()
        assert out["hours_source"] == "set" and out["weekly"]["0"] == week["0"]
        assert all(out["weekly"][str(d)] == [] for d in range(1, 7))  # left out: closed, not the defaults
        overlap = {"2": [{"start": "09:00", "end": "12:00"}, {"start": "11:00", "end": "13:00"}]}
        bad = boss.put("/api/admin/availability/weekly", json={"days": overlap})
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_booking"
        backwards = {"2": [{"start": "12:00", "end": "09:00"}]}
        assert boss.put("/api/admin/availability/weekly", json={"days": backwards}).status_code == 400
        assert boss.put("/api/admin/availability/weekly", json={"days": {"7": []}}).status_code == 422
        assert (
            boss.put(
                "/api/admin/availability/weekly", json={"days": {"1": [{"start": "9:00", "end": "10:00"}]}}
            ).status_code
            == 422
        )
        assert mei.put("/api/admin/availability/weekly", json={"days": {}}).status_code == 403
        assert anon.put("/api/admin/availability/weekly", json={"days": {}}).status_code == 401
        assert (
            boss.get("/api/admin/availability").json()["weekly"]["0"] == week["0"]
        )  # refusals changed nothing

        empty = boss.put("/api/admin/availability/weekly", json={"days": {}}).json()
        assert not empty["has_hours"] and empty["hours_source"] == "set"
        zh = _chat(anon, "我想預約諮詢")
        assert "沒有開放諮詢預約時段" in zh and CONTACT in zh and "請過幾天再來看看" not in zh
        en = _chat(anon, "I want to book a consultation")
        assert "no consultation hours" in en and CONTACT in en


def _past_booking(url: str) -> None:
    """A consultation that took place yesterday, written as the service wrote it then."""

    async def run() -> None:
        db = Database(url)
        try:
            start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(days=1)
            async with db.session() as s, s.begin():
                s.add(
                    Booking(
                        id="p" * 32,
                        coach_id="summer",
                        slot_start=start,
                        slot_end=start + timedelta(minutes=30),
                        name="陳過去",
                        contact="past@example.com",
                        contact_kind="email",
                        status="active",
                        origin_id="p" * 32,
                        topic="面試複盤",
                    )
                )
        finally:
            await db.dispose()

    asyncio.run(run())


def test_admin_lists_cancels_moves_and_exports_a_day(live_server: Callable[..., LiveServer]) -> None:
    server = live_server()
    with _clients(server) as (boss, mei, anon):
        assert (
            boss.put(
                "/api/admin/availability/weekly",
                json={"days": {str(d): [{"start": "09:00", "end": "18:00"}] for d in range(7)}},
            ).status_code
            == 200
        )
        day = datetime.now(TAIPEI).date() + timedelta(days=3)
        free = anon.get("/api/slots", params={"from": day.isoformat(), "days": 2}).json()["slots"]
        on_day = [s for s in free if s["start_local"].startswith(day.isoformat())]
        next_day = [s for s in free if s["start_local"].startswith((day + timedelta(days=1)).isoformat())]
        made = []
        for i, (slot, topic) in enumerate(
            [(on_day[0], "轉職到資料分析"), (on_day[2], None), (on_day[4], "薪資談判"), (next_day[0], "履歷")]
        ):
            body: dict[str, Any] = {
                "slot_start": slot["start"],
                "name": f"客戶{i}",
                "contact": f"c{i}@example.com",
            }
            if topic:
                body["topic"] = topic
            r = anon.post("/api/bookings", json=body)
            assert r.status_code == 201, r.text
            made.append(r.json())
        assert made[0]["topic"] == "轉職到資料分析" and made[1]["topic"] is None
        too_long = {
            "slot_start": on_day[6]["start"],
            "name": "x",
            "contact": "x@example.com",
            "topic": "字" * 201,
        }
        assert anon.post("/api/bookings", json=too_long).status_code == 422
        _past_booking(server.services.settings.resolved_database_url)

        upcoming = boss.get("/api/admin/bookings", params={"scope": "upcoming"}).json()["bookings"]
        assert [b["id"] for b in upcoming] == [b["id"] for b in made]
        past = boss.get("/api/admin/bookings", params={"scope": "past"}).json()["bookings"]
        assert [(b["name"], b["contact"], b["topic"]) for b in past] == [
            ("陳過去", "past@example.com", "面試複盤")
        ]
        assert mei.get("/api/admin/bookings", params={"scope": "past"}).status_code == 403

        # the administrator moves and cancels someone else's (anonymous) booking through the same routes
        assert mei.post(f"/api/bookings/{made[1]['id']}/cancel").status_code == 404
        moved = boss.post(
            f"/api/bookings/{made[1]['id']}/reschedule", json={"slot_start": on_day[3]["start"]}
        )
        assert moved.status_code == 200 and moved.json()["rescheduled_from"] == made[1]["id"]
        taken = boss.post(
            f"/api/bookings/{moved.json()['id']}/reschedule", json={"slot_start": on_day[0]["start"]}
        )
        assert taken.status_code == 409 and taken.json()["error"]["code"] == "slot_taken"
        cancelled = boss.post(f"/api/bookings/{made[2]['id']}/cancel")
        assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"

        ics = boss.get("/api/admin/bookings/ics", params={"day": day.isoformat()})
        assert ics.status_code == 200 and ics.headers["content-type"].startswith("text/calendar")
        assert f'filename="careerwise-{day.isoformat()}.ics"' in ics.headers["content-disposition"]
        text = ics.content.decode()
        lines = text.split("\r\n")
        assert text.startswith("BEGIN:VCALENDAR\r\nVERSION:2.0\r\n") and text.endswith("END:VCALENDAR\r\n")
        assert "\n" not in text.replace("\r\n", "") and all(len(x.encode()) <= 75 for x in lines)
        assert lines.count("BEGIN:VEVENT") == lines.count("END:VEVENT") == 2  # active ones of that day only
        starts = sorted(x.removeprefix("DTSTART:") for x in lines if x.startswith("DTSTART:"))
        expected = sorted(
            datetime.fromisoformat(s).astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
            for s in (on_day[0]["start"].replace("Z", "+00:00"), on_day[3]["start"].replace("Z", "+00:00"))
        )
        assert starts == expected
        assert "STATUS:CANCELLED" not in text and text.count("UID:") == 2
        unfolded = text.replace("\r\n ", "")
        assert "轉職到資料分析" in unfolded and "客戶0" in unfolded

        empty_day = (day + timedelta(days=5)).isoformat()
        none = boss.get("/api/admin/bookings/ics", params={"day": empty_day})
        assert none.status_code == 404 and none.json()["error"]["code"] == "booking_not_found"
        assert boss.get("/api/admin/bookings/ics", params={"day": "2026-13-01"}).status_code == 422
        assert boss.get("/api/admin/bookings/ics").status_code == 422
        far = boss.get("/api/admin/bookings/ics", params={"day": date(9999, 12, 31).isoformat()})
        assert far.status_code == 400 and far.json()["error"]["code"] == "invalid_booking"
        assert mei.get("/api/admin/bookings/ics", params={"day": day.isoformat()}).status_code == 403
        assert anon.get("/api/admin/bookings/ics", params={"day": day.isoformat()}).status_code == 401
