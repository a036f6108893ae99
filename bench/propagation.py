"""How long a change made through one process takes to show in another: two `careerwise serve`
processes on one SQLite database, each chatted with back to back while `careerwise settings set` (and
`careerwise ingest`) change things from a third.

A settings change shows when a turn's `tool_call` event reports the new effective top_k (the engine reads
the settings fresh at the start of every turn); a knowledge-base change when a search returns the new
document (each search checks the stored knowledge-base version and reloads when it moved). The delay is
measured from the moment the command returned to the moment each process's stream showed the change; it
is printed, never asserted. A turn that *started* after the command returned and still showed the old
value would be a stale read and is counted.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench._serve import data_dir_with_corpus, serve, server_env
from bench.common import ROOT, fake_llm, free_port, pct, process, table

REPEATS = 5
DEFAULT_TOP_K = 3  # search_default_top_k: what the model's call resolves to without the override
FORCED_TOP_K = 7
MESSAGE = "怎麼談薪水？ {i}"  # career/simple: the tool-mode fake always searches first
NEW_DOC_TITLE = "薪水談判技巧：傳播延遲測試"


@dataclass
class Turn:
    started: float  # perf_counter
    shown: float | None  # when the tool_call (or, for the knowledge base, the tool_result) event arrived
    top_k: int | None
    sources: list[str]
    search_ms: float | None
    error: str | None = None


async def _turn(client: httpx.AsyncClient, url: str, i: int) -> Turn:
    t = Turn(time.perf_counter(), None, None, [], None)
    event = ""
    try:
        async with client.stream("POST", f"{url}/api/chat", json={"message": MESSAGE.format(i=i)}) as r:
            if r.status_code != 200:
                t.error = f"HTTP {r.status_code}"
                return t
            async for line in r.aiter_lines():
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: ") and event == "tool_call":
                    t.shown = time.perf_counter()
                    t.top_k = json.loads(line[6:])["effective_arguments"].get("top_k")
                elif line.startswith("data: ") and event == "tool_result":
                    data = json.loads(line[6:])
                    t.sources = [s["title"] for s in data.get("sources", [])]
                    t.search_ms = data.get("duration_ms")
                elif line.startswith("data: ") and event == "error":
                    t.error = json.loads(line[6:]).get("code")
    except httpx.HTTPError as exc:
        t.error = type(exc).__name__
    return t


class Poller:
    """Chats with one process back to back, recording every turn."""

    def __init__(self, name: str, url: str) -> None:
        self.name, self.url = name, url
        self.turns: list[Turn] = []
        self._stop = asyncio.Event()
        self._n = 0

    async def run(self) -> None:
        async with httpx.AsyncClient(timeout=60) as client:
            while not self._stop.is_set():
                self._n += 1
                self.turns.append(await _turn(client, self.url, self._n))

    def stop(self) -> None:
        self._stop.set()


@dataclass
class Change:
    label: str
    command_s: float  # how long the CLI command took (process start, import, write)
    returned: float  # perf_counter when it returned
    delays: dict[str, float | None]  # process -> ms from `returned` to the first stream showing the change
    first_start: dict[str, float | None]  # process -> ms from `returned` to the start of that turn
    stale: dict[str, int]  # turns started after `returned` that still showed the old state


async def _cli(data_dir: Path, llm_port: int, *args: str) -> tuple[float, float]:
    env = {**os.environ, **server_env(data_dir, llm_port)}
    t0 = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "careerwise.cli",
        *args,
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"careerwise {' '.join(args)} failed: {err.decode()[-1000:]}")
    return time.perf_counter() - t0, time.perf_counter()


async def _measure(
    label: str,
    pollers: list[Poller],
    shows: Callable[[Turn], bool],
    run_cli: Callable[[], Awaitable[tuple[float, float]]],
) -> Change:
    """Run the command, then wait until every process has shown the change (or 30 s passed)."""
    took, returned = await run_cli()
    deadline = time.perf_counter() + 30
    delays: dict[str, float | None] = {}
    first_start: dict[str, float | None] = {}
    stale: dict[str, int] = {}
    while time.perf_counter() < deadline:
        for p in pollers:
            after = [t for t in p.turns if t.started >= returned and t.error is None]
            hit = next((t for t in p.turns if t.shown and t.shown >= returned and shows(t)), None)
            if hit is not None and p.name not in delays:
                assert hit.shown is not None
                delays[p.name] = 1000 * (hit.shown - returned)
                first_start[p.name] = 1000 * (hit.started - returned)
                stale[p.name] = sum(1 for t in after if t.started < hit.started and not shows(t))
        if len(delays) == len(pollers):
            break
        await asyncio.sleep(0.02)
    for p in pollers:
        delays.setdefault(p.name, None)
        first_start.setdefault(p.name, None)
        stale.setdefault(p.name, 0)
    await asyncio.sleep(0.5)  # a few turns with the new state before the next change
    return Change(label, took, returned, delays, first_start, stale)


async def _scenario(
    data_dir: Path, llm_port: int, urls: dict[str, str], doc: Path
) -> tuple[list[Change], dict[str, list[float]]]:
    pollers = [Poller(name, url) for name, url in urls.items()]
    tasks = [asyncio.create_task(p.run()) for p in pollers]
    changes: list[Change] = []
    try:
        await asyncio.sleep(1.0)

        def cli(*args: str) -> Callable[[], Awaitable[tuple[float, float]]]:
            return lambda: _cli(data_dir, llm_port, *args)

        await _cli(data_dir, llm_port, "settings", "set", f"configured_top_k={FORCED_TOP_K}")
        for _ in range(REPEATS):
            changes.append(
                await _measure(
                    "settings set use_full_retrieval_range=true",
                    pollers,
                    lambda t: t.top_k == FORCED_TOP_K,
                    cli("settings", "set", "use_full_retrieval_range=true"),
                )
            )
            changes.append(
                await _measure(
                    "settings reset use_full_retrieval_range",
                    pollers,
                    lambda t: t.top_k == DEFAULT_TOP_K,
                    cli("settings", "reset", "use_full_retrieval_range"),
                )
            )
        changes.append(
            await _measure(
                "ingest one new document",
                pollers,
                lambda t: NEW_DOC_TITLE in t.sources,
                cli("ingest", str(doc)),
            )
        )
    finally:
        for p in pollers:
            p.stop()
        await asyncio.gather(*tasks, return_exceptions=True)
    errors = [(p.name, t.error) for p in pollers for t in p.turns if t.error]
    if errors:
        changes.append(Change(f"turn errors: {errors[:5]} ({len(errors)})", 0, 0, {}, {}, {}))
    searches = {p.name: [t.search_ms for t in p.turns if t.search_ms is not None] for p in pollers}
    return changes, searches


def run() -> list[str]:
    loads = os.getloadavg()
    llm_port = free_port()
    data_dir = data_dir_with_corpus()
    logs = Path(tempfile.mkdtemp(prefix="cw-bench-logs-"))
    doc = logs / "salary-propagation.md"
    doc.write_text(
        f"# {NEW_DOC_TITLE}\n\n薪水談判技巧：先查市場行情，再提出具體數字。薪水談判技巧的重點是準備與時機。"
        "談薪水時把福利一起談，薪水談判技巧因人而異。\n",
        encoding="utf-8",
    )
    fake = fake_llm(llm_port, mode="tool", first_token_delay=0.05, delay=0.005)
    try:
        with (
            process(fake, ready_url=f"http://127.0.0.1:{llm_port}/v1/models"),
            serve(
                data_dir=data_dir, llm_port=llm_port, port=free_port(), workers=1, log=logs / "serve-a.log"
            ) as a,
            serve(
                data_dir=data_dir, llm_port=llm_port, port=free_port(), workers=1, log=logs / "serve-b.log"
            ) as b,
        ):
            changes, searches = asyncio.run(_scenario(data_dir, llm_port, {"A": a.url, "B": b.url}, doc))
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    return _report(changes, searches, loads, logs)


def _report(
    changes: list[Change], searches: dict[str, list[float]], loads: tuple[float, float, float], logs: Path
) -> list[str]:
    out = [
        "## Propagation: a change made by `careerwise` (a third process) seen by two `serve` processes "
        f"on one SQLite database (load average before {loads[0]:.2f} / {loads[1]:.2f} / {loads[2]:.2f})\n"
    ]
    rows = []
    for label in dict.fromkeys(c.label for c in changes if not c.label.startswith("turn errors")):
        group = [c for c in changes if c.label == label]
        for name in ("A", "B"):
            delays = [c.delays[name] for c in group if c.delays.get(name) is not None]
            starts = [c.first_start[name] for c in group if c.first_start.get(name) is not None]
            missed = sum(1 for c in group if c.delays.get(name) is None)
            rows.append(
                [
                    label,
                    name,
                    len(group),
                    f"{pct([d for d in delays if d is not None], 50):.0f} / "
                    f"{max((d for d in delays if d is not None), default=float('nan')):.0f}",
                    f"{pct([s for s in starts if s is not None], 50):.0f}",
                    sum(c.stale.get(name, 0) for c in group),
                    missed,
                    pct([c.command_s * 1000 for c in group], 50),
                ]
            )
    out.append(
        table(
            [
                "change",
                "process",
                "times",
                "command returned -> stream shows it, p50 / max ms",
                "... of which waiting for the next turn to start, p50 ms",
                "stale turns",
                "not seen in 30 s",
                "command's own time p50 ms",
            ],
            rows,
        )
    )
    for c in changes:
        if c.label.startswith("turn errors"):
            out.append(f"\n- {c.label}")
    for name, values in searches.items():
        if values:
            out.append(
                f"\n- process {name}: search (tool) time over its {len(values)} turns p50 {pct(values, 50):.0f} ms, "
                f"max {max(values):.0f} ms"
            )
    out.append(f"\nServer logs kept in {logs}")
    return out


if __name__ == "__main__":
    print("\n".join(run()))
