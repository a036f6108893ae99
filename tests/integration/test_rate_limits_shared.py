"""Per-minute limits shared by several app processes through the database (ratelimit.SharedRateLimiter).

Two live servers with their own services (their own limiters, as two ``serve`` workers have) on one
SQLite database: requests alternate between them and still meet one limit. On PostgreSQL, concurrent
hits from two connections pools meet it too. Ended windows are deleted; a key that comes back after its
window starts afresh."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from careerwise.config import Settings
from careerwise.errors import RateLimitedError
from careerwise.ratelimit import RateLimiter, SharedRateLimiter, make_limiter
from careerwise.services import Services
from careerwise.store import Database, RateLimitWindow
from tests.auth_helpers import create_user, login_sync
from tests.conftest import LiveServer, client
from tests.fakes.fake_llm import FakeLLM, text


def _two_servers(live_server: Callable[..., LiveServer], **overrides: Any) -> tuple[LiveServer, LiveServer]:
    # serve_workers=2 is what `careerwise serve --workers 2` tells each worker: "auto" then shares
    first = live_server(serve_workers=2, **overrides)
    second = live_server(serve_workers=2, **overrides)
    assert first.services.settings.resolved_database_url == second.services.settings.resolved_database_url
    assert isinstance(first.services.limiters.user_chat, SharedRateLimiter)
    return first, second


def test_25_requests_at_20_a_minute_across_two_processes_give_20_answers_and_5_refusals(
    live_server: Callable[..., LiveServer], fake_llm: FakeLLM
) -> None:
    a, b = _two_servers(live_server, user_chat_per_minute=20)
    asyncio.run(create_user(a.services, "busy@example.com"))
    asyncio.run(create_user(a.services, "calm@example.com"))
    fake_llm.default = text("好的。")
    with client(a) as busy_a, client(b) as busy_b, client(b) as calm:
        login_sync(busy_a, "busy@example.com")
        login_sync(busy_b, "busy@example.com")
        login_sync(calm, "calm@example.com")
        responses: list[httpx.Response] = []
        for i in range(25):
            c = busy_a if i % 2 == 0 else busy_b
            responses.append(c.post("/api/chat", json={"message": "你好", "mode": "full"}))
        other = calm.post("/api/chat", json={"message": "你好", "mode": "full"})
    codes = [r.status_code for r in responses]
    assert codes == [200] * 20 + [429] * 5, codes
    for r in responses[20:]:
        assert 1 <= int(r.headers["retry-after"]) <= 60
        assert "the limit is 20 per 60 s" in r.json()["error"]["message"]
    # both processes refused: the count is one, not one per process
    assert {r.url.port for r in responses[20:]} == {a.port, b.port}
    assert other.status_code == 200  # another user in the same minute is unaffected
    assert len(fake_llm.requests) == 21  # a refused request never reaches the model


def test_log_in_attempts_are_limited_across_two_processes(live_server: Callable[..., LiveServer]) -> None:
    a, b = _two_servers(live_server, login_per_minute=5)
    codes = []
    with client(a) as ca, client(b) as cb:
        for i in range(7):
            c = ca if i % 2 == 0 else cb
            r = c.post("/api/auth/login", json={"email": "a@example.com", "password": f"guess {i}"})
            codes.append(r.status_code)
    assert codes == [401] * 5 + [429] * 2


def test_in_process_limits_would_let_twice_the_limit_through(
    live_server: Callable[..., LiveServer],
) -> None:
    """The failure the shared store fixes, kept visible: forced to count in each process, two servers
    each let their own 5 attempts through."""
    a = live_server(login_per_minute=5, rate_limit_store="memory", serve_workers=2)
    b = live_server(login_per_minute=5, rate_limit_store="memory", serve_workers=2)
    with client(a) as ca, client(b) as cb:
        codes = [
            (ca if i % 2 == 0 else cb)
            .post("/api/auth/login", json={"email": "a@example.com", "password": "x"})
            .status_code
            for i in range(10)
        ]
    assert codes == [401] * 10


@pytest.mark.parametrize(
    ("store", "workers", "shared"),
    [("auto", 1, False), ("auto", 2, True), ("memory", 4, False), ("database", 1, True)],
)
async def test_the_store_follows_the_setting_and_the_worker_count(
    make_services: Callable[..., Services], store: str, workers: int, shared: bool
) -> None:
    services = make_services(with_corpus=False, rate_limit_store=store, serve_workers=workers)
    settings: Settings = services.settings
    limiter = make_limiter("login", 5, settings=settings, db=services.db)
    assert isinstance(limiter, SharedRateLimiter if shared else RateLimiter)
    assert isinstance(services.limiters.login, SharedRateLimiter if shared else RateLimiter)


async def _rows(db: Database) -> dict[tuple[str, str], int]:
    async with db.session() as s:
        rows = (
            await s.execute(select(RateLimitWindow.scope, RateLimitWindow.key, RateLimitWindow.hits))
        ).all()
    return {(scope, key): hits for scope, key, hits in rows}


async def test_windows_end_and_ended_windows_are_deleted(make_services: Callable[..., Services]) -> None:
    services = make_services(with_corpus=False)
    now = [1_000.0]
    limiter = SharedRateLimiter(services.db, scope="login", limit=2, clock=lambda: now[0])
    other_scope = SharedRateLimiter(services.db, scope="user_chat", limit=2, clock=lambda: now[0])
    await limiter.hit("1.2.3.4")
    await other_scope.hit("1.2.3.4")  # same key, another limit: counted apart
    now[0] += 10
    await limiter.hit("1.2.3.4")
    await limiter.hit("5.6.7.8")
    now[0] += 5
    with pytest.raises(RateLimitedError) as refused:
        await limiter.hit("1.2.3.4")
    assert refused.value.retry_after == 45  # the window opened at 1,000 s and ends at 1,060 s
    assert await _rows(services.db) == {
        ("login", "1.2.3.4"): 3,
        ("login", "5.6.7.8"): 1,
        ("user_chat", "1.2.3.4"): 1,
    }

    now[0] = 1_061.0  # the first key's window has ended, the second's (opened at 1,010 s) has not
    await limiter.hit("1.2.3.4")  # a fresh window: allowed again (and a clean-up with nothing to delete)
    assert (await _rows(services.db))[("login", "1.2.3.4")] == 1
    assert limiter.cleaned == 0
    now[0] = 1_125.0  # both windows ended; the next clean-up is due (at most once per window)
    await limiter.hit("9.9.9.9")
    rows = await _rows(services.db)
    assert ("login", "5.6.7.8") not in rows and ("login", "1.2.3.4") not in rows
    assert rows[("login", "9.9.9.9")] == 1
    assert rows[("user_chat", "1.2.3.4")] == 1  # another limit's rows are its own limiter's to delete
    assert limiter.cleaned == 2
