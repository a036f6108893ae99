"""A circuit breaker per provider, and an optional fallback provider that answers while it is open.

States::

    closed ──(threshold consecutive failures)──> open ──(reset_after seconds)──> half-open
      ^                                                                          │
      └──────────────(the one trial call succeeds)───────────────────────────────┘
                      (the trial fails: back to open for another reset_after)

A failure is a provider fault (connection refused or reset, 429, 5xx, a timeout, a malformed stream);
a non-retryable answer such as "this model does not take tools" says nothing about the provider's health
and is not counted. A call that the caller abandons (the user pressed stop) is neither.

While the breaker is open, calls go to the fallback provider when one is configured (seed 001 names a
steadier provider as the next step), else fail at once with ``LLMUnavailableError`` so the flows take their
degraded path without waiting for a deadline.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Literal

from careerwise.errors import LLMError, LLMUnavailableError
from careerwise.llm.types import CompletionRequest, LLMProvider, StreamChunk

log = logging.getLogger(__name__)

BreakerState = Literal["closed", "open", "half_open"]


@dataclass
class CircuitBreaker:
    name: str
    threshold: int = 5
    reset_after: float = 30.0
    clock: Callable[[], float] = time.monotonic
    state: BreakerState = "closed"
    failures: int = 0
    opened_at: float = 0.0
    trial_running: bool = False
    transitions: list[tuple[BreakerState, BreakerState]] = field(default_factory=list)

    def _move(self, to: BreakerState) -> None:
        if to != self.state:
            self.transitions.append((self.state, to))
            log.warning("llm breaker %s: %s -> %s", self.name, self.state, to)
            self.state = to

    def allow(self) -> bool:
        """May a call go to this provider now? In half-open, exactly one trial call at a time."""
        if self.state == "open" and self.clock() - self.opened_at >= self.reset_after:
            self._move("half_open")
        if self.state == "closed":
            return True
        if self.state == "half_open" and not self.trial_running:
            self.trial_running = True
            return True
        return False

    def retry_in(self) -> float:
        return max(0.0, self.reset_after - (self.clock() - self.opened_at))

    def success(self) -> None:
        self.trial_running = False
        self.failures = 0
        self._move("closed")

    def failure(self) -> None:
        self.trial_running = False
        self.failures += 1
        if self.state == "half_open" or self.failures >= self.threshold:
            self.opened_at = self.clock()
            self._move("open")

    def abandoned(self) -> None:
        """The caller stopped reading (cancelled): no verdict on the provider."""
        self.trial_running = False


class ResilientProvider:
    """Wraps a provider with its breaker, and optionally a fallback with its own."""

    def __init__(
        self,
        primary: LLMProvider,
        *,
        breaker: CircuitBreaker,
        fallback: LLMProvider | None = None,
        fallback_breaker: CircuitBreaker | None = None,
        on_fallback: Callable[[str], None] | None = None,
    ) -> None:
        self.primary = primary
        self.fallback = fallback
        self.breaker = breaker
        self.fallback_breaker = fallback_breaker or (
            CircuitBreaker(f"{breaker.name}-fallback", breaker.threshold, breaker.reset_after, breaker.clock)
            if fallback is not None
            else None
        )
        self.name = primary.name
        self.model = primary.model
        self._on_fallback = on_fallback
        self.fallback_calls = 0

    async def aclose(self) -> None:
        await self.primary.aclose()
        if self.fallback is not None:
            await self.fallback.aclose()

    async def warm(self) -> None:
        warm = getattr(self.primary, "warm", None)
        if warm is not None:
            await warm()

    async def stream(self, request: CompletionRequest) -> AsyncIterator[StreamChunk]:
        if self.breaker.allow():
            async for chunk in _guarded(self.primary, self.breaker, request):
                yield chunk
            return
        if self.fallback is not None and self.fallback_breaker is not None and self.fallback_breaker.allow():
            self.fallback_calls += 1
            if self._on_fallback is not None:
                self._on_fallback(self.fallback.model)
            log.info("llm: %s breaker open; the fallback %s answers", self.primary.name, self.fallback.model)
            async for chunk in _guarded(self.fallback, self.fallback_breaker, request):
                yield chunk
            return
        raise LLMUnavailableError(
            f"{self.primary.name}: the provider failed {self.breaker.threshold} times in a row; calls are "
            f"paused for {self.breaker.retry_in():.0f} s (circuit open)"
        )


async def _guarded(
    provider: LLMProvider, breaker: CircuitBreaker, request: CompletionRequest
) -> AsyncIterator[StreamChunk]:
    verdict = False
    received = False
    try:
        async for chunk in provider.stream(request):
            received = True
            yield chunk
        breaker.success()
        verdict = True
    except LLMError as exc:
        verdict = True
        if exc.retryable:
            breaker.failure()
        else:
            breaker.success()  # the provider answered (e.g. refused tools): it is up
        raise
    finally:
        if not verdict:  # cancelled, or the consumer stopped reading early
            if received:
                breaker.success()  # it was answering: the provider is up
            else:
                breaker.abandoned()
