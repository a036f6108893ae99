"""Disconnect to upstream close: how long the provider keeps streaming after the visitor has gone.

A client opens a chat stream on a real ``careerwise serve`` (one process), reads until the first text
delta, and closes its socket. The fake provider, in its own process, notes when it saw its own
connection closed (``time.monotonic()``, which is system-wide on Linux, so the two processes' stamps
compare). The figure is fake's stamp minus the client's stamp just before ``close()``.

Baseline, same run: the same client disconnecting from the fake directly. The difference is what the app
adds: noticing the disconnect, cancelling the turn, and closing its upstream stream.
"""

from __future__ import annotations

import os
import socket
import tempfile
import time
from pathlib import Path

import httpx

from bench._burstclient import request_bytes
from bench._serve import data_dir_with_corpus, serve
from bench.common import fake_llm, pct, process, table
from tests.conftest import free_port

ROUNDS = 20
CHUNK_DELAY = 0.1  # the fake's pause between chunks: a ~5 s answer, so every close lands mid-stream
SEEN_WITHIN = 15.0  # a close the fake has not seen by then counts as "not closed"


def _open_and_drop(port: int, request: bytes, marker: bytes) -> float:
    """Send ``request``, read until ``marker`` (the first streamed text), close; the close's stamp."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    try:
        sock.sendall(request)
        seen = b""
        while marker not in seen:
            data = sock.recv(4096)
            if not data:
                raise RuntimeError(f"the stream ended before {marker!r}: {seen[-300:]!r}")
            seen += data
    finally:
        closed_at = time.monotonic()
        sock.close()
    return closed_at


def _closes(stats_url: str) -> list[float]:
    stamps: list[float] = httpx.get(stats_url, timeout=10).json()["closed_early_at"]
    return stamps


def _measure(port: int, request: bytes, marker: bytes, stats_url: str) -> tuple[list[float], int]:
    """``ROUNDS`` disconnects; the delays in ms, and how many closes the fake never saw."""
    delays: list[float] = []
    missed = 0
    for _ in range(ROUNDS):
        before = len(_closes(stats_url))
        closed_at = _open_and_drop(port, request, marker)
        deadline = time.monotonic() + SEEN_WITHIN
        while True:
            stamps = _closes(stats_url)
            if len(stamps) > before:
                delays.append((stamps[before] - closed_at) * 1000)
                break
            if time.monotonic() > deadline:
                missed += 1
                break
            time.sleep(0.005)
        time.sleep(0.3)  # let the app finish storing the cancelled turn before the next one
    return delays, missed


def _row(label: str, delays: list[float], missed: int) -> list[object]:
    return [
        label,
        f"{len(delays)}/{ROUNDS}",
        missed,
        pct(delays, 50),
        pct(delays, 95),
        max(delays) if delays else float("nan"),
    ]


def run() -> list[str]:
    llm_port, app_port = free_port(), free_port()
    stats_url = f"http://127.0.0.1:{llm_port}/_fake/stats"
    logs = Path(tempfile.mkdtemp(prefix="cw-bench-disconnect-"))
    rows: list[list[object]] = []
    with process(
        fake_llm(llm_port, mode="text", first_token_delay=0.0, delay=CHUNK_DELAY), ready_url=stats_url
    ):
        _, _, direct = request_bytes(
            f"http://127.0.0.1:{llm_port}/v1/chat/completions",
            {"model": "fake", "stream": True, "messages": [{"role": "user", "content": "怎麼談薪水？"}]},
        )
        rows.append(
            _row("client → fake directly (baseline)", *_measure(llm_port, direct, b"content", stats_url))
        )
        data_dir = data_dir_with_corpus()
        with serve(data_dir=data_dir, llm_port=llm_port, port=app_port, workers=1, log=logs / "serve.log"):
            _, _, chat = request_bytes(f"http://127.0.0.1:{app_port}/api/chat", {"message": "面試要穿什麼？"})
            rows.append(
                _row(
                    "client → careerwise serve → fake", *_measure(app_port, chat, b"event: delta", stats_url)
                )
            )
    return [
        f"## Disconnects: from the client's close to the provider's stream closed ({ROUNDS} each, ms)\n",
        table(["path", "closes seen", "not seen", "p50", "p95", "max"], rows),
        "",
        f"The fake streams a chunk every {CHUNK_DELAY:.1f} s; the client closes after the first text. "
        "Load average at the end: {:.2f} {:.2f} {:.2f}.".format(*os.getloadavg()),
    ]
