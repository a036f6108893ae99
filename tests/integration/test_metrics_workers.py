"""``careerwise serve --workers 2``, for real: two worker processes behind one port. One scrape of
``/metrics`` gives the totals of both (prometheus_client's multiprocess mode, set up by the serve
parent), while ``/readyz`` stays per process and names the pid that answered."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import free_port, serve_env
from tests.fakes.fake_llm import FakeLLM

READYZ = "/readyz"


@pytest.fixture
def two_workers(tmp_path: Path, corpus_db: Path, fake_llm: FakeLLM) -> Iterator[tuple[str, Path]]:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    shutil.copy(corpus_db, data_dir / "careerwise.db")
    stale = data_dir / "metrics"
    stale.mkdir()
    (stale / "counter_99999.db").write_bytes(b"left by an earlier run")  # the parent must clear it
    port = free_port()
    env = serve_env(data_dir, fake_llm.base_url, CAREERWISE_READYZ_TIMEOUT="60")
    command = [sys.executable, "-m", "careerwise.cli", "serve", "--workers", "2", "--port", str(port)]
    log_path = tmp_path / "serve.log"  # a file, not a pipe: a pipe nobody reads would block the server
    log_file = log_path.open("wb")
    proc = subprocess.Popen(
        command, env=env, start_new_session=True, stdout=log_file, stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240  # two workers each load the embedder and the index
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"serve exited: {log_path.read_text(errors='replace')[-3000:]}")
            try:
                if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass  # not listening yet
            if time.monotonic() > deadline:
                raise RuntimeError(f"serve did not start: {log_path.read_text(errors='replace')[-3000:]}")
            time.sleep(0.2)
        yield url, stale
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the group we started: the parent and its two workers
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        log_file.close()


def requests_counted(body: str, route: str) -> float:
    total = 0.0
    for family in text_string_to_metric_families(body):
        for s in family.samples:
            if s.name == "careerwise_http_requests_total" and s.labels.get("route") == route:
                total += s.value
    return total


@pytest.mark.timeout(900)  # two processes load the embedder and the index on a shared machine
def test_one_scrape_adds_up_every_worker(two_workers: tuple[str, Path]) -> None:
    url, metrics_dir = two_workers
    assert not (metrics_dir / "counter_99999.db").exists()  # cleaned at start
    answered: Counter[int] = Counter()
    # a new connection per request, so that either worker may accept it; until both have answered
    for _ in range(400):
        r = httpx.get(url + READYZ, timeout=120)
        # a worker's first search may overrun the probe's deadline on a loaded machine: 503 then, which
        # is its own business; what matters here is which process answered, and that it is counted
        assert r.status_code in (200, 503), r.text
        answered[r.json()["pid"]] += 1
        if len(answered) == 2:
            break
    assert len(answered) == 2, f"only one worker answered: {answered}"
    scrape = httpx.get(url + "/metrics", timeout=30)
    assert scrape.status_code == 200
    # every /readyz call above, whichever worker answered it, in one scrape from one worker
    assert requests_counted(scrape.text, READYZ) == sum(answered.values())
    assert len(list(metrics_dir.glob("*.db"))) >= 2  # each worker wrote its own files
