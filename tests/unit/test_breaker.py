"""The circuit breaker's states with a hand-driven clock, and the resilient provider's routing between
primary and fallback (providers here are small in-process doubles of the LLMProvider protocol)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from careerwise.errors import LLMToolsUnsupportedError, LLMUnavailableError
from careerwise.llm.resilience import CircuitBreaker, ResilientProvider
from careerwise.llm.types import ChatMessage, CompletionRequest, StreamChunk


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Scripted:
    """Answers "ok" or raises what it is told, counting calls."""

    def __init__(self, name: str) -> None:
        self.name, self.model = name, f"{name}-model"
        self.fail: Exception | None = None
        self.calls = 0

    async def stream(self, request: CompletionRequest) -> AsyncIterator[StreamChunk]:
        self.calls += 1
        if self.fail is not None:
            raise self.fail
        yield StreamChunk(text=f"{self.name} ok")
        yield StreamChunk(finish_reason="stop")

    async def aclose(self) -> None:
        return None


REQ = CompletionRequest(messages=[ChatMessage(role="user", content="hi")])


async def answer(p: ResilientProvider) -> str:
    return "".join([c.text or "" async for c in p.stream(REQ)])


def test_opens_after_threshold_then_half_open_then_closed() -> None:
    clock = Clock()
    b = CircuitBreaker("p", threshold=3, reset_after=10, clock=clock)
    for _ in range(2):
        assert b.allow()
        b.failure()
    assert b.state == "closed"
    assert b.allow()
    b.failure()
    assert b.state == "open" and not b.allow()
    clock.now += 9.9
    assert not b.allow()
    clock.now += 0.2
    assert b.allow() and b.state == "half_open"
    assert not b.allow()  # one trial at a time
    b.success()
    assert b.state == "closed" and b.failures == 0
    assert b.transitions == [("closed", "open"), ("open", "half_open"), ("half_open", "closed")]


def test_a_failed_trial_reopens_for_another_period() -> None:
    clock = Clock()
    b = CircuitBreaker("p", threshold=1, reset_after=5, clock=clock)
    b.allow()
    b.failure()
    clock.now += 5
    assert b.allow() and b.state == "half_open"
    b.failure()
    assert b.state == "open" and not b.allow()
    assert b.retry_in() == pytest.approx(5)


def test_a_success_between_failures_resets_the_count() -> None:
    b = CircuitBreaker("p", threshold=2, reset_after=5, clock=Clock())
    b.failure()
    b.success()
    b.failure()
    assert b.state == "closed"


async def test_without_fallback_an_open_breaker_fails_fast() -> None:
    clock = Clock()
    primary = Scripted("primary")
    primary.fail = LLMUnavailableError("503")
    p = ResilientProvider(primary, breaker=CircuitBreaker("p", threshold=2, reset_after=30, clock=clock))
    for _ in range(2):
        with pytest.raises(LLMUnavailableError, match="503"):
            await answer(p)
    with pytest.raises(LLMUnavailableError, match="circuit open"):
        await answer(p)
    assert primary.calls == 2  # the third call never reached the provider


async def test_the_fallback_answers_while_open_and_the_primary_comes_back() -> None:
    clock = Clock()
    primary, fallback = Scripted("primary"), Scripted("fallback")
    primary.fail = LLMUnavailableError("connection refused")
    p = ResilientProvider(
        primary, breaker=CircuitBreaker("p", threshold=2, reset_after=30, clock=clock), fallback=fallback
    )
    for _ in range(2):
        with pytest.raises(LLMUnavailableError):
            await answer(p)
    assert await answer(p) == "fallback ok"
    assert await answer(p) == "fallback ok"
    assert (primary.calls, fallback.calls, p.fallback_calls) == (2, 2, 2)
    primary.fail = None
    clock.now += 30
    assert await answer(p) == "primary ok"  # the half-open trial
    assert p.breaker.state == "closed"
    assert await answer(p) == "primary ok"


async def test_refusing_tools_is_an_answer_not_an_outage() -> None:
    primary = Scripted("primary")
    primary.fail = LLMToolsUnsupportedError("no tools here")
    p = ResilientProvider(primary, breaker=CircuitBreaker("p", threshold=1, reset_after=30, clock=Clock()))
    for _ in range(3):
        with pytest.raises(LLMToolsUnsupportedError):
            await answer(p)
    assert p.breaker.state == "closed" and primary.calls == 3


async def test_a_reader_that_stops_early_after_data_counts_as_success() -> None:
    b = CircuitBreaker("p", threshold=1, reset_after=30, clock=Clock())
    p = ResilientProvider(Scripted("primary"), breaker=b)
    gen = p.stream(REQ)
    first = await gen.__anext__()
    assert first.text == "primary ok"
    await gen.aclose()
    assert b.state == "closed" and not b.trial_running
