"""A real local peer for the remote provider: ``python -m llama_cpp.server`` with the packaged model.

It shows the two quirks our code is built around: every streamed tool-call delta repeats the id and the
function name (the accumulator must still produce ONE call), and an assistant message with ``content: null``
plus ``tool_calls`` is rejected with a 500 while ``""`` (what ChatMessage sends) is accepted.

The server's default (GGUF-template) chat handler only emits structured ``tool_calls`` when ``tool_choice``
names the function (it then constrains the output with a grammar); with ``"auto"`` the model's bare JSON
arrives as plain content. So the first request forces the tool.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from careerwise.config import Settings
from careerwise.engine import TurnRequest
from careerwise.evals import answers as ev
from careerwise.events import DeltaEvent, DoneEvent, ToolCallEvent
from careerwise.llm.accumulator import ToolCallAccumulator
from careerwise.llm.local import ensure_model_file
from careerwise.llm.openai_provider import OpenAIProvider
from careerwise.llm.profile import profile_of
from careerwise.llm.types import ChatMessage, CompletionRequest, StreamChunk, ToolCallDelta, ToolSpec
from careerwise.services import Services
from tests.conftest import LiveServer, client, parse_sse, ready

pytestmark = pytest.mark.local_model

SEARCH = ToolSpec(
    name="searchKnowledge",
    description="Search Summer's career knowledge base for her views, cases and figures.",
    parameters={
        "type": "object",
        "properties": {"query": {"type": "string", "description": "search query"}},
        "required": ["query"],
    },
)
STARTUP_TIMEOUT = 60.0


class ForcingProvider(OpenAIProvider):
    """OpenAIProvider that names the function in ``tool_choice`` (our request type only has auto/none)."""

    def __init__(self, *, force: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._force = force

    def _body(self, request: CompletionRequest) -> dict[str, Any]:
        body = super()._body(request)
        if request.tools:
            body["tool_choice"] = {"type": "function", "function": {"name": self._force}}
        return body


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    model = ensure_model_file(Settings().data_dir / "models")
    port = _free_port()
    log_path = tmp_path_factory.mktemp("llama-server") / "server.log"
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    cmd = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(model), "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048",
    ]  # fmt: skip
    with log_path.open("wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            if proc.poll() is not None:
                pytest.fail(
                    f"llama_cpp.server exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}"
                )
            try:
                if httpx.get(f"{base_url}/models", timeout=1.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass  # not listening yet
            if time.monotonic() > deadline:
                pytest.fail(
                    f"llama_cpp.server not ready in {STARTUP_TIMEOUT}s:\n{log_path.read_text()[-3000:]}"
                )
            time.sleep(0.3)
        yield base_url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def _provider(base_url: str, force: str | None = None) -> OpenAIProvider:
    kwargs: dict[str, Any] = {
        "base_url": base_url,
        "api_key": "not-needed",
        "model": "local",
        "connect_timeout": 5.0,
        "read_timeout": 60.0,
    }
    return ForcingProvider(force=force, **kwargs) if force else OpenAIProvider(**kwargs)


async def test_repeated_deltas_make_one_call_and_the_follow_up_is_accepted(server: str) -> None:
    messages = [
        ChatMessage("system", "You are Summer, a career coach. Use searchKnowledge for Summer's views."),
        ChatMessage("user", "怎麼談薪水？請查 Summer 的知識庫"),
    ]
    forced = _provider(server, force=SEARCH.name)
    deltas: list[ToolCallDelta] = []
    chunks: list[StreamChunk] = []
    try:
        async for chunk in forced.stream(CompletionRequest(messages=messages, tools=[SEARCH], max_tokens=64)):
            chunks.append(chunk)
            deltas.extend(chunk.tool_deltas)
    finally:
        await forced.aclose()

    # The quirk: more than one delta, and every one of them carries the same id and the full name.
    assert len(deltas) > 1, chunks
    assert len({d.id for d in deltas}) == 1 and deltas[0].id
    assert all(d.name == SEARCH.name for d in deltas)
    assert any(c.finish_reason == "tool_calls" for c in chunks)

    acc = ToolCallAccumulator()
    for delta in deltas:
        acc.add(delta)
    calls = acc.calls()
    assert len(calls) == 1
    (call,) = calls
    assert call.name == SEARCH.name  # not "searchKnowledgesearchKnowledge..."
    assert call.id == deltas[0].id
    args = json.loads(call.arguments)
    assert isinstance(args, dict) and isinstance(args.get("query"), str)

    # Round 2: the assistant's call (content "" on the wire) and the tool's answer.
    assistant = ChatMessage("assistant", tool_calls=(call,))
    assert assistant.to_openai()["content"] == ""
    follow_up = [
        *messages,
        assistant,
        ChatMessage("tool", "[1] 先查市場行情，再提出有根據的數字。", tool_call_id=call.id),
    ]
    plain = _provider(server)
    texts: list[str] = []
    finish: str | None = None
    try:
        async for chunk in plain.stream(CompletionRequest(messages=follow_up, tools=[SEARCH], max_tokens=32)):
            if chunk.text:
                texts.append(chunk.text)
            finish = chunk.finish_reason or finish
    finally:
        await plain.aclose()
    assert finish in ("stop", "length", "tool_calls")
    assert texts or finish == "tool_calls"

    # The other quirk, which is why ChatMessage.to_openai never sends null with tool calls.
    wire = [m.to_openai() for m in follow_up]
    wire[2]["content"] = None
    async with httpx.AsyncClient(timeout=60.0) as client:
        response = await client.post(
            f"{server}/chat/completions", json={"model": "local", "messages": wire, "max_tokens": 4}
        )
    assert response.status_code == 500


async def test_the_engine_through_the_server_searches_and_answers_clean_counted_text(
    server: str, make_services: Callable[..., Services]
) -> None:
    """The same turn as on the embedded model, through llama.cpp's server: the provider finds a llama.cpp
    server and sends the call-or-text grammar, the model searches for a question one article plainly
    answers (greedy decoding), the answer is Traditional Chinese without machinery, and usage (which the
    server does not report) is counted as an estimate."""
    services = make_services(
        llm_base_url=server,
        llm_model="local",
        llm_read_timeout=120.0,
        llm_slow=True,
        phase1_temperature=0.0,
        phase3_temperature=0.0,
        phase1_max_tokens=96,
        phase3_max_tokens=96,
        turn_deadline=200.0,
        zh_variant_conversion=True,  # the tests turn it off by default (tests/conftest.py)
    )
    await ready(services)
    detect = ev.simplified_detector()
    events: list[Any] = [
        e
        async for e in services.engine.run(
            TurnRequest(message="Summer 的「探、錨、換」談薪水三步驟是什麼？", channel="cli")
        )
    ]
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.status == "ok", events[-3:]
    assert profile_of(services.provider).tool_calling == "constrained"
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert [c.name for c in calls] == ["searchKnowledge"], events
    shown = "".join(e.text for e in events if isinstance(e, DeltaEvent))
    assert shown.strip()
    assert ev.find_leaks(shown) == [], shown
    assert detect(shown) == [], shown
    assert done.usage["prompt_tokens"] > 0 and done.usage["completion_tokens"] > 0
    assert done.usage.get("estimated") == 1


def test_the_server_is_told_apart_and_a_turn_deadline_ends_with_error_then_done(
    server: str, live_server: Callable[..., LiveServer]
) -> None:
    """Over HTTP, behind the real server: its concurrency is not declared, so the provider asks it and
    finds a llama.cpp server (one request at a time); a turn whose generation cannot finish within a
    deadline under 10 s ends with ``error`` then ``done`` on the SSE stream (issue #24). The order is
    asserted, not the time."""
    app = live_server(
        llm_base_url=server,
        llm_model="local",
        llm_read_timeout=120.0,
        llm_concurrency=None,  # the tests declare 3 for the fake (tests/conftest.py): ask this server
        llm_slow=True,
        phase1_max_tokens=512,
        phase3_max_tokens=512,
        turn_deadline=8.0,
    )
    question = "請詳細說明從會計轉職成資料分析師的完整計畫，包含每個月要學的技能、作品集與面試準備。"
    with client(app) as c, c.stream("POST", "/api/chat", json={"message": question}) as r:
        assert r.status_code == 200
        events = parse_sse(r.read().decode())
    kinds = [name for name, _ in events]
    assert kinds[-2:] == ["error", "done"], kinds
    assert events[-2][1]["code"] == "llm_timeout" and events[-1][1]["status"] == "error"
    assert profile_of(app.services.provider).concurrency == 1
