"""Abuse limits over real HTTP (a live uvicorn server): bookings per IP (held at once, made in 24 hours)
on the API and in the chat dialogue, the IP-wide ceilings shared by young accounts (turns and tokens),
and the per-account log-in throttle."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import httpx

from careerwise.store import Booking
from tests.auth_helpers import create_user, login_sync
from tests.booking_helpers import setup_database
from tests.conftest import LiveServer, client
from tests.fakes.fake_llm import FakeLLM, Reply, text
from tests.integration.test_bookings_http import _db_count, _iso


def _book(c: Any, start: Any, i: int) -> Any:
    return c.post(
        "/api/bookings", json={"slot_start": _iso(start), "name": f"訪客 {i}", "contact": f"v{i}@example.com"}
    )


def test_one_ip_holds_and_makes_at_most_the_configured_bookings(
    live_server: Callable[..., LiveServer],
) -> None:
    server = live_server(bookings_held=3, bookings_per_day=5)
    url = server.services.settings.resolved_database_url
    slots = setup_database(url, n=8)
    with client(server) as c:
        made = [_book(c, s, i) for i, s in enumerate(slots[:5])]
        assert [r.status_code for r in made] == [201, 201, 201, 429, 429]
        refused = made[3].json()["error"]
        assert refused["code"] == "booking_limit" and refused["details"] == {"limit": "held", "max": 3}
        assert "cancel one" in refused["message"] and int(made[3].headers["retry-after"]) >= 1
        assert _db_count(url, Booking.status == "active") == 3
        # a cancelled booking frees its place in "held", but still counts as made today
        for r in made[:2]:
            token = r.json()["token"]
            assert (
                c.post(
                    f"/api/bookings/{r.json()['id']}/cancel", headers={"X-Booking-Token": token}
                ).status_code
                == 200
            )
        again = [_book(c, s, i) for i, s in enumerate(slots[5:7], 5)]
        assert [r.status_code for r in again] == [201, 201]  # five made, three held
        last = again[-1].json()
        cancel = c.post(f"/api/bookings/{last['id']}/cancel", headers={"X-Booking-Token": last["token"]})
        assert cancel.status_code == 200  # two held: only the day's count stands in the way now
        over = _book(c, slots[7], 7)  # the sixth booking made in 24 hours
        assert over.status_code == 429
        assert over.json()["error"]["details"] == {"limit": "per_day", "max": 5}
        assert "24 hours" in over.json()["error"]["message"]
    assert _db_count(url) == 5


def test_sixty_concurrent_attempts_from_one_ip_book_at_most_the_default(
    db_overrides: dict[str, Any], live_server: Callable[..., LiveServer]
) -> None:
    """The limit is counted in the booking's own transaction: sixty requests at once cannot slip past it
    together (SQLite's write lock; on PostgreSQL an advisory lock on the client)."""
    server = live_server(bookings_held=3, bookings_per_day=10, **db_overrides)  # the defaults
    url = server.services.settings.resolved_database_url
    slots = setup_database(url, n=60)

    async def run() -> list[int]:
        async with httpx.AsyncClient(base_url=server.url, timeout=120) as c:
            responses = await asyncio.gather(
                *(
                    c.post(
                        "/api/bookings",
                        json={"slot_start": _iso(s), "name": f"訪客 {i}", "contact": f"v{i}@example.com"},
                    )
                    for i, s in enumerate(slots)
                )
            )
        return [r.status_code for r in responses]

    statuses = asyncio.run(run())
    assert statuses.count(201) == 3 and statuses.count(429) == 57, statuses
    assert _db_count(url) == 3


def _chat(c: Any, message: str, conversation_id: str | None = None) -> Any:
    body: dict[str, Any] = {"message": message, "mode": "full"}
    if conversation_id:
        body["conversation_id"] = conversation_id
    return c.post("/api/chat", json=body)


def test_the_chat_dialogue_says_the_limit_plainly(live_server: Callable[..., LiveServer]) -> None:
    server = live_server(bookings_held=1)
    url = server.services.settings.resolved_database_url
    slots = setup_database(url, n=2)
    with client(server) as c:
        assert _book(c, slots[0], 0).status_code == 201
        reply = _chat(c, "我想預約諮詢")
        assert reply.status_code == 200, reply.text
        answer = reply.json()["answer"]
        assert "上限" in answer and "取消預約" in answer
        assert "1. " not in answer  # no slots offered
    assert _db_count(url) == 1


def _answer() -> Reply:
    return replace(text("好的。"), prompt_tokens=30, completion_tokens=10)  # 40 tokens a call


def test_young_accounts_of_one_ip_share_a_turn_ceiling(live_server: Callable[..., LiveServer]) -> None:
    server = live_server(young_accounts_chat_per_minute=3)
    emails = [f"new{i}@example.com" for i in range(3)]
    for email in emails:
        asyncio.run(create_user(server.services, email))
    statuses = []
    for email in emails:
        with client(server) as c:
            login_sync(c, email)
            statuses += [_chat(c, "面試怎麼準備").status_code for _ in range(2)]
    assert statuses == [200, 200, 200, 429, 429, 429]


def test_young_accounts_of_one_ip_share_a_token_budget(
    live_server: Callable[..., LiveServer], fake_llm: FakeLLM
) -> None:
    server = live_server(young_accounts_daily_tokens=70, young_accounts_chat_per_minute=0)
    fake_llm.responder = lambda body: _answer()
    for email in ("a@example.com", "b@example.com"):
        asyncio.run(create_user(server.services, email))
    with client(server) as a, client(server) as b:
        login_sync(a, "a@example.com")
        login_sync(b, "b@example.com")
        assert _chat(a, "面試怎麼準備").status_code == 200  # 40
        assert _chat(b, "面試怎麼準備").status_code == 200  # 80 in all: the shared budget is spent
        refused = _chat(a, "面試怎麼準備")
    assert refused.status_code == 429 and "new accounts" in refused.json()["error"]["message"]
    assert len(fake_llm.requests) == 2


def test_log_ins_are_throttled_per_account(live_server: Callable[..., LiveServer]) -> None:
    server = live_server(login_per_account_per_minute=2)
    asyncio.run(create_user(server.services, "victim@example.com"))
    asyncio.run(create_user(server.services, "other@example.com"))
    with client(server) as c:
        wrong = [
            c.post("/api/auth/login", json={"email": "victim@example.com", "password": "guess"}).status_code
            for _ in range(2)
        ]
        third = c.post("/api/auth/login", json={"email": "Victim@Example.com", "password": "guess"})
        assert wrong == [401, 401] and third.status_code == 429
        assert third.json()["error"]["code"] == "rate_limited"
        login_sync(c, "other@example.com")  # another account from the same IP is not held back
