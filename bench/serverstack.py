"""CPU per streamed turn under other server stacks for the same app: a measurement, not a feature.

`careerwise serve` runs uvicorn with h11 and asyncio's default loop. Most of a streamed turn's per-chunk
CPU sits in the loop, uvicorn/h11 and Starlette (docs/benchmarks.md, "The per-chunk cost of a streamed
answer"), so this asks whether another server stack would cut it. Stacks, interleaved round by round
(A, B, C, A, B, C...) so the shared machine's noise hits all of them alike:

- ``uvicorn-h11``: `careerwise serve --workers 1` on the stack it ran before 2026-11-30
  (``CAREERWISE_SERVER_LOOP=asyncio``, ``CAREERWISE_SERVER_HTTP=h11``), the reference;
- ``serve-default``: `careerwise serve --workers 1` as shipped (uvloop + httptools, decision 0012);
- ``uvicorn-uvloop``: uvicorn ``--http httptools --loop uvloop`` on ``make_app``;
- ``granian``: granian (a Rust HTTP server) ``--interface asgi --workers 1``, Python's asyncio loop;
- ``granian-uvloop``: the same on uvloop.

The granian stacks need a package the project does not depend on: ``BENCH_SERVERSTACK_PKGS`` (default
/tmp/srvpkgs, filled with ``pip install --target``) goes on the PYTHONPATH of those server processes only.
Every stack builds the app the way `careerwise serve --workers 1` does (``make_app`` below) and logs each
request (uvicorn's access log, granian ``--access-log``), so the only difference is the server.

Per stack and round: `bench/turncost.py`'s two phases (43 and 5 chunks a reply; CPU of the whole server
process tree, and of the main threads, from /proc), the streamed events of one turn compared with
today's stack (event names, text, payload keys, response headers), and a few client disconnects spot
checked against the fake's own record of its stream closing early.

``python -m bench.serverstack`` (the CPU table; ``BENCH_SERVERSTACK_ROUNDS``, 2, and
``BENCH_SERVERSTACK_STACKS`` choose the load), ``python -m bench.serverstack burst`` (bench/concurrency.py's
200-stream burst on SQLite, one worker, once per stack). Not registered in ``make bench``: it needs the
extra packages.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench._serve import Server, _reap, data_dir_with_corpus, descendants, server_env
from bench.common import free_port, process, table
from bench.turncost import Phase
from tests.conftest import parse_sse

PKGS = os.environ.get("BENCH_SERVERSTACK_PKGS", "/tmp/srvpkgs")
ROUNDS = int(os.environ.get("BENCH_SERVERSTACK_ROUNDS", "2"))
TODAY = "uvicorn-h11"
DISCONNECTS = 3


def make_app() -> Any:
    """The app as `careerwise serve --workers 1` builds it (its logging, the settings from the
    environment, the same factory with its lifespan: migrations, corpus ingest when empty, warm-up)."""
    from careerwise.app import create_app
    from careerwise.cli import _logging
    from careerwise.config import get_settings

    _logging(True)
    return create_app(get_settings())


# `careerwise serve`'s own stack settings per stack (decision 0012): TODAY is the stack it ran before
# 2026-11-30, set explicitly now that uvloop + httptools are the default ("serve-default")
_SERVE_ENV = {
    TODAY: {"CAREERWISE_SERVER_LOOP": "asyncio", "CAREERWISE_SERVER_HTTP": "h11"},
    "serve-default": {},
}


def _pace_env() -> dict[str, str]:
    """A fixed stream pace on every stack: the shipped one unless ``BENCH_SERVERSTACK_PACE`` names another
    (0 = every chunk, as the first comparison ran); never the adaptive one, which follows the load."""
    pace = os.environ.get("BENCH_SERVERSTACK_PACE")
    return {"CAREERWISE_STREAM_PACE_MAX_MS": "0"} | ({"CAREERWISE_STREAM_PACE_MS": pace} if pace else {})


def _command(stack: str, port: int) -> tuple[list[str], bool]:
    """The server's command line, and whether it needs the extra packages (granian: not in the venv)."""
    py, target, p = sys.executable, "bench.serverstack:make_app", str(port)
    if stack in _SERVE_ENV:
        return [py, "-m", "careerwise.cli", "serve", "--port", p, "--workers", "1"], False
    if stack == "uvicorn-uvloop":
        return [
            *(py, "-m", "uvicorn", "--factory", target, "--host", "127.0.0.1", "--port", p),
            *("--http", "httptools", "--loop", "uvloop", "--log-level", "info"),
            *("--timeout-graceful-shutdown", "5"),
        ], False
    if stack in ("granian", "granian-uvloop"):
        loop = "uvloop" if stack == "granian-uvloop" else "asyncio"
        return [
            *(py, "-m", "granian", "--interface", "asgi", "--factory", "--host", "127.0.0.1"),
            *("--port", p, "--workers", "1", "--loop", loop, "--log-level", "info", "--access-log"),
            target,
        ], True
    raise ValueError(f"unknown stack {stack!r}")


@contextmanager
def serve_stack(
    stack: str,
    *,
    data_dir: Path,
    llm_port: int,
    port: int,
    log: Path,
    workers: int = 1,
    env: dict[str, str] | None = None,
) -> Iterator[Server]:
    """Like bench._serve.serve, for any stack (one worker: ``workers`` is there for bench/concurrency)."""
    if workers != 1:
        raise ValueError("the stack comparison runs one worker")
    args, extra = _command(stack, port)
    full_env = server_env(data_dir, llm_port) | _SERVE_ENV.get(stack, {}) | _pace_env() | (env or {})
    if extra:
        if not Path(PKGS, "granian").exists():
            raise RuntimeError(
                f"{PKGS} lacks the packages: pip install --target {PKGS} uvloop httptools granian"
            )
        full_env["PYTHONPATH"] = PKGS
    url = f"http://127.0.0.1:{port}"
    seen: set[int] = set()
    try:
        with process(args, env=full_env, ready_url=f"{url}/readyz", timeout=600, log=log) as proc:
            seen.update(descendants(proc.pid))
            yield Server(proc, url, log, 1)
            seen.update(descendants(proc.pid))
    finally:
        _reap(seen)


# ---------------------------------------------------------------- what the client sees


_VOLATILE = re.compile(r"(^|_)(id|at|ms|seconds|time|elapsed|created|turn|conversation|trace)(_|$)")


def _shape(value: Any) -> Any:
    """A payload with run-specific values (ids, stamps, durations) blanked, the rest kept."""
    if isinstance(value, dict):
        return {k: "*" if _VOLATILE.search(k) else _shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return value


@dataclass
class Stream:
    headers: dict[str, str]
    events: list[tuple[str, Any]] = field(default_factory=list)
    text: str = ""


async def _one_stream(url: str, message: str) -> Stream:
    async with (
        httpx.AsyncClient(timeout=60) as client,
        client.stream("POST", f"{url}/api/chat", json={"message": message}) as r,
    ):
        keep = ("content-type", "cache-control", "x-accel-buffering", "transfer-encoding", "connection")
        got = Stream({k: r.headers.get(k, "") for k in keep} | {"status": str(r.status_code)})
        raw = b"".join([b async for b in r.aiter_bytes()]).decode()
    for event, payload in parse_sse(raw):  # the tests' SSE parser: one reading of the frames
        if event == "delta":
            got.text += str(payload.get("text", ""))
            continue  # the text is compared whole: the chunking is the provider's
        got.events.append((event, _shape(payload)))
    return got


def _disconnects(port: int, stats_url: str) -> tuple[int, list[float]]:
    """Client closes right after the first delta; how many the fake saw end early, and how soon (ms)."""
    from bench.disconnect import _closes, _open_and_drop, _request

    seen, delays = 0, []
    for i in range(DISCONNECTS):
        before = len(_closes(stats_url))
        closed_at = _open_and_drop(
            port, _request("/api/chat", port, {"message": f"面試要穿什麼 {i}"}), b"event: delta"
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            stamps = _closes(stats_url)
            if len(stamps) > before:
                seen += 1
                delays.append((stamps[before] - closed_at) * 1000)
                break
            time.sleep(0.005)
        time.sleep(0.5)
    return seen, delays


# ---------------------------------------------------------------- the CPU rounds


@dataclass
class Result:
    stack: str
    many: Phase
    few: Phase
    stream: Stream
    disconnect: tuple[int, list[float]]
    load: float


def _round(stack: str, llm_port: int, logs: Path, n: int) -> Result:
    from bench import turncost as tc

    data_dir = data_dir_with_corpus()
    port = free_port()
    try:
        with serve_stack(
            stack, data_dir=data_dir, llm_port=llm_port, port=port, log=logs / f"{stack}-{n}.log"
        ) as server:
            url = f"{server.url}/api/chat"
            _, warm_errors = asyncio.run(tc._run(url, ours=True, first=10_000, n=4 * tc.CONCURRENCY))
            if warm_errors:
                raise RuntimeError(f"{stack}: warm-up failed: {warm_errors[:3]}")
            load = os.getloadavg()[0]
            many = tc.Phase("many", tc._chunks(2))
            few = tc.Phase("few", tc._chunks(tc.FEW_SIZE))
            tc._measure(server.proc.pid, url, many, 0, tc.TURNS)
            tc._measure(server.proc.pid, url, few, tc.FEW_FROM, tc.TURNS)
            stream = asyncio.run(_one_stream(server.url, "面試怎麼準備 7"))
            gone = _disconnects(port, f"http://127.0.0.1:{llm_port}/_fake/stats")
    finally:
        import shutil

        shutil.rmtree(data_dir, ignore_errors=True)
    return Result(stack, many, few, stream, gone, load)


def _stacks() -> list[str]:
    chosen = os.environ.get("BENCH_SERVERSTACK_STACKS", "uvicorn-h11,uvicorn-uvloop,granian,granian-uvloop")
    return [s.strip() for s in chosen.split(",") if s.strip()]


def run() -> list[str]:
    from bench import turncost as tc

    llm_port = free_port()
    logs = Path(tempfile.mkdtemp(prefix="cw-bench-serverstack-"))
    loads0 = os.getloadavg()
    results: list[Result] = []
    fake_args = [sys.executable, "-m", "bench.turncost", "fake", str(llm_port)]
    with process(fake_args, ready_url=f"http://127.0.0.1:{llm_port}/v1/models") as fake:
        direct = f"http://127.0.0.1:{llm_port}/v1/chat/completions"
        asyncio.run(tc._run(direct, ours=False, first=50_000, n=tc.CONCURRENCY))
        f0 = tc.CpuReading.of(fake.pid)
        asyncio.run(tc._run(direct, ours=False, first=0, n=tc.TURNS))
        fake_ms = 1000 * sum(tc.CpuReading.of(fake.pid).minus(f0)) / tc.TURNS
        for n in range(ROUNDS):
            for stack in _stacks():
                results.append(_round(stack, llm_port, logs, n))
                print(f"round {n + 1}, {stack}: done", file=sys.stderr, flush=True)
    return _report(results, fake_ms, loads0, logs)


def _per_turn(phase: Phase, seconds: float) -> float:
    return 1000 * seconds / max(1, phase.ok)


def _split(r: Result, which: str) -> tuple[float, float, float, float]:
    """(43-chunk ms, 5-chunk ms, µs per chunk, fixed ms per turn) for the main threads or the whole tree."""

    def ms(ph: Phase) -> float:
        return _per_turn(ph, ph.loop_s if which == "loop" else ph.loop_s + ph.other_s)

    many, few = ms(r.many), ms(r.few)
    per_chunk = (many - few) / (r.many.chunks - r.few.chunks)
    return many, few, 1000 * per_chunk, few - r.few.chunks * per_chunk


def _report(
    results: list[Result], fake_ms: float, loads0: tuple[float, float, float], logs: Path
) -> list[str]:
    from bench import turncost as tc

    stacks = list(dict.fromkeys(r.stack for r in results))
    mean: dict[str, dict[str, list[float]]] = {}
    rows: list[list[object]] = []
    for s in stacks:
        mine = [r for r in results if r.stack == s]
        cols: dict[str, list[float]] = {}
        for which in ("loop", "whole"):
            values = [_split(r, which) for r in mine]
            cols[which] = [sum(v[i] for v in values) / len(values) for i in range(4)]
        mean[s] = cols
        per_round = ", ".join(f"{_split(r, 'whole')[0]:.1f}" for r in mine)
        rows.append(
            [
                s,
                f"{sum(r.many.ok + r.few.ok for r in mine)}/{2 * tc.TURNS * len(mine)}",
                *(f"{x:.1f}" for x in cols["loop"][:2]),
                f"{cols['loop'][2]:.0f}",
                f"{cols['loop'][3]:.1f}",
                *(f"{x:.1f}" for x in cols["whole"][:2]),
                f"{cols['whole'][2]:.0f}",
                f"{cols['whole'][3]:.1f}",
                per_round,
                "",
            ]
        )
    base = mean.get(TODAY, {}).get("whole")
    for row, s in zip(rows, stacks, strict=True):
        row[-1] = f"{mean[s]['whole'][0] / base[0]:.2f}x" if base else ""
    headers = [
        "stack",
        "ok turns",
        "main thr. ms/turn 43 ch.",
        "main 5 ch.",
        "main µs/chunk",
        "main fixed ms",
        "process ms/turn 43 ch.",
        "process 5 ch.",
        "process µs/chunk",
        "process fixed ms",
        "process 43 ch. per round",
        "ratio (process, 43 ch.)",
    ]
    out = [
        f"## Server stacks: CPU per streamed turn ({ROUNDS} interleaved rounds of {tc.TURNS} + {tc.TURNS} turns, "
        f"{tc.CONCURRENCY} at a time; load average {loads0[0]:.2f} {loads0[1]:.2f} {loads0[2]:.2f} before, "
        f"{os.getloadavg()[0]:.2f} after; {os.cpu_count()} cores)\n",
        table(headers, rows),
        f"\nBaseline: the fake provider's own CPU, 43 chunks, requests sent to it directly: {fake_ms:.1f} ms a "
        "request. 'main thr.': the main thread of each process of the server (the event loop under "
        "uvicorn; under granian the Python loop runs in the worker's main thread, its Rust I/O in others).",
        "\n### The streamed answer and disconnects, per stack and round\n",
    ]
    ref = next((r.stream for r in results if r.stack == TODAY), None)
    checks: list[list[object]] = []
    for r in results:
        same = (
            "reference"
            if r.stream is ref
            else (
                "same" if ref and (r.stream.events, r.stream.text) == (ref.events, ref.text) else "DIFFERENT"
            )
        )
        headers_same = (
            "" if ref is None else ("same" if r.stream.headers == ref.headers else str(r.stream.headers))
        )
        seen, delays = r.disconnect
        checks.append(
            [
                r.stack,
                f"{len(r.stream.events)} events + {len(r.stream.text)} chars of text",
                same,
                headers_same or "reference",
                f"{seen}/{DISCONNECTS}",
                ", ".join(f"{d:.0f}" for d in delays),
            ]
        )
    out.append(
        table(
            ["stack", "one turn's stream", "vs today", "headers", "upstream closed", "close delay ms"], checks
        )
    )
    differing = [r for r in results if ref and r.stream.events != ref.events]
    for r in differing[:2]:
        out.append(f"\n{r.stack} events: {r.stream.events}\ntoday: {ref.events if ref else None}")
    out.append(f"\nServer logs: {logs}")
    return out


# ---------------------------------------------------------------- the burst


def burst() -> list[str]:
    """bench/concurrency.py's burst (SQLite, one worker) once per stack, its serve swapped for ours."""
    os.environ["BENCH_CONCURRENCY_STORES"] = "sqlite"
    os.environ["BENCH_CONCURRENCY_WORKERS"] = "1"
    from bench import concurrency

    concurrency.PLOTS = Path(tempfile.mkdtemp(prefix="cw-bench-serverstack-plots-"))  # not the docs' plots
    out: list[str] = []
    for stack in _stacks():

        def swapped(stack: str = stack, **kw: Any) -> Any:
            return serve_stack(stack, **kw)

        setattr(concurrency, "serve", swapped)  # noqa: B010 - swapped for this run only
        out += [f"\n# {stack}\n", *concurrency.run()]
    return out


if __name__ == "__main__":
    print("\n".join(burst() if sys.argv[1:2] == ["burst"] else run()))
