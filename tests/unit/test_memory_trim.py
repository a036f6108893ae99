"""The idle trimmer (careerwise/memory.py): it trims once every request has ended and the process stayed
idle, never while a stream is open; without glibc it does nothing; a failing trim is logged and counted."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pytest
from prometheus_client import CollectorRegistry
from starlette.types import Receive, Scope, Send

from careerwise.memory import Glibc, IdleTrimmer, RequestsInFlight, glibc, limit_arenas

MB = 2**20


class FakeTrim:
    def __init__(self, *, fail: bool = False) -> None:
        self.calls = 0
        self.fail = fail

    def __call__(self, pad: int) -> int:
        self.calls += 1
        if self.fail:
            raise OSError("no such symbol")
        return 1


class Resident:
    """A resident size the test sets, instead of /proc/self/statm."""

    def __init__(self) -> None:
        self.value = 300 * MB

    def __call__(self) -> int | None:
        return self.value


async def settle(trimmer: IdleTrimmer) -> None:
    """Let the loop's clock pass the idle wait: the trimmer's timer, due earlier, runs first."""
    await asyncio.sleep(trimmer.idle_seconds * 3)


async def test_trims_once_the_last_request_ended_not_while_one_is_open() -> None:
    trim, rss = FakeTrim(), Resident()
    trimmer = IdleTrimmer(idle_seconds=0.01, trim=trim, resident=rss)
    trimmer.started()
    trimmer.started()
    trimmer.finished()  # one stream still open
    await settle(trimmer)
    assert trim.calls == 0
    trimmer.finished()
    assert trim.calls == 0  # not at once: after the idle wait
    await settle(trimmer)
    assert trim.calls == 1 and trimmer.runs["ok"] == 1


async def test_a_request_during_the_idle_wait_starts_it_over() -> None:
    trim = FakeTrim()
    trimmer = IdleTrimmer(idle_seconds=0.05, trim=trim, resident=Resident())
    trimmer.started()
    trimmer.finished()
    trimmer.started()  # before the wait is over
    await settle(trimmer)
    assert trim.calls == 0
    trimmer.finished()
    await settle(trimmer)
    assert trim.calls == 1


async def test_skips_when_the_process_did_not_grow_since_the_last_trim() -> None:
    trim, rss = FakeTrim(), Resident()
    trimmer = IdleTrimmer(idle_seconds=0.01, trim=trim, resident=rss)
    trimmer.trim_now()
    rss.value += 1 * MB  # a /readyz poll's worth
    trimmer.trim_now()
    assert (trim.calls, trimmer.runs["skipped"]) == (1, 1)
    rss.value += 20 * MB  # a burst's worth
    trimmer.trim_now()
    assert trim.calls == 2


async def test_without_glibc_nothing_is_scheduled_and_nothing_runs() -> None:
    trimmer = IdleTrimmer(idle_seconds=0.01, trim=None)
    assert not trimmer.enabled
    trimmer.started()
    trimmer.finished()
    trimmer.trim_now()
    await settle(trimmer)
    assert trimmer.runs == {"ok": 0, "failed": 0, "skipped": 0} and trimmer.active == 0


async def test_zero_idle_seconds_turns_it_off() -> None:
    trim = FakeTrim()
    trimmer = IdleTrimmer(idle_seconds=0, trim=trim)
    trimmer.started()
    trimmer.finished()
    await asyncio.sleep(0.02)
    assert trim.calls == 0 and not trimmer.enabled


async def test_a_failing_trim_is_logged_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    registry = CollectorRegistry()
    trimmer = IdleTrimmer(idle_seconds=0.01, trim=FakeTrim(fail=True), resident=Resident())
    trimmer.export_to(registry)
    with caplog.at_level(logging.ERROR, logger="careerwise.memory"):
        trimmer.started()
        trimmer.finished()
        await settle(trimmer)
    assert trimmer.runs["failed"] == 1
    assert registry.get_sample_value("careerwise_memory_trims_total", {"result": "failed"}) == 1
    assert any("malloc_trim failed" in r.getMessage() for r in caplog.records)


async def test_the_middleware_counts_a_streamed_response_until_its_body_ends() -> None:
    trimmer = IdleTrimmer(idle_seconds=0.01, trim=FakeTrim(), resident=Resident())
    seen: list[int] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        for part in (b"a", b"b"):
            seen.append(trimmer.active)
            await send({"type": "http.response.body", "body": part, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    transport = httpx.ASGITransport(app=RequestsInFlight(app, trimmer=trimmer))
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        r = await client.get("/")
    assert r.text == "ab" and seen == [1, 1] and trimmer.active == 0


def test_the_arena_limit_reports_what_happened(caplog: pytest.LogCaptureFixture) -> None:
    asked: list[tuple[int, int]] = []

    def mallopt(param: int, value: int) -> int:
        asked.append((param, value))
        return 0  # glibc's "failed"

    fake = Glibc(mallopt=mallopt, malloc_trim=FakeTrim())
    assert limit_arenas(0, libc=fake) is False and asked == []  # 0: glibc's default, nothing asked
    with caplog.at_level(logging.ERROR, logger="careerwise.memory"):
        assert limit_arenas(2, libc=fake) is False
    assert asked == [(-8, 2)] and "mallopt" in caplog.text
    assert limit_arenas(2, libc=None) is False


def test_glibc_is_found_here_and_its_trim_runs() -> None:
    libc = glibc()
    assert libc is not None  # the test machine and the images run glibc
    assert libc.malloc_trim(0) in (0, 1)
