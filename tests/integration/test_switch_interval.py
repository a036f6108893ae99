"""CAREERWISE_GIL_SWITCH_INTERVAL_MS: while the app serves, a thread waiting for the GIL (the database's
reader and writer threads, back from a round trip) gets it after at most this long; CPython's own value
comes back at shutdown, and 0 leaves it alone. The live server runs in this process, so the interval
read here is the server's."""

from __future__ import annotations

import sys
from collections.abc import Callable

import httpx

from tests.conftest import LiveServer
from tests.fakes.fake_llm import FakeLLM, text


def test_the_interval_applies_while_serving_and_is_restored_at_shutdown(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    before = sys.getswitchinterval()
    server = live_server(gil_switch_interval_ms=0.5)
    assert sys.getswitchinterval() == 0.0005
    fake_llm.script(text("先做功課。"))
    with httpx.Client(base_url=server.url, timeout=30) as c:
        assert c.post("/api/chat", json={"message": "怎麼談薪水？", "mode": "full"}).status_code == 200
    server.stop()
    assert sys.getswitchinterval() == before


def test_zero_leaves_cpythons_interval(live_server: Callable[..., LiveServer]) -> None:
    before = sys.getswitchinterval()
    live_server(gil_switch_interval_ms=0)
    assert sys.getswitchinterval() == before
