"""Keep the serving process's resident memory near its idle size: fewer malloc arenas, and freed memory
handed back to the OS once a burst is over.

Why this exists: glibc's malloc keeps memory that Python and the native libraries freed, for reuse,
instead of returning it to the OS, so after a burst a process would stay above its idle size for good
(docs/benchmarks.md, "Memory"). Two knobs, both glibc-only and
a no-op elsewhere (musl, macOS):

- ``limit_arenas``: ``mallopt(M_ARENA_MAX, n)``. Every thread that allocates (the to_thread pool, the
  database driver's thread) may get an arena of its own, each keeping its own free memory.
- ``IdleTrimmer``: ``malloc_trim(0)`` once no request has been in flight for ``idle_seconds``. It runs
  when the last request ends (never per chunk, never while a stream is open), and only if the resident
  size grew since the last trim, so health checks on an idle server do not trim every time.

A failure is logged and counted (``careerwise_memory_trims{result="failed"}``), never fatal: serving goes
on with the memory it has.

One more for time rather than size: ``freeze_heap``. CPython's full (generation 2) collection walks every
container object alive; in a serving process that is the whole start-up heap (the app, SQLAlchemy's
metadata, the routing examples, the knowledge index), and every open stream waits for such a
collection to end (docs/decisions/0013-garbage-collector-while-serving.md). Frozen after start-up, those
objects are skipped by every later collection (they are still freed by reference counting as usual; a
frozen object in a reference cycle that later becomes garbage is not collected, which for start-up
objects that live as long as the process costs nothing).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter
from starlette.types import ASGIApp, Receive, Scope, Send

from careerwise.tracing.background import MALLOC_ARENA_LIMIT, count_failure

log = logging.getLogger(__name__)

M_ARENA_MAX = -8  # glibc's malloc.h; not exported by Python
# trim only if the resident size grew at least this much since the last trim (a burst, start-up); the
# few requests of health checks and scrapes on an idle server grow it far less and trim nothing
_MIN_GROWTH_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Glibc:
    """The two glibc calls we use, resolved once; ``None`` from :func:`glibc` where they do not exist."""

    mallopt: Callable[[int, int], int]
    malloc_trim: Callable[[int], int]


def glibc() -> Glibc | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        mallopt, trim = libc.mallopt, libc.malloc_trim
    except (OSError, AttributeError, TypeError):
        return None  # not glibc: nothing to tune, and nothing wrong
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return Glibc(mallopt=mallopt, malloc_trim=trim)


def limit_arenas(n: int, *, libc: Glibc | None) -> bool:
    """``mallopt(M_ARENA_MAX, n)``; ``n`` 0 leaves glibc's default (8 per core). Call it before the
    threads start: an arena, once made, stays. Returns whether the limit is in place."""
    if n <= 0:
        return False
    if libc is None:
        log.info("memory: no glibc malloc here, the arena limit (%d) does not apply", n)
        return False
    if libc.mallopt(M_ARENA_MAX, n) != 1:  # mallopt returns 1 on success
        log.error("memory: mallopt(M_ARENA_MAX, %d) failed; glibc's default arenas stay", n)
        count_failure(MALLOC_ARENA_LIMIT)  # before any app and its registry exist: the process-wide tally
        return False
    return True


def resident_bytes() -> int | None:
    """VmRSS from /proc/self/statm (one small read); None where there is no /proc."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


class IdleTrimmer:
    """Counts requests in flight; ``idle_seconds`` after the count falls to 0 (and stays there), asks
    glibc to return free memory to the OS. ``trim`` None (no glibc): the counting goes on, nothing runs."""

    def __init__(
        self,
        *,
        idle_seconds: float,
        trim: Callable[[int], int] | None,
        resident: Callable[[], int | None] = resident_bytes,
    ) -> None:
        self.idle_seconds = idle_seconds
        self._trim = trim
        self._resident = resident
        self.active = 0
        self._pending: asyncio.TimerHandle | None = None
        self._after_last_trim: int | None = None  # resident bytes right after the last trim
        self.runs = {"ok": 0, "failed": 0, "skipped": 0}
        self._counter: Counter | None = None

    def export_to(self, registry: CollectorRegistry) -> None:
        """Count the runs as ``careerwise_memory_trims{result}`` in the app's metrics registry too
        (made with the services, after the middleware that owns this trimmer)."""
        try:
            self._counter = Counter(
                "careerwise_memory_trims",
                "Idle malloc_trim runs by result (ok, failed, skipped: too little growth to bother).",
                ["result"],
                registry=registry,
            )
        except ValueError as exc:  # already there: one registry shared by two apps (tests)
            log.warning("memory: the trim counter is not exported: %s", exc)

    @property
    def enabled(self) -> bool:
        return self.idle_seconds > 0 and self._trim is not None

    def started(self) -> None:
        self.active += 1
        if self._pending is not None:  # busy again: the idle wait starts over when this one ends
            self._pending.cancel()
            self._pending = None

    def finished(self) -> None:
        self.active -= 1
        if self.active == 0 and self.enabled and self._pending is None:
            loop = asyncio.get_running_loop()
            self._pending = loop.call_later(self.idle_seconds, self._when_idle)

    def _when_idle(self) -> None:
        self._pending = None
        if self.active == 0:  # started() cancels the timer, this is a second guard
            self.trim_now()

    def trim_now(self) -> None:
        """One trim, if the resident size grew enough since the last to be worth the few milliseconds."""
        if self._trim is None:
            return
        before = self._resident()
        last = self._after_last_trim
        if before is not None and last is not None and before - last < _MIN_GROWTH_BYTES:
            self._count("skipped")
            return
        started = time.perf_counter()
        try:
            self._trim(0)
        except Exception:  # a ctypes call: whatever it raises, serving goes on without the trim
            log.exception("memory: malloc_trim failed; the freed memory stays with the process")
            self._count("failed")
            return
        after = self._resident()
        self._after_last_trim = after
        self._count("ok")
        if before is not None and after is not None:
            log.info(  # rare: only after the process grew (a burst, start-up)
                "memory: trim returned %.1f MB in %.1f ms (resident %.1f MB)",
                (before - after) / 2**20,
                1000 * (time.perf_counter() - started),
                after / 2**20,
            )

    def _count(self, result: str) -> None:
        self.runs[result] += 1
        if self._counter is not None:
            self._counter.labels(result).inc()

    def cancel(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None


class RequestsInFlight:
    """Pure ASGI middleware: tells the trimmer when an HTTP request starts and when it has ended (its
    streamed body included). Once per request, nothing per chunk."""

    def __init__(self, app: ASGIApp, *, trimmer: IdleTrimmer) -> None:
        self.app = app
        self.trimmer = trimmer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self.trimmer.started()
        try:
            await self.app(scope, receive, send)
        finally:
            self.trimmer.finished()


def space_full_collections(every: int) -> tuple[int, int, int]:
    """Full (generation-2) collections at most once every ``every`` generation-1 collections instead of
    CPython's 10 (``gc.set_threshold``'s third value); returns the thresholds before, to restore. After
    ``freeze_heap`` the generation-2 heap is small, and CPython's other condition for a full collection
    (a quarter more long-lived objects than at the last one) then holds almost always, and a burst's own
    objects would bring a full collection in the middle of it (decision 0013)."""
    before = gc.get_threshold()
    gc.set_threshold(before[0], before[1], every)
    return before


def freeze_heap() -> int:
    """Collect once, then freeze what is alive (see the module's docstring); returns how many objects
    the collector now skips. Undone by ``gc.unfreeze()`` when the app shuts down."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
