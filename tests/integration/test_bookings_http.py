"""Bookings over real HTTP (a live uvicorn server): 50 concurrent requests for one slot on SQLite and
PostgreSQL, the REST API end to end (idempotent retry, tokens, .ics, reschedule, cancel, admin), the
chat dialogue through /api/chat, and the page."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import httpx
from sqlalchemy import func, select

from careerwise.store import Booking, BookingDialogue, Database
from tests.auth_helpers import login_sync
from tests.booking_helpers import setup_database
from tests.conftest import LiveServer, client


def _iso(dt: Any) -> str:
    return dt.isoformat().replace("+00:00", "Z")


def _db_count(url: str, *where: Any) -> int:
    async def run() -> int:
        db = Database(url)
        try:
            async with db.session() as s:
                return int(await s.scalar(select(func.count()).select_from(Booking).where(*where)) or 0)
        finally:
            await db.dispose()

    return asyncio.run(run())


def test_fifty_concurrent_requests_for_one_slot(
    db_overrides: dict[str, Any], live_server: Callable[..., LiveServer]
) -> None:
    server = live_server(**db_overrides)  # SQLite and PostgreSQL
    url = server.services.settings.resolved_database_url
    [slot, *_] = setup_database(url)

    async def run() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as c:
            return await asyncio.gather(
                *(
                    c.post(
                        "/api/bookings",
                        json={"slot_start": _iso(slot), "name": f"客戶 {i}", "contact": f"c{i}@example.com"},
                    )
                    for i in range(50)
                )
            )

    responses = asyncio.run(run())
    statuses = Counter(r.status_code for r in responses)
    assert statuses == {201: 1, 409: 49}, statuses
    conflict = next(r for r in responses if r.status_code == 409).json()["error"]
    assert conflict["code"] == "slot_taken" and "booked" in conflict["message"]
    assert conflict["details"]["next_free_slots"] and all(
        s["start"] != _iso(slot) for s in conflict["details"]["next_free_slots"]
    )
    assert _db_count(url, Booking.status == "active") == 1


def test_rest_api_book_retry_list_ics_reschedule_cancel(live_server: Callable[..., LiveServer]) -> None:
    server = live_server()
    a, b, c3 = setup_database(server.services.settings.resolved_database_url)
    with client(server) as c:
        slots = c.get("/api/slots", params={"days": 5}).json()
        assert slots["timezone"] == "Asia/Taipei" and slots["slot_minutes"] == 30
        assert any(s["start"] == _iso(a) for s in slots["slots"])
        assert all(s["label"].endswith("台北時間") for s in slots["slots"])

        body = {"slot_start": _iso(a), "name": "王小明", "contact": "LINE: ming.wang"}
        r = c.post("/api/bookings", json=body, headers={"Idempotency-Key": "double-click-1"})
        assert r.status_code == 201, r.text
        booking = r.json()
        assert booking["status"] == "active" and booking["contact_kind"] == "line"
        assert booking["label"].endswith("台北時間") and booking["ics_url"].startswith(server.url)
        # the retried request (a double click): the same booking, the same token, nothing new stored
        again = c.post("/api/bookings", json=body, headers={"Idempotency-Key": "double-click-1"})
        assert again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"
        assert again.json()["id"] == booking["id"] and again.json()["token"] == booking["token"]
        reused = c.post(
            "/api/bookings",
            json={**body, "slot_start": _iso(b)},
            headers={"Idempotency-Key": "double-click-1"},
        )
        assert reused.status_code == 400 and reused.json()["error"]["code"] == "idempotency_key_reused"

        # anonymous: nothing without the token, everything with it
        assert c.get("/api/bookings").status_code == 401
        assert c.get(f"/api/bookings/{booking['id']}").status_code == 404
        assert c.post(f"/api/bookings/{booking['id']}/cancel").status_code == 404
        token = {"X-Booking-Token": booking["token"]}
        mine = c.get("/api/bookings", headers=token).json()["bookings"]
        assert [x["id"] for x in mine] == [booking["id"]]

        ics = c.get(booking["ics_url"])
        assert ics.status_code == 200 and ics.headers["content-type"].startswith("text/calendar")
        assert "attachment" in ics.headers["content-disposition"]
        text = ics.content.decode()
        assert text.startswith("BEGIN:VCALENDAR\r\n") and text.endswith("END:VCALENDAR\r\n")
        assert f"DTSTART:{a.strftime('%Y%m%dT%H%M%SZ')}" in text and "UID:" in text and "DTSTAMP:" in text

        moved = c.post(
            f"/api/bookings/{booking['id']}/reschedule", json={"slot_start": _iso(b)}, headers=token
        )
        assert moved.status_code == 200, moved.text
        new = moved.json()
        assert new["rescheduled_from"] == booking["id"] and new["token"] == booking["token"]
        # the old slot is free again, the new one is not
        starts = {s["start"] for s in c.get("/api/slots", params={"days": 5}).json()["slots"]}
        assert _iso(a) in starts and _iso(b) not in starts
        stale = c.post(f"/api/bookings/{booking['id']}/cancel", headers=token)
        assert stale.status_code == 409 and stale.json()["error"]["details"]["moved_to"] == new["id"]
        ics2 = c.get(new["ics_url"]).content.decode()
        assert "SEQUENCE:1" in ics2 and booking["id"] in ics2.replace("\r\n ", "")

        taken = c.post("/api/bookings", json={**body, "slot_start": _iso(b), "contact": "x@y.com"})
        assert taken.status_code == 409 and taken.json()["error"]["details"]["next_free_slots"]

        cancelled = c.post(f"/api/bookings/{new['id']}/cancel", headers=token)
        assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
        assert c.post(f"/api/bookings/{new['id']}/cancel", headers=token).status_code == 200  # idempotent
        assert "STATUS:CANCELLED" in c.get(new["ics_url"]).content.decode()
        chain = c.get("/api/bookings", headers=token).json()["bookings"]  # the whole reschedule chain
        assert {x["id"]: x["status"] for x in chain} == {booking["id"]: "rescheduled", new["id"]: "cancelled"}

        # validation: clear 4xx, never a 500
        for bad, status in [
            ({"slot_start": "2026-12-02T14:00:00", "name": "x", "contact": "a@b.com"}, 422),  # no offset
            ({"slot_start": _iso(c3), "name": "x", "contact": "王小明"}, 400),
            ({"slot_start": _iso(c3), "name": "", "contact": "a@b.com"}, 422),
            ({"slot_start": _iso(c3 + timedelta(minutes=10)), "name": "x", "contact": "a@b.com"}, 400),
            ({"slot_start": _iso(c3), "name": "x", "contact": "a@b.com", "extra": 1}, 422),
        ]:
            r = c.post("/api/bookings", json=bad)
            assert r.status_code == status, (bad, r.text)
            assert r.json()["error"]["message"]
        assert c.get("/api/slots", params={"days": 0}).status_code == 422
        assert c.get("/api/slots", params={"from": "tomorrow"}).status_code == 422


def test_logged_in_users_see_their_own_and_admins_set_the_hours(
    live_server: Callable[..., LiveServer],
) -> None:
    server = live_server()
    url = server.services.settings.resolved_database_url
    a, b, _ = setup_database(url)

    async def users() -> None:
        from careerwise.auth import AccountService

        db = Database(url)
        try:
            accounts = AccountService(db, "x" * 48, timedelta(days=1))
            for email, admin in (("mei@example.com", False), ("boss@example.com", True)):
                await accounts.create_user(
                    email=email,
                    password="correct horse battery",
                    display_name=email,
                    role="admin" if admin else "user",
                )
        finally:
            await db.dispose()

    asyncio.run(users())
    with client(server) as mei, client(server) as boss, client(server) as anon:
        login_sync(mei, "mei@example.com")
        login_sync(boss, "boss@example.com")
        r = mei.post(
            "/api/bookings", json={"slot_start": _iso(a), "name": "Mei", "contact": "mei@example.com"}
        )
        assert r.status_code == 201
        assert [x["id"] for x in mei.get("/api/bookings").json()["bookings"]] == [r.json()["id"]]
        assert (
            mei.post(f"/api/bookings/{r.json()['id']}/reschedule", json={"slot_start": _iso(b)}).status_code
            == 200
        )

        assert anon.get("/api/admin/availability").status_code == 401
        assert mei.get("/api/admin/availability").status_code == 403
        av = boss.get("/api/admin/availability").json()
        assert av["timezone"] == "Asia/Taipei" and av["weekly"]["0"] == [{"start": "09:00", "end": "18:00"}]
        day = (a + timedelta(days=3)).date()
        closed = boss.post(
            "/api/admin/availability/exceptions", json={"day": day.isoformat(), "kind": "closed"}
        )
        assert closed.status_code == 201
        found = boss.get("/api/slots", params={"from": day.isoformat(), "days": 1}).json()["slots"]
        assert found == []
        assert boss.delete(f"/api/admin/availability/exceptions/{closed.json()['id']}").status_code == 204
        r = boss.put(
            "/api/admin/availability/weekly/2", json={"ranges": [{"start": "13:00", "end": "15:00"}]}
        )
        assert r.status_code == 200 and r.json()["weekly"]["2"] == [{"start": "13:00", "end": "15:00"}]
        bad = boss.put(
            "/api/admin/availability/weekly/2", json={"ranges": [{"start": "15:00", "end": "13:00"}]}
        )
        assert bad.status_code == 400
        assert boss.put("/api/admin/availability/weekly/9", json={"ranges": []}).status_code == 422
        r = boss.patch("/api/admin/availability/settings", json={"slot_minutes": 60})
        assert r.status_code == 200 and r.json()["slot_minutes"] == 60
        assert boss.patch("/api/admin/availability/settings", json={"slot_minutes": 7}).status_code == 422
        every = boss.get("/api/admin/bookings").json()["bookings"]
        assert [x["status"] for x in every] == ["rescheduled", "active"]


def _chat(c: httpx.Client, message: str, conversation_id: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {"message": message, "mode": "full"}
    if conversation_id:
        body["conversation_id"] = conversation_id
    r = c.post("/api/chat", json=body)
    assert r.status_code == 200, r.text
    reply: dict[str, Any] = r.json()
    assert reply["status"] == "ok", reply
    return reply


def test_chat_dialogue_books_lists_reschedules_and_cancels(
    db_overrides: dict[str, Any], live_server: Callable[..., LiveServer]
) -> None:
    server = live_server(**db_overrides)  # SQLite and PostgreSQL
    url = server.services.settings.resolved_database_url
    setup_database(url)
    with client(server) as c:
        first = _chat(c, "我想預約諮詢", None)
        conv = first["conversation_id"]
        assert first["route"]["intent"] == "booking" and first["route"]["flow"] == "booking"
        assert "1. " in first["answer"] and "台北時間" in first["answer"]
        offered = [line for line in first["answer"].splitlines() if line[:2] in ("1.", "2.")]
        # the follow-ups would route elsewhere alone ("2" / a name / an address): the open dialogue keeps them
        picked = _chat(c, "2", conv)
        assert picked["route"]["layer"] == "dialogue" and picked["route"]["intent"] == "booking"
        assert offered[1][3:] in picked["answer"] and "稱呼" in picked["answer"]
        assert "聯絡方式" in _chat(c, "王小明", conv)["answer"]
        bad = _chat(c, "王小明的信箱", conv)["answer"]
        assert "email" in bad.lower() or "LINE" in bad
        summary = _chat(c, "ming@example.com", conv)["answer"]
        assert "王小明" in summary and "ming@example.com" in summary and "確認" in summary
        done = _chat(c, "確認", conv)
        assert "預約完成" in done["answer"] and "/api/bookings/" in done["answer"]
        # the same 「確認」 again (a retry, a LINE redelivery that got through): still one booking
        again = _chat(c, "確認", conv)
        assert "已經完成" in again["answer"]
        assert _db_count(url, Booking.status == "active") == 1
        ics_path = re.search(r"/api/bookings/\S+", done["answer"])
        assert ics_path is not None and "token=" in ics_path.group()
        assert c.get(ics_path.group()).content.startswith(b"BEGIN:VCALENDAR\r\n")

        listed = _chat(c, "我的預約", conv)["answer"]
        assert "王小明" in listed and "台北時間" in listed
        moving = _chat(c, "我想改期", conv)["answer"]
        assert "1. " in moving
        assert "原時段" in _chat(c, "1", conv)["answer"]
        assert "改期完成" in _chat(c, "確認", conv)["answer"]
        assert _db_count(url, Booking.status == "rescheduled") == 1
        assert "確定要取消" in _chat(c, "取消我的預約", conv)["answer"]
        assert "已取消" in _chat(c, "確認", conv)["answer"]
        assert _db_count(url, Booking.status == "active") == 0

        # a question in the middle of a dialogue is routed as usual; 「取消」 leaves the dialogue
        _chat(c, "預約", conv)
        assert _chat(c, "算了", conv)["answer"].startswith("好的")
        assert _db_count(url, Booking.status == "active") == 0


def test_the_dialogue_lives_in_the_database_not_the_process(
    live_server: Callable[..., LiveServer],
) -> None:
    """Half a booking on one server, the rest on a second server over the same database."""
    one = live_server()
    url = one.services.settings.resolved_database_url
    setup_database(url)
    with client(one) as c:
        conv = _chat(c, "book a session", None)["conversation_id"]
        _chat(c, "1", conv)
        _chat(c, "Mei Lin", conv)
    one.stop()
    two = live_server()  # same tmp data dir: same SQLite file, a fresh process state
    assert two.services.settings.resolved_database_url == url
    with client(two) as c:
        reply = _chat(c, "LINE: mei.lin", conv)
        assert reply["route"]["layer"] == "dialogue" and "Mei Lin" in reply["answer"]
        assert "Booked" in _chat(c, "yes", conv)["answer"]
    assert _db_count(url, Booking.status == "active") == 1

    async def dialogues() -> int:
        db = Database(url)
        try:
            async with db.session() as s:
                return int(await s.scalar(select(func.count()).select_from(BookingDialogue)) or 0)
        finally:
            await db.dispose()

    assert asyncio.run(dialogues()) == 1  # kept as "done" so a repeated "yes" is answered, not rebooked


def test_the_page_is_served(live_server: Callable[..., LiveServer]) -> None:
    server = live_server()
    with client(server) as c:
        page = c.get("/bookings")
        assert page.status_code == 200 and "bookings.js" in page.text and "預約" in page.text
        js = c.get("/static/bookings.js")
        assert js.status_code == 200 and "innerHTML" not in js.text
