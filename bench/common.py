"""Shared benchmark plumbing: subprocesses that wait until they answer, the fake provider's command,
percentiles and tables (a free port is tests/conftest.py's ``free_port``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent


@contextmanager
def process(
    args: Sequence[str],
    *,
    ready_url: str,
    env: dict[str, str] | None = None,
    timeout: float = 180.0,
    log: Path | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """Start ``args``, wait until ``ready_url`` answers, stop it afterwards.

    ``log``: write stderr to this file. Without it stderr is a pipe nobody reads once the process is up,
    so a process that logs a lot (a server under hundreds of requests) would block on a full pipe.
    """
    full_env = {**os.environ, **(env or {})}
    log_file = open(log, "wb") if log is not None else None  # noqa: SIM115 - closed in finally
    proc = subprocess.Popen(
        list(args),
        cwd=ROOT,
        env=full_env,
        stdout=subprocess.DEVNULL,
        stderr=log_file if log_file is not None else subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                if log is not None:
                    err = log.read_text(errors="replace")
                else:
                    err = proc.stderr.read().decode() if proc.stderr else ""
                raise RuntimeError(f"{args[0]} exited early: {err[-2000:]}")
            try:
                if httpx.get(ready_url, timeout=1).status_code < 500:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{ready_url} did not answer within {timeout} s")
            time.sleep(0.1)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if log_file is not None:
            log_file.close()


def fake_llm(
    port: int, *, mode: str, first_token_delay: float, delay: float, lean: bool = False
) -> list[str]:
    """The command that serves the fake provider on ``port``: tests/fakes/fake_llm.py, or with ``lean``
    bench/_leanfake.py (the fake's text mode on plain asyncio, a fraction of its CPU)."""
    if lean and mode != "text":
        raise ValueError("the lean fake serves text mode only")
    module = ["bench._leanfake"] if lean else ["tests.fakes.fake_llm", "--mode", mode]
    timing = ["--first-token-delay", str(first_token_delay), "--delay", str(delay)]
    return [sys.executable, "-m", *module, "--port", str(port), *timing]


def pct(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    idx = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[idx]


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [[str(h) for h in headers]] + [
        [f"{c:.1f}" if isinstance(c, float) else str(c) for c in r] for r in rows
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |" for row in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)
