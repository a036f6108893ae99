"""The burst's rig measured on its own: what each provider and each client costs, and whether the two
clients stamp the first text alike (docs/benchmarks.md, "The rig: a lean provider and client").

1. CPU: the burst's 200 provider streams (bench/concurrency.py's baseline burst, 43 text chunks each),
   sent by each client to each provider, both providers up in their own processes for the whole run, the
   four combinations in interleaved rounds. Provider CPU from /proc, client CPU = this process's.
2. Stamps: a few requests one at a time, the two clients alternating, to the lean provider (its first
   and GUARD-th chunk) and through CareerWise (``careerwise serve --workers 1``, SQLite: the first delta).

    python -m bench._rig        (BENCH_RIG_ROUNDS=2, BENCH_RIG_STAMPS=8)
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench._burstclient import Sample, httpx_request, lean_request, lines_for
from bench._serve import cpu_seconds, data_dir_with_corpus, serve
from bench.common import fake_llm, free_port, lean_fake, process, table
from bench.concurrency import FIRST_TOKEN, INTER_CHUNK, REQUESTS, _body, _burst, _warm

ROUNDS = int(os.environ.get("BENCH_RIG_ROUNDS", "2"))
STAMPS = int(os.environ.get("BENCH_RIG_STAMPS", "8"))
CLIENTS = ("httpx", "lean")


def _cpu_rounds(ports: dict[str, int], pids: dict[str, int]) -> list[list[object]]:
    cells: dict[tuple[str, str], list[tuple[float, float, int]]] = {}
    for _ in range(ROUNDS):
        for provider in ports:
            for client in CLIENTS:
                url = f"http://127.0.0.1:{ports[provider]}/v1/chat/completions"
                time.sleep(1)  # the previous burst's connections closed
                p0, c0 = cpu_seconds(pids[provider]), time.process_time()
                burst = asyncio.run(_burst(url, ours=False, client=client))
                p1, c1 = cpu_seconds(pids[provider]), time.process_time()
                cells.setdefault((provider, client), []).append((p1 - p0, c1 - c0, len(burst.ok)))
    rows: list[list[object]] = []
    for (provider, client), runs in cells.items():
        ok = sum(n for _, _, n in runs)
        rows.append(
            [
                provider,
                client,
                f"{ok}/{REQUESTS * len(runs)}",
                f"{1000 * sum(p for p, _, _ in runs) / max(1, ok):.2f}",
                ", ".join(f"{1000 * p / max(1, n):.2f}" for p, _, n in runs),
                f"{1000 * sum(c for _, c, _ in runs) / max(1, ok):.2f}",
                ", ".join(f"{1000 * c / max(1, n):.2f}" for _, c, n in runs),
            ]
        )
    return rows


async def _stamps(url: str, *, ours: bool) -> dict[str, list[Sample]]:
    """STAMPS requests a client, one at a time, the clients alternating."""
    out: dict[str, list[Sample]] = {c: [] for c in CLIENTS}
    async with httpx.AsyncClient(timeout=60) as http:
        for i in range(STAMPS):
            for client in CLIENTS if i % 2 == 0 else CLIENTS[::-1]:
                sample = Sample(0.0)
                t0 = time.perf_counter()
                lines = lines_for(ours=ours, sample=sample, t0=t0)
                body = _body(20_000 + i, ours=ours)
                if client == "lean":
                    await lean_request(url, body, lines, sample, t0)
                else:
                    await httpx_request(http, url, body, lines, sample, t0)
                out[client].append(sample)
    return out


def _stamp_rows(target: str, samples: dict[str, list[Sample]]) -> list[list[object]]:
    rows: list[list[object]] = []
    for client, got in samples.items():
        ok = [s for s in got if s.error is None]
        first = [s.first_ms for s in ok if s.first_ms is not None]
        shown = [s.shown_ms for s in ok if s.shown_ms is not None]
        rows.append(
            [
                target,
                client,
                f"{len(ok)}/{len(got)}",
                f"{statistics.median(first):.1f} ({min(first):.1f}-{max(first):.1f})" if first else "-",
                f"{statistics.median(shown):.1f} ({min(shown):.1f}-{max(shown):.1f})" if shown else "-",
            ]
        )
    return rows


def run() -> list[str]:
    loads = os.getloadavg()
    ports = {"fake": free_port(), "lean": free_port()}
    timing = {"first_token_delay": FIRST_TOKEN, "delay": INTER_CHUNK}
    out = [
        f"## The burst's rig: {REQUESTS} provider streams over 2 s (43 text chunks each), {ROUNDS} rounds; "
        f"load average before {loads[0]:.2f} / {loads[1]:.2f} / {loads[2]:.2f}\n"
    ]
    with (
        process(
            fake_llm(ports["fake"], mode="text", **timing),
            ready_url=f"http://127.0.0.1:{ports['fake']}/v1/models",
        ) as fake,
        process(
            lean_fake(ports["lean"], **timing), ready_url=f"http://127.0.0.1:{ports['lean']}/v1/models"
        ) as lean,
    ):
        rows = _cpu_rounds(ports, {"fake": fake.pid, "lean": lean.pid})
        out.append(
            table(
                [
                    "provider",
                    "client",
                    "ok",
                    "provider CPU ms a stream",
                    "per round",
                    "client CPU ms a stream",
                    "per round",
                ],
                rows,
            )
        )
        stamp_rows = _stamp_rows(
            "lean provider",
            asyncio.run(_stamps(f"http://127.0.0.1:{ports['lean']}/v1/chat/completions", ours=False)),
        )
        data_dir = data_dir_with_corpus()
        logs = Path(tempfile.mkdtemp(prefix="cw-bench-rig-"))
        with serve(
            data_dir=data_dir, llm_port=ports["lean"], port=free_port(), workers=1, log=logs / "serve.log"
        ) as server:
            warm = asyncio.run(_warm(server.url, 4))
            if warm:
                raise RuntimeError(f"warm-up failed: {warm}")
            stamp_rows += _stamp_rows(
                "through CareerWise", asyncio.run(_stamps(f"{server.url}/api/chat", ours=True))
            )
    out.append(f"\n### First-text stamps, {STAMPS} requests a client, one at a time (median (min-max) ms)\n")
    out.append(
        table(["target", "client", "ok", "first text chunk", "text shown (provider: chunk 3)"], stamp_rows)
    )
    out.append(f"\nLoad average after: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return out


if __name__ == "__main__":
    print("\n".join(run()), file=sys.stdout)
