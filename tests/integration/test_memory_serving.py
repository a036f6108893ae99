"""The serving process's memory knobs on a real server, and the heavy modules a default start leaves
unloaded (the local model's llama.cpp above all: it must not load when a remote LLM is configured)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.conftest import LiveServer, client, parse_sse
from tests.fakes.fake_llm import FakeLLM, text
from tests.integration.test_metrics import scrape, value


def test_the_server_trims_after_start_up_and_again_once_idle(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    server = live_server(memory_trim_idle_seconds=0.05)
    at_start = scrape(server)
    # the start-up trim ran before the server answered anything
    assert value(at_start, "careerwise_memory_trims_total", result="ok") == 1
    fake_llm.script(text("先列出你的強項。"))
    with client(server) as c:
        r = c.post("/api/chat", json={"message": "面試怎麼準備？"})
    assert r.status_code == 200 and any(n == "done" for n, _ in parse_sse(r.text))
    deadline = time.monotonic() + 30  # a bound for a stuck server, not a speed assert
    runs = 1.0
    while runs < 2 and time.monotonic() < deadline:
        time.sleep(0.2)  # each scrape is a request of its own: the idle wait follows it
        m = scrape(server)
        runs = value(m, "careerwise_memory_trims_total", result="ok") + value(
            m, "careerwise_memory_trims_total", result="skipped"
        )
    assert runs >= 2
    assert value(m, "careerwise_memory_trims_total", result="failed") == 0


def test_zero_turns_the_trim_off(live_server: Callable[..., LiveServer]) -> None:
    server = live_server(memory_trim_idle_seconds=0)
    assert value(scrape(server), "careerwise_memory_trims_total") == 0


LAZY = ("llama_cpp", "linebot", "jieba", "matplotlib", "PIL", "psycopg", "asyncpg")

_START = """
import json, sys
from careerwise.app import create_app
from careerwise.config import get_settings
from careerwise.services import build_services
settings = get_settings()
create_app(settings)
build_services(settings)
print(json.dumps(sorted(m for m in {lazy!r} if m in sys.modules)))
"""


def test_a_default_start_does_not_load_what_it_does_not_use(tmp_path: Path, fake_llm: FakeLLM) -> None:
    env = {
        **os.environ,
        "CAREERWISE_DATA_DIR": str(tmp_path),
        "CAREERWISE_LLM_BASE_URL": fake_llm.base_url,
        "CAREERWISE_ENVIRONMENT": "development",
        "CAREERWISE_INGEST_ON_START": "false",
    }
    out = subprocess.run(
        [sys.executable, "-c", _START.format(lazy=LAZY)],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=True,
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
