"""`careerwise serve` as an operator runs it, on each server stack (decision 0012): the stack the settings
name is the one the serving processes load (one worker and `--workers N`), it is logged once, and what a
client and the operator see is the same on both: the event-stream headers and every event, uvicorn's access
log line, a graceful stop that lets a running answer finish. A stack whose package cannot be imported stops
the start with a message naming the setting, before anything else loads.

The serving processes are real subprocesses (the parent and uvicorn's spawned workers), so the loaded
extension modules are read from /proc/PID/maps, not inferred from settings.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from careerwise.cli import server_stack_problem
from tests.conftest import SERVER_STACKS, LiveServer, free_port, parse_sse, serve_env
from tests.fakes.fake_llm import FakeLLM, text

ANSWER = "先整理你的經歷，再練習常見問題。"
STACKS = [
    pytest.param(("uvloop", "httptools"), id="uvloop-httptools"),
    pytest.param(("asyncio", "h11"), id="asyncio-h11"),
]
# the compiled modules each non-default choice loads; nothing else in the app imports them
UVLOOP_SO, HTTPTOOLS_SO = "/uvloop/loop.", "/httptools/parser/parser."


def _wait_for(predicate: Callable[[], bool], timeout: float = 60.0) -> bool:
    # polling for an outcome, not asserting on time: the deadline only stops a broken test from hanging
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


@dataclass
class Served:
    proc: subprocess.Popen[bytes]
    url: str
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def workers(self) -> list[int]:
        """uvicorn's spawned worker processes (none with one worker: the parent serves)."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                cmd = (entry / "cmdline").read_bytes()
            except OSError:
                continue  # ended meanwhile
            if int(stat.rsplit(")", 1)[1].split()[1]) == self.proc.pid and b"spawn_main" in cmd:
                found.append(int(entry.name))
        return found


def _maps(pid: int) -> str:
    return Path(f"/proc/{pid}/maps").read_text()


@pytest.fixture
def serve(tmp_path: Path, corpus_db: Path, fake_llm: FakeLLM) -> Iterator[Callable[..., Served]]:
    """Start `careerwise serve` in its own process group; stops it (SIGTERM, then SIGKILL) afterwards."""
    started: list[Served] = []

    def start(*, workers: int = 1, env: dict[str, str] | None = None) -> Served:
        data_dir = tmp_path / f"data{len(started)}"
        data_dir.mkdir()
        shutil.copy(corpus_db, data_dir / "careerwise.db")
        port = free_port()
        full_env = serve_env(data_dir, fake_llm.base_url, CAREERWISE_STREAM_PACE_MS="0", **(env or {}))
        log = tmp_path / f"serve{len(started)}.log"  # a file: a pipe nobody reads would block the server
        with log.open("wb") as out:
            command = [sys.executable, "-m", "careerwise.cli", "serve", "--port", str(port)]
            proc = subprocess.Popen(
                [*command, "--workers", str(workers)],
                env=full_env,
                start_new_session=True,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        served = Served(proc, f"http://127.0.0.1:{port}", log)
        started.append(served)
        return served

    yield start
    for served in started:
        if served.proc.poll() is None:
            os.killpg(served.proc.pid, signal.SIGTERM)  # the group we started: the parent and its workers
            try:
                served.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(served.proc.pid, signal.SIGKILL)
                served.proc.wait(timeout=10)


def _until_up(served: Served, workers: int = 1) -> None:
    def up() -> bool:
        if served.proc.poll() is not None:
            raise RuntimeError(f"serve exited: {served.log_text()[-3000:]}")
        return served.log_text().count("Application startup complete") >= workers

    def answers() -> bool:
        try:
            return httpx.get(f"{served.url}/healthz", timeout=2).status_code == 200
        except httpx.TransportError:
            return False  # with one worker, uvicorn binds the port after the app has started

    # each process loads the embedder and the index first
    if not (_wait_for(up, timeout=240) and _wait_for(answers)):
        raise RuntimeError(f"serve did not start: {served.log_text()[-3000:]}")


def _stream(url: str, message: str) -> tuple[httpx.Headers, list[tuple[str, dict[str, object]]]]:
    with (
        httpx.Client(base_url=url, timeout=30) as c,
        c.stream("POST", "/api/chat", json={"message": message}) as r,
    ):
        assert r.status_code == 200
        return r.headers, parse_sse("".join(r.iter_text()))


@pytest.mark.parametrize("stack", STACKS)
def test_serve_runs_the_configured_stack_and_behaves_the_same(
    serve: Callable[..., Served], fake_llm: FakeLLM, stack: tuple[str, str]
) -> None:
    loop, http = stack
    served = serve(env={"CAREERWISE_SERVER_LOOP": loop, "CAREERWISE_SERVER_HTTP": http})
    _until_up(served)
    log = served.log_text()
    assert log.count("serving with loop=") == 1
    assert f"serving with loop={loop} http={http}" in log
    maps = _maps(served.proc.pid)
    assert (UVLOOP_SO in maps) == (loop == "uvloop")
    assert (HTTPTOOLS_SO in maps) == (http == "httptools")

    fake_llm.script(text(ANSWER, chunk_size=4))
    headers, events = _stream(served.url, "面試怎麼準備")
    assert headers["content-type"] == "text/event-stream; charset=utf-8"
    assert headers["cache-control"] == "no-cache" and headers["x-accel-buffering"] == "no"
    assert headers["transfer-encoding"] == "chunked" and "content-length" not in headers
    assert events[0][0] == "route" and events[-1][0] == "done"
    assert events[-1][1]["status"] == "ok"
    assert "".join(str(d["text"]) for n, d in events if n == "delta") == ANSWER
    assert len(fake_llm.requests) == 1

    # the access log line, the same on both parsers; the HTTP client's own INFO line about the LLM call
    # is not there (the CLI raises httpx/httpx2 to WARNING: our trace records the call)
    assert _wait_for(lambda: '"POST /api/chat HTTP/1.1" 200' in served.log_text())
    assert "HTTP Request:" not in served.log_text()

    # a graceful stop lets the running answer finish and runs the lifespan's shutdown
    fake_llm.script(text("慢慢來。" * 20, chunk_size=2, delay=0.05))
    with (
        httpx.Client(base_url=served.url, timeout=30) as c,
        c.stream("POST", "/api/chat", json={"message": "面試要怎麼準備"}) as r,
    ):
        lines = r.iter_lines()
        for line in lines:
            if line.startswith("event: delta"):
                served.proc.send_signal(signal.SIGTERM)  # our own child, by its id
                break
        rest = "\n".join(lines)
    assert "event: done" in rest and '"status":"ok"' in rest.replace(" ", "")
    # uvicorn stops, then raises the signal it caught again, so the exit reads as "ended by SIGTERM"
    assert served.proc.wait(timeout=60) == -signal.SIGTERM
    log = served.log_text()
    assert "Application shutdown complete" in log and "Finished server process" in log


def test_workers_run_the_configured_stack(serve: Callable[..., Served], fake_llm: FakeLLM) -> None:
    """`--workers 2` passes the choice to each spawned worker: the stack that is not uvicorn's "auto"
    (which would pick uvloop and httptools, both installed) shows that it is passed, not guessed."""
    served = serve(workers=2, env={"CAREERWISE_SERVER_LOOP": "asyncio", "CAREERWISE_SERVER_HTTP": "h11"})
    _until_up(served, workers=2)
    workers = served.workers()
    assert len(workers) == 2
    for pid in workers:
        maps = _maps(pid)
        assert UVLOOP_SO not in maps and HTTPTOOLS_SO not in maps
    assert served.log_text().count("serving with loop=asyncio http=h11") == 1
    fake_llm.script(text(ANSWER, chunk_size=4))
    _, events = _stream(served.url, "面試怎麼準備")
    assert events[-1][0] == "done" and events[-1][1]["status"] == "ok"


@pytest.mark.parametrize(
    ("missing", "setting", "other"),
    [("uvloop", "CAREERWISE_SERVER_LOOP", "asyncio"), ("httptools", "CAREERWISE_SERVER_HTTP", "h11")],
)
def test_a_stack_that_cannot_be_imported_stops_the_start(
    tmp_path: Path, missing: str, setting: str, other: str
) -> None:
    """A package shadowed by one that fails to import (as on a platform without a build of it): exit 2 and
    one line that says which setting and what to do, never a silent fall-back to the other stack."""
    shadow = tmp_path / "shadow" / missing
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text('raise ImportError("no build for this platform")\n')
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CAREERWISE_")},
        "PYTHONPATH": str(shadow.parent),
        "CAREERWISE_ENVIRONMENT": "test",
        "CAREERWISE_DATA_DIR": str(tmp_path / "data"),
    }
    done = subprocess.run(
        [sys.executable, "-m", "careerwise.cli", "serve", "--port", str(free_port())],
        env=env,
        capture_output=True,
        timeout=120,
    )
    err = done.stderr.decode(errors="replace")
    assert done.returncode == 2, err
    assert f"{setting}={missing}, but {missing} cannot be imported (no build for this platform)" in err
    assert f"set {setting}={other}" in err
    assert "Started server process" not in err and "serving with" not in err


def test_the_stack_check_names_only_what_is_missing() -> None:
    def load(name: str) -> object:
        if name == "httptools":
            raise ImportError("libllhttp.so: cannot open shared object file")
        return object()

    assert server_stack_problem(loop="uvloop", http="h11", load=load) is None
    assert server_stack_problem(loop="asyncio", http="h11", load=load) is None
    problem = server_stack_problem(loop="asyncio", http="httptools", load=load)
    assert problem is not None and "CAREERWISE_SERVER_HTTP=httptools" in problem
    assert "libllhttp.so" in problem and "CAREERWISE_SERVER_HTTP=h11" in problem

    def nothing(name: str) -> object:
        raise AssertionError(f"asyncio and h11 need no check, {name} was loaded")

    assert server_stack_problem(loop="asyncio", http="h11", load=nothing) is None


MALFORMED = {
    "NUL in a header value": b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n",
    "space in the target": b"GET /health z HTTP/1.1\r\nHost: x\r\n\r\n",
    "two different lengths": b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
    # the head is complete, so the app is called before the body's error shows: a route without storage
    "a chunk size that is not hex": b"POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
}


def _status(port: int, raw: bytes) -> int:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(raw)
        data = b""
        while b"\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    return int(data.split()[1])


@pytest.mark.parametrize("stack", SERVER_STACKS)
def test_requests_the_parser_refuses_get_400_on_both_stacks(
    live_server: Callable[..., LiveServer], fake_llm: FakeLLM, stack: dict[str, str]
) -> None:
    """Requests neither parser accepts are a 400 from uvicorn before the app sees them, and the server
    goes on serving. (Where the parsers differ, e.g. a request with both Content-Length and
    Transfer-Encoding, is in decision 0012; no client of ours sends such requests.)"""
    server = live_server(**stack)
    for name, raw in MALFORMED.items():
        assert _status(server.port, raw) == 400, name
    assert httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200
    assert fake_llm.requests == []
