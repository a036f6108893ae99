"""A sliding-window rate limiter kept in the process (per worker; see docs/security.md)."""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable

from careerwise.errors import RateLimitedError


class RateLimiter:
    def __init__(self, limit: int, window: float = 60.0, *, clock: Callable[[], float] = time.monotonic):
        self.limit = limit
        self.window = window
        self._clock = clock
        self._hits: dict[str, deque[float]] = {}

    def hit(self, key: str, what: str = "requests") -> None:
        """Count one request for ``key``; raise RateLimitedError (429) when over the limit."""
        if self.limit <= 0:
            return
        now = self._clock()
        hits = self._hits.setdefault(key, deque())
        while hits and hits[0] <= now - self.window:
            hits.popleft()
        if len(hits) >= self.limit:
            retry = math.ceil(hits[0] + self.window - now)
            raise RateLimitedError(
                f"too many {what}: the limit is {self.limit} per {int(self.window)} s; try again in {retry} s",
                retry_after=retry,
            )
        hits.append(now)
        if len(self._hits) > 10_000:  # forget idle keys so the table cannot grow without bound
            for k in [k for k, v in self._hits.items() if not v or v[-1] <= now - self.window]:
                del self._hits[k]
