"""The daily token budget: counted in the database per user (per IP without an account), shared by every
process, refused with 429 and Retry-After once spent, never before the turn that crossed it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace

import pytest
from sqlalchemy import event

from careerwise.budget import TokenBudget
from careerwise.engine import TurnRequest
from careerwise.errors import RateLimitedError
from careerwise.services import Services
from tests.auth_helpers import create_user, login_sync
from tests.conftest import LiveServer, client, ready
from tests.fakes.fake_llm import FakeLLM, Reply, text


def _answer() -> Reply:
    return replace(text("好的。"), prompt_tokens=30, completion_tokens=10)  # 40 tokens a call


def test_a_spent_budget_refuses_the_next_turn_until_midnight(
    live_server: Callable[..., LiveServer], fake_llm: FakeLLM
) -> None:
    server = live_server(daily_token_budget=70)
    asyncio.run(create_user(server.services, "a@example.com"))
    asyncio.run(create_user(server.services, "b@example.com"))
    fake_llm.responder = lambda body: _answer()
    with client(server) as a, client(server) as b, client(server) as anon:
        login_sync(a, "a@example.com")
        login_sync(b, "b@example.com")
        first = a.post("/api/chat", json={"message": "面試怎麼準備", "mode": "full"})
        second = a.post("/api/chat", json={"message": "面試怎麼準備", "mode": "full"})  # 40 < 70: allowed
        third = a.post("/api/chat", json={"message": "面試怎麼準備", "mode": "full"})  # 80 >= 70: refused
        assert (first.status_code, second.status_code, third.status_code) == (200, 200, 429)
        assert "budget" in third.json()["error"]["message"]
        assert 0 < int(third.headers["retry-after"]) <= 24 * 3600
        assert b.post("/api/chat", json={"message": "面試怎麼準備", "mode": "full"}).status_code == 200
        assert anon.post("/api/chat", json={"message": "面試怎麼準備", "mode": "full"}).status_code == 200
    assert len(fake_llm.requests) == 4  # the refused turn never reached the model


async def test_the_budget_is_shared_by_processes(
    make_services: Callable[..., Services], fake_llm: FakeLLM
) -> None:
    one = await ready(make_services(daily_token_budget=50))
    two = await ready(make_services(daily_token_budget=50))
    fake_llm.responder = lambda body: _answer()
    [e async for e in one.engine.run(TurnRequest(message="面試怎麼準備", user_id="u1"))]
    [e async for e in one.engine.run(TurnRequest(message="面試怎麼準備", user_id="u1"))]
    with pytest.raises(RateLimitedError):
        [e async for e in two.engine.run(TurnRequest(message="面試怎麼準備", user_id="u1"))]
    assert two.engine.budget is not None and await two.engine.budget.used("user:u1") == 80


async def test_zero_means_no_budget(make_services: Callable[..., Services]) -> None:
    services = make_services()
    budget = TokenBudget(services.db, 0)
    await budget.add("ip:1.2.3.4", 10**9)
    await budget.check("ip:1.2.3.4")
    assert await budget.used("ip:1.2.3.4") == 10**9


async def test_a_turn_counts_its_tokens_in_the_transaction_that_stores_its_answer(
    make_services: Callable[..., Services], fake_llm: FakeLLM
) -> None:
    """One write at the end of a turn, not two: the count cannot be lost while the answer is kept (or the
    other way round), and the burst has one transaction fewer to queue per turn (docs/benchmarks.md)."""
    services = await ready(make_services(daily_token_budget=1000))
    fake_llm.responder = lambda body: _answer()
    log: list[tuple[int, str]] = []  # (connection, statement or COMMIT), in order

    def on_statement(conn: object, _cursor: object, statement: str, *_args: object) -> None:
        log.append((id(conn), statement.strip().split("\n")[0][:40].upper()))

    def on_commit(conn: object) -> None:
        log.append((id(conn), "COMMIT"))

    engine = services.db.write_engine  # on SQLite the writer thread's, where the turn's writes run
    event.listen(engine, "before_cursor_execute", on_statement)
    event.listen(engine, "commit", on_commit)
    try:
        [e async for e in services.engine.run(TurnRequest(message="面試怎麼準備", user_id="u1"))]
    finally:
        event.remove(engine, "before_cursor_execute", on_statement)
        event.remove(engine, "commit", on_commit)
    assert services.engine.budget is not None and await services.engine.budget.used("user:u1") == 40
    closing = next(i for i, (_, sql) in enumerate(log) if sql.startswith("UPDATE MESSAGES SET CONTENT"))
    conn = log[closing][0]
    rest = [sql for c, sql in log[closing:] if c == conn]
    counted = next(i for i, sql in enumerate(rest) if sql.startswith("INSERT INTO TOKEN_USAGE"))
    assert "COMMIT" not in rest[:counted]  # the count is written before the answer's transaction commits
    assert sum(sql.startswith("INSERT INTO TOKEN_USAGE") for _, sql in log) == 1
