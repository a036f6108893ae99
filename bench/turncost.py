"""CPU milliseconds per streamed turn of the serving process: the deterministic measure behind the burst.

The concurrency burst (bench/concurrency.py) misses its latency goal because the serving process spends
more CPU per turn than 100 arriving turns a second allow on one core (< ~10 ms a turn). Latency on this
shared machine is noisy; CPU time per turn is not, so this benchmark counts CPU, at low concurrency.

Set-up: the fake provider in its own process (text mode: path B, 43 chunks a reply; ``FIRST_TOKEN`` to
the first token, ``INTER_CHUNK`` between chunks), `careerwise serve --workers 1` in another (SQLite, a
copy of the ingested corpus), this process the client: ``TURNS`` streamed ``POST /api/chat`` («面試怎麼準備
N», career/simple), ``CONCURRENCY`` at a time, after a warm-up. CPU comes from ``/proc/PID/stat`` and per
thread from ``/proc/PID/task/*/stat`` (user + system ticks) before and after the run: the event-loop thread
(the process's main thread) and the others (the embedder, aiosqlite, the default executor).

Two phases on the same server: the reply in 43 chunks (the burst's), then the same text in 5 chunks; the
difference is the loop's CPU per streamed chunk, the rest its fixed CPU per turn. Baseline, in the same
run: the same requests sent straight to the fake's ``/v1/chat/completions`` (same
client, same concurrency), and the fake's CPU per request; the ratio says how many times the provider's own
work on the same stream one CareerWise turn costs.

Stream pacing (issue #10, ``CAREERWISE_STREAM_PACE_MS``): one server per pace in ``BENCH_TURNCOST_PACES``
(``0,50,100,150``), all against the same fake, measured round-robin (``BENCH_TURNCOST_ROUNDS`` rounds, the
order rotated each round, each round a slice of ``TURNS`` with both reply lengths on every server), so the
machine's load falls on every pace alike; the table prints each pace's loop CPU per turn and per chunk,
the ``delta`` events a turn carries, and the ratios to pace 0 (every chunk read as it comes).

``BENCH_TURNCOST_MODE=saturate`` (or ``python -m bench.turncost saturate``) runs bench/_saturate.py
instead: adaptive pacing (``CAREERWISE_STREAM_PACE_MAX_MS``) on vs off with the serving loop saturated by
waves of the burst's shape; loop CPU a turn and the time to first text, interleaved. The default mode
keeps every server on a fixed pace (``CAREERWISE_STREAM_PACE_MAX_MS=0``), as it measured before.

``BENCH_TURNCOST_PROFILE=1`` also records the measured run with py-spy (``.venv/bin/py-spy``, 250 Hz,
the loop thread) and prints the heaviest functions (own samples and inclusive) and a per-layer share.
``BENCH_TURNCOST_TURNS`` (100) and ``BENCH_TURNCOST_CONCURRENCY`` (4) change the load.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench._serve import data_dir_with_corpus, descendants, serve
from bench.common import free_port, process, table

FIRST_TOKEN = 0.10
INTER_CHUNK = 0.02
TURNS = int(os.environ.get("BENCH_TURNCOST_TURNS", "100"))
CONCURRENCY = int(os.environ.get("BENCH_TURNCOST_CONCURRENCY", "4"))
PROFILE = os.environ.get("BENCH_TURNCOST_PROFILE", "") not in ("", "0")
PACES = [int(v) for v in os.environ.get("BENCH_TURNCOST_PACES", "0,50,100,150").split(",") if v.strip()]
ROUNDS = max(1, int(os.environ.get("BENCH_TURNCOST_ROUNDS", "4")))
MODE = os.environ.get("BENCH_TURNCOST_MODE", "")
MESSAGE = "面試怎麼準備 {i}"
FEW_SIZE = 20  # the second phase's chunk size: 5 chunks a reply instead of 43
FEW_FROM = 1_000_000  # message numbers from here on get the short-chunk reply
TICK = os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------- CPU by thread


def _ticks(stat_path: Path) -> tuple[str, int, int] | None:
    try:
        text = stat_path.read_text()
    except OSError:
        return None  # the thread ended meanwhile
    name = text[text.index("(") + 1 : text.rindex(")")]
    fields = text.rsplit(")", 1)[1].split()
    return name, int(fields[11]), int(fields[12])  # utime, stime (fields 14 and 15)


@dataclass(frozen=True)
class CpuReading:
    """Ticks per (pid, tid): the main thread of each process is its event loop."""

    threads: dict[tuple[int, int], tuple[str, int, int]]

    @classmethod
    def of(cls, pid: int) -> CpuReading:
        threads: dict[tuple[int, int], tuple[str, int, int]] = {}
        for p in [pid, *descendants(pid)]:
            task_dir = Path(f"/proc/{p}/task")
            try:
                tids = [int(t.name) for t in task_dir.iterdir()]
            except OSError:
                continue
            for tid in tids:
                got = _ticks(task_dir / str(tid) / "stat")
                if got is not None:
                    threads[(p, tid)] = got
        return cls(threads)

    def minus(self, before: CpuReading) -> tuple[float, float]:
        """(loop-thread seconds, other-threads seconds) used since ``before``; threads that ended in
        between are lost (none of ours do: the pools keep theirs)."""
        loop = other = 0.0
        for key, (_, user, system) in self.threads.items():
            _, user0, system0 = before.threads.get(key, ("", 0, 0))
            used = (user + system - user0 - system0) / TICK
            if key[0] == key[1]:
                loop += used
            else:
                other += used
        return loop, other

    def loop_system(self, before: CpuReading) -> float:
        """Kernel-mode seconds of the loop threads since ``before`` (system calls: send, recv, epoll)."""
        return sum(
            (system - before.threads.get(key, ("", 0, 0))[2]) / TICK
            for key, (_, _, system) in self.threads.items()
            if key[0] == key[1]
        )


# ---------------------------------------------------------------- the client


async def _ours(client: httpx.AsyncClient, url: str, i: int, deltas: list[int]) -> str | None:
    """One streamed turn; an error text, or None when it ended ``done`` ``ok`` with text. Its number of
    ``delta`` events is appended to ``deltas`` (stream pacing merges text into fewer of them)."""
    event, text, status = "", 0, None
    async with client.stream("POST", url, json={"message": MESSAGE.format(i=i)}) as r:
        if r.status_code != 200:
            return f"HTTP {r.status_code}"
        async for line in r.aiter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                if event == "delta":
                    text += 1
                elif event == "done":
                    status = json.loads(line[6:]).get("status")
    deltas.append(text)
    if status != "ok" or not text:
        return f"status {status}, {text} deltas"
    return None


async def _provider(client: httpx.AsyncClient, url: str, i: int, deltas: list[int]) -> str | None:
    body = {
        "model": "fake",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": MESSAGE.format(i=i)}],
    }
    done = False
    async with client.stream("POST", url, json=body) as r:
        if r.status_code != 200:
            return f"HTTP {r.status_code}"
        async for line in r.aiter_lines():
            if line.startswith("data: "):
                if line == "data: [DONE]":
                    done = True
                else:
                    json.loads(line[6:])  # parse like a client would
    return None if done else "no [DONE]"


async def _run(
    url: str, *, ours: bool, first: int, n: int, deltas: list[int] | None = None
) -> tuple[float, list[str]]:
    one = _ours if ours else _provider
    errors: list[str] = []
    counts = deltas if deltas is not None else []
    todo = iter(range(first, first + n))
    async with httpx.AsyncClient(timeout=httpx.Timeout(120, connect=30)) as client:
        t0 = time.perf_counter()

        async def worker() -> None:
            for i in todo:
                try:
                    err = await one(client, url, i, counts)
                except httpx.HTTPError as exc:
                    err = f"{type(exc).__name__}: {exc}"[:200]
                if err:
                    errors.append(err)

        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
        return time.perf_counter() - t0, errors


# ---------------------------------------------------------------- py-spy


def _py_spy() -> str | None:
    found = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    return found if Path(found).exists() else None


LAYERS = (
    ("openai SDK / httpx (provider stream)", ("openai/", "httpx", "httpcore", "anyio/")),
    ("pydantic", ("pydantic",)),
    ("uvicorn / h11 / Starlette / FastAPI", ("uvicorn/", "h11/", "starlette/", "fastapi/")),
    ("asyncio (loop, transports, send)", ("asyncio/", "selectors.py", "socket.py")),
    ("SQLAlchemy / aiosqlite / sqlite", ("sqlalchemy/", "aiosqlite/", "sqlite3")),
    ("CareerWise tracing", ("careerwise/tracing/",)),
    ("CareerWise api (SSE, middlewares)", ("careerwise/api/", "careerwise/app.py")),
    ("CareerWise llm (guard, canary, provider)", ("careerwise/llm/",)),
    ("CareerWise events", ("careerwise/events.py",)),
    ("CareerWise engine / flows", ("careerwise/engine.py", "careerwise/flows/")),
    ("CareerWise other", ("careerwise/",)),
)


def _layer(frame: str) -> str:
    for name, marks in LAYERS:
        if any(m in frame for m in marks):
            return name
    return "other (json, logging, stdlib)"


def _profile_summary(raw: Path) -> list[str]:
    """py-spy's raw (collapsed) stacks of the loop thread: own samples by function, inclusive samples by
    function, and own samples by layer."""
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    layers: Counter[str] = Counter()
    total = 0
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count_s = line.rpartition(" ")
        if not stack or not count_s.isdigit():
            continue
        frames = stack.split(";")
        if any("_bootstrap (threading.py" in f for f in frames):
            continue  # a worker thread (the embedder, aiosqlite, the executor): the loop is the main thread
        count = int(count_s)
        frames = [f for f in frames if not f.startswith(("process ", "thread "))] or ["(idle)"]
        total += count
        own[frames[-1]] += count
        layers[_layer(frames[-1])] += count
        for f in set(frames):
            inclusive[f] += count
    if not total:
        return ["(py-spy recorded no samples of the loop thread)"]
    out = [f"\n### py-spy, loop thread: {total} samples\n"]
    out.append(
        table(
            ["share", "layer (own samples)"],
            [[f"{100 * c / total:.1f} %", k] for k, c in layers.most_common()],
        )
    )
    out.append("")
    out.append(
        table(["own %", "function"], [[f"{100 * c / total:.1f}", k[:110]] for k, c in own.most_common(25)])
    )
    out.append("")
    out.append(
        table(
            ["inclusive %", "function"],
            [[f"{100 * c / total:.1f}", k[:110]] for k, c in inclusive.most_common(40)],
        )
    )
    return out


# ---------------------------------------------------------------- the fake provider


def _fake_main(port: int) -> None:
    """The fake provider for this benchmark (``python -m bench.turncost fake PORT``): BENCH_TEXT in
    ``MANY`` chunks, or in ``FEW`` when the user message's number is ``FEW_FROM`` or more, so one server
    run tells the per-chunk cost from the fixed per-turn cost."""
    import re

    from tests.fakes.fake_llm import BENCH_TEXT, FakeLLM, text

    many = text(BENCH_TEXT, chunk_size=2, first_token_delay=FIRST_TOKEN, delay=INTER_CHUNK)
    few = text(BENCH_TEXT, chunk_size=FEW_SIZE, first_token_delay=FIRST_TOKEN, delay=INTER_CHUNK)
    number = re.compile(r"(\d+)\s*$")

    def respond(body: dict[str, Any]) -> Any:
        user = ""
        for m in reversed(body.get("messages") or []):
            if isinstance(m, dict) and m.get("role") == "user":
                user = str(m.get("content"))
                break
        found = number.search(user)
        return few if found and int(found.group(1)) >= FEW_FROM else many

    fake = FakeLLM(port=port)
    fake.responder = respond
    fake.serve_forever(announce=True)


def _chunks(size: int) -> int:
    from tests.fakes.fake_llm import BENCH_TEXT

    return -(-len(BENCH_TEXT) // size)


# ---------------------------------------------------------------- the run


@dataclass
class Phase:
    """One server (one pace) and one reply length, summed over the rounds."""

    label: str
    chunks: int
    ok: int = 0
    turns: int = 0
    wall_s: float = 0.0
    loop_s: float = 0.0
    loop_sys_s: float = 0.0
    other_s: float = 0.0
    deltas: int = 0
    errors: list[str] = field(default_factory=list)

    def per_turn(self, seconds: float) -> float:
        return 1000 * seconds / max(1, self.ok)


def _measure(pid: int, url: str, phase: Phase, first: int, n: int) -> None:
    deltas: list[int] = []
    s0 = CpuReading.of(pid)
    wall, errors = asyncio.run(_run(url, ours=True, first=first, n=n, deltas=deltas))
    s1 = CpuReading.of(pid)
    loop_s, other_s = s1.minus(s0)
    phase.turns += n
    phase.ok += n - len(errors)
    phase.wall_s += wall
    phase.loop_s += loop_s
    phase.loop_sys_s += s1.loop_system(s0)
    phase.other_s += other_s
    phase.deltas += sum(deltas)
    phase.errors += errors


def _start_py_spy(pid: int, raw: Path) -> subprocess.Popen[bytes] | None:
    exe = _py_spy()
    if exe is None:
        return None
    spy = subprocess.Popen(
        [
            exe,
            "record",
            "--pid",
            str(pid),
            "--rate",
            "250",
            "--format",
            "raw",
            "--threads",
            "--output",
            str(raw),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(1.0)  # py-spy attaches
    return spy


@dataclass
class PaceRun:
    pace_ms: int
    many: Phase
    few: Phase

    def per_chunk_ms(self) -> float:
        """Loop CPU per streamed chunk: the difference the reply's chunk count makes."""
        many, few = self.many, self.few
        return (many.per_turn(many.loop_s) - few.per_turn(few.loop_s)) / (many.chunks - few.chunks)

    def fixed_ms(self) -> float:
        return self.few.per_turn(self.few.loop_s) - self.few.chunks * self.per_chunk_ms()


def _default_pace() -> int:
    from careerwise.config import Settings

    return Settings.model_fields["stream_pace_ms"].default  # type: ignore[no-any-return]


def run() -> list[str]:
    if MODE == "saturate":
        from bench import _saturate

        return _saturate.run()
    llm_port = free_port()
    fake_args = [sys.executable, "-m", "bench.turncost", "fake", str(llm_port)]
    logs = Path(tempfile.mkdtemp(prefix="cw-bench-turncost-"))
    load0 = os.getloadavg()[0]
    out: list[str] = []
    many, few = _chunks(2), _chunks(FEW_SIZE)
    profiled = _default_pace() if _default_pace() in PACES else PACES[0]
    runs = [
        PaceRun(p, Phase(f"{many} chunks a reply", many), Phase(f"{few} chunks a reply", few)) for p in PACES
    ]
    data_dirs: list[Path] = []
    try:
        with (
            process(fake_args, ready_url=f"http://127.0.0.1:{llm_port}/v1/models") as fake,
            contextlib.ExitStack() as stack,
        ):
            direct = f"http://127.0.0.1:{llm_port}/v1/chat/completions"
            asyncio.run(_run(direct, ours=False, first=50_000, n=CONCURRENCY))  # warm the fake
            f0 = CpuReading.of(fake.pid)
            base_wall, base_errors = asyncio.run(_run(direct, ours=False, first=0, n=TURNS))
            fake_loop, fake_other = CpuReading.of(fake.pid).minus(f0)

            servers = {}
            for pace in PACES:  # one server per pace, started one after the other, all kept running
                data_dirs.append(data_dir_with_corpus())
                servers[pace] = stack.enter_context(
                    serve(
                        data_dir=data_dirs[-1],
                        llm_port=llm_port,
                        port=free_port(),
                        workers=1,
                        log=logs / f"serve-pace{pace}.log",
                        # a fixed pace: this mode compares paces at low load (saturate: adaptive)
                        env={"CAREERWISE_STREAM_PACE_MS": str(pace), "CAREERWISE_STREAM_PACE_MAX_MS": "0"},
                    )
                )
            for pace, server in servers.items():
                _, warm_errors = asyncio.run(
                    _run(f"{server.url}/api/chat", ours=True, first=10_000, n=4 * CONCURRENCY)
                )
                if warm_errors:
                    raise RuntimeError(f"warm-up (pace {pace} ms) failed: {warm_errors[:3]}")
            raw = logs / "py-spy.txt"
            spy = _start_py_spy(servers[profiled].proc.pid, raw) if PROFILE else None
            if PROFILE and spy is None:
                out.append("(BENCH_TURNCOST_PROFILE: py-spy not found; no profile)")
            f1 = CpuReading.of(fake.pid)
            per_round = max(1, TURNS // ROUNDS)
            for r in range(ROUNDS):
                # rotated each round: no pace always runs first (or last) after the others
                for k in range(len(runs)):
                    pr = runs[(r + k) % len(runs)]
                    server = servers[pr.pace_ms]
                    url = f"{server.url}/api/chat"
                    _measure(server.proc.pid, url, pr.many, r * per_round, per_round)
                    _measure(server.proc.pid, url, pr.few, FEW_FROM + r * per_round, per_round)
            fake_during = sum(CpuReading.of(fake.pid).minus(f1))
            if spy is not None:
                spy.send_signal(2)  # SIGINT: py-spy writes its file and exits
                spy.wait(timeout=60)
    finally:
        for d in data_dirs:
            shutil.rmtree(d, ignore_errors=True)
    measured = sum(pr.many.ok + pr.few.ok for pr in runs)
    figures = (fake_loop, fake_other, 1000 * fake_during / max(1, measured), base_wall, base_errors)
    return out + _report(runs, figures, load0, logs, profiled)


def _report(
    runs: list[PaceRun],
    fake: tuple[float, float, float, float, list[str]],
    load0: float,
    logs: Path,
    profiled: int,
) -> list[str]:
    fake_loop, fake_other, fake_during_ms, base_wall, base_errors = fake
    fake_ms = 1000 * (fake_loop + fake_other) / TURNS
    turns = runs[0].many.turns
    out = [
        f"## CPU per streamed turn ({turns} turns a reply length and pace, {CONCURRENCY} at a time, "
        f"{ROUNDS} interleaved rounds; fake provider {FIRST_TOKEN * 1000:.0f} ms first token, "
        f"{INTER_CHUNK * 1000:.0f} ms between chunks, text mode (path B); load average {load0:.2f} before, "
        f"{os.getloadavg()[0]:.2f} after; {os.cpu_count()} cores)\n"
    ]
    rows: list[list[object]] = []
    for pr in runs:
        for ph in (pr.many, pr.few):
            total = ph.per_turn(ph.loop_s + ph.other_s)
            rows.append(
                [
                    f"careerwise serve, pace {pr.pace_ms} ms, {ph.label}",
                    f"{ph.ok}/{ph.turns}",
                    f"{ph.wall_s:.1f}",
                    f"{ph.per_turn(ph.loop_s):.1f} ({ph.per_turn(ph.loop_sys_s):.1f} in the kernel)",
                    ph.per_turn(ph.other_s),
                    total,
                    f"{total / fake_ms:.1f}x" if fake_ms and ph is pr.many else "",
                ]
            )
    rows.append(
        [
            f"baseline: the fake provider, {runs[0].many.chunks} chunks, requests sent to it directly",
            f"{TURNS - len(base_errors)}/{TURNS}",
            f"{base_wall:.1f}",
            1000 * fake_loop / TURNS,
            1000 * fake_other / TURNS,
            fake_ms,
            "1.0x",
        ]
    )
    rows.append(["(the fake provider while serving careerwise's calls)", "", "", "", "", fake_during_ms, ""])
    headers = [
        "process",
        "ok",
        "wall s",
        "loop thread ms/turn",
        "other threads ms/turn",
        "total ms/turn",
        "ratio",
    ]
    out.append(table(headers, rows))

    zero = next((pr for pr in runs if pr.pace_ms == 0), runs[0])
    pace_rows: list[list[object]] = []
    for pr in runs:
        loop_turn = pr.many.per_turn(pr.many.loop_s)
        zero_turn = zero.many.per_turn(zero.many.loop_s)
        pace_rows.append(
            [
                pr.pace_ms,
                f"{pr.many.deltas / max(1, pr.many.turns):.1f}",
                f"{loop_turn:.1f}",
                f"{pr.few.per_turn(pr.few.loop_s):.1f}",
                f"{1000 * pr.per_chunk_ms():.0f}",
                f"{pr.fixed_ms():.1f}",
                f"{loop_turn / zero_turn:.2f}" if zero_turn else "",
                f"{pr.per_chunk_ms() / zero.per_chunk_ms():.2f}" if zero.per_chunk_ms() > 0 else "",
            ]
        )
    out.append(
        f"\n### Stream pacing (``CAREERWISE_STREAM_PACE_MS``), ratios to pace {zero.pace_ms} in this run\n"
    )
    out.append(
        table(
            [
                "pace ms",
                f"deltas/turn ({runs[0].many.chunks} chunks)",
                f"loop ms/turn ({runs[0].many.chunks} chunks)",
                f"loop ms/turn ({runs[0].few.chunks} chunks)",
                "loop µs/chunk",
                "loop ms fixed/turn",
                "loop/turn vs 0",
                "µs/chunk vs 0",
            ],
            pace_rows,
        )
    )
    out.append(
        "\nLoop CPU per chunk is the difference the reply's length makes (43 vs 5 provider chunks); the fixed "
        "part is the rest (request, settings, routing hand-off, storage, trace)."
    )
    out.append(
        "\nGoal (issue #10): 100 turns/s on one core means < ~10 ms of loop CPU a turn. CPU ticks are "
        f"1/{TICK} s: at {turns} turns the resolution is {1000 / TICK / max(1, turns):.2f} ms a turn."
    )
    errors = [e for pr in runs for e in pr.many.errors + pr.few.errors] + base_errors
    for err, n in Counter(errors).most_common(5):
        out.append(f"- {n} x {err}")
    if PROFILE and (logs / "py-spy.txt").exists():
        out += [
            f"\n(py-spy: the pace-{profiled} server, all its batches)",
            *_profile_summary(logs / "py-spy.txt"),
        ]
    out.append(f"\nServer logs: {logs}")
    return out


if __name__ == "__main__":
    if sys.argv[1:2] == ["fake"]:
        _fake_main(int(sys.argv[2]))
    elif sys.argv[1:2] == ["saturate"]:
        from bench import _saturate

        print("\n".join(_saturate.run()))
    else:
        print("\n".join(run()))
