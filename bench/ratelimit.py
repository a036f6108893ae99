"""What a per-minute limit costs per request: counted in the process vs in the database (SQLite).

One limited request = one ``hit``. In the process it is a deque operation; in the database it is one
upsert in its own transaction, which on SQLite takes the database's single write lock, the same lock a
turn needs to store its messages and trace. So two figures: the hit itself, and what concurrent hits do
to another writer's commits (a stand-in for a turn's writes: the daily-token-budget upsert every turn
makes). Baseline for the second: the same writer alone, same run.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from pathlib import Path

from bench.common import pct, table
from careerwise.budget import TokenBudget
from careerwise.ratelimit import RateLimiter, SharedRateLimiter
from careerwise.store import Database

HITS = 400
WRITES = 200


async def _hits(limiter: RateLimiter | SharedRateLimiter, n: int, prefix: str) -> list[float]:
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        await limiter.hit(f"{prefix}{i % 50}")
        out.append((time.perf_counter() - t0) * 1000)
    return out


async def _writer(budget: TokenBudget, n: int) -> list[float]:
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        await budget.add(f"user:{i % 20}", 100)
        out.append((time.perf_counter() - t0) * 1000)
    return out


async def _run(folder: Path) -> list[list[object]]:
    db = Database(f"sqlite+aiosqlite:///{folder / 'careerwise.db'}")
    await asyncio.to_thread(db.migrate)
    try:
        memory = RateLimiter(10**9)
        shared = SharedRateLimiter(db, scope="user_chat", limit=10**9)
        budget = TokenBudget(db, 0)
        mem = await _hits(memory, HITS, "m")
        await _hits(shared, 20, "warm")
        dbh = await _hits(shared, HITS, "d")
        alone = await _writer(budget, WRITES)
        hitters = [asyncio.create_task(_hits(shared, HITS, f"c{k}-")) for k in range(4)]
        busy = await _writer(budget, WRITES)
        contended = [x for h in await asyncio.gather(*hitters) for x in h]
    finally:
        await db.dispose()

    def row(label: str, values: list[float]) -> list[object]:
        return [label, len(values), f"{pct(values, 50):.3f}", f"{pct(values, 95):.3f}"]

    return [
        row("hit, in the process", mem),
        row("hit, SQLite (one upsert, own transaction)", dbh),
        row("hit, SQLite, 4 hitters + 1 writer at once", contended),
        row("turn-like write alone (baseline)", alone),
        row("turn-like write beside 4 hitters", busy),
    ]


def run() -> list[str]:
    folder = Path(tempfile.mkdtemp(prefix="cw-bench-ratelimit-"))
    try:
        rows = asyncio.run(_run(folder))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return [
        "## Rate limits: the cost of one limited request (ms)\n",
        table(["what", "n", "p50", "p95"], rows),
        "",
        "Load average at the end: {:.2f} {:.2f} {:.2f}.".format(*os.getloadavg()),
    ]
