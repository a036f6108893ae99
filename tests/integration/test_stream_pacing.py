"""Issue #10 stream pacing over real HTTP: the provider against the fake server, and /api/chat on uvicorn.

No assertion here reads a clock: the first text is shown to be unheld by the order and the size of the
events (the guard's pieces arrive as the provider sent them, before any paced read), and a paced
stream by having fewer, larger deltas carrying the same text.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

import openai
import pytest

from careerwise.errors import LLMTimeoutError
from careerwise.llm.openai_provider import OpenAIProvider
from careerwise.llm.paced_reads import flow_control
from careerwise.llm.types import ChatMessage, CompletionRequest, StreamChunk, StreamPacing, ToolSpec
from careerwise.loadwatch import StreamPace
from tests.conftest import LiveServer, client, parse_sse
from tests.fakes.fake_llm import Call, FakeLLM, stall, text, tool_calls
from tests.integration.test_disconnect import _stored, _wait_for

ANSWER = "一二三四五六七八九十" * 4  # 40 chunks of 2 characters
PIECES = [ANSWER[i : i + 2] for i in range(0, len(ANSWER), 2)]
SEARCH = ToolSpec(
    "searchKnowledge", "search", {"type": "object", "properties": {"query": {"type": "string"}}}
)


def _provider(fake: FakeLLM, *, pace: float | StreamPace, http_client: Any = "aiohttp") -> OpenAIProvider:
    return OpenAIProvider(
        base_url=fake.base_url,
        api_key="x",
        model="fake-model",
        connect_timeout=5.0,
        read_timeout=10.0,
        http_client=http_client,
        stream_pace=pace,
    )


async def _collect(
    provider: OpenAIProvider, pacing: StreamPacing | None, *, activate_after: int | None
) -> tuple[list[StreamChunk], list[int]]:
    """Every chunk, and the provider's paced-wait count when each one arrived; ``activate_after`` text
    chunks in, the consumer says text is showing (as the flow does once the guard releases)."""
    request = CompletionRequest(
        messages=[ChatMessage("user", "面試要怎麼準備")], tools=[SEARCH], pacing=pacing
    )
    chunks: list[StreamChunk] = []
    waits: list[int] = []
    texts = 0
    try:
        async for chunk in provider.stream(request):
            chunks.append(chunk)
            waits.append(pacing.waits if pacing else 0)
            texts += bool(chunk.text)
            if pacing is not None and activate_after is not None and texts >= activate_after:
                pacing.activate()
    finally:
        await provider.aclose()
    return chunks, waits


def _text(chunks: list[StreamChunk]) -> str:
    return "".join(c.text or "" for c in chunks)


# --------------------------------------------------------------------------- the provider


async def test_until_activated_every_chunk_comes_as_the_provider_sent_it(fake_llm: FakeLLM) -> None:
    fake_llm.script(text(ANSWER, chunk_size=2))
    chunks, waits = await _collect(_provider(fake_llm, pace=0.5), StreamPacing(), activate_after=None)
    assert [c.text for c in chunks if c.text] == PIECES
    assert chunks[-2].finish_reason == "stop" and chunks[-1].usage is not None
    assert set(waits) == {0}


async def test_once_activated_reads_are_paced_and_merged_and_nothing_is_lost(fake_llm: FakeLLM) -> None:
    fake_llm.script(text(ANSWER, chunk_size=2, delay=0.005))
    pacing = StreamPacing()
    chunks, waits = await _collect(_provider(fake_llm, pace=0.3), pacing, activate_after=3)
    texts = [c.text for c in chunks if c.text]
    # the first three pieces (what the guard would release) came one by one, before any paced wait
    assert texts[:3] == PIECES[:3] and waits[:3] == [0, 0, 0]
    assert _text(chunks) == ANSWER
    assert len(texts) < len(PIECES) // 2 and pacing.waits >= 1
    assert [c.finish_reason for c in chunks if c.finish_reason] == ["stop"]
    assert chunks[-1].usage is not None  # order kept: the usage chunk is still last


async def test_a_request_without_pacing_and_the_httpx_client_are_never_paced(fake_llm: FakeLLM) -> None:
    fake_llm.script(text(ANSWER, chunk_size=2), text(ANSWER, chunk_size=2, delay=0.002))
    chunks, _ = await _collect(_provider(fake_llm, pace=0.5), None, activate_after=None)
    assert [c.text for c in chunks if c.text] == PIECES
    pacing = StreamPacing()
    chunks, _ = await _collect(_provider(fake_llm, pace=0.5, http_client="httpx"), pacing, activate_after=1)
    assert [c.text for c in chunks if c.text] == PIECES and pacing.waits == 0


async def test_tool_call_deltas_after_text_keep_their_order_when_paced(fake_llm: FakeLLM) -> None:
    fake_llm.script(
        tool_calls(
            Call("searchKnowledge", {"query": "薪水談判技巧"}),
            text_before="我先查一下資料",
            split=4,
            delay=0.005,
        )
    )
    pacing = StreamPacing()
    chunks, _ = await _collect(_provider(fake_llm, pace=0.2), pacing, activate_after=1)
    assert _text(chunks) == "我先查一下資料"
    deltas = [d for c in chunks for d in c.tool_deltas]
    assert deltas[0].name == "searchKnowledge" and deltas[0].id
    assert "".join(d.arguments or "" for d in deltas) == '{"query": "薪水談判技巧"}'
    last_text = max(i for i, c in enumerate(chunks) if c.text)
    first_call = min(i for i, c in enumerate(chunks) if c.tool_deltas)
    assert last_text < first_call
    assert [c.finish_reason for c in chunks if c.finish_reason] == ["tool_calls"] and pacing.waits >= 1


# --------------------------------------------------------------------------- /api/chat


def _chat(server: LiveServer, message: str = "面試要怎麼準備") -> list[tuple[str, dict[str, Any]]]:
    with client(server) as c:
        r = c.post("/api/chat", json={"message": message})
    assert r.status_code == 200
    return parse_sse(r.text)


def _deltas(events: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [str(d["text"]) for n, d in events if n == "delta" and not d.get("notice")]


@pytest.fixture
def paced_server(live_server: Callable[..., LiveServer]) -> Callable[[int], LiveServer]:
    # coalescing-when-behind off: a stalled server thread must not merge the frames these tests count
    return lambda pace_ms: live_server(stream_pace_ms=pace_ms, sse_coalesce_behind_ms=0)


def test_paced_stream_has_the_same_text_in_fewer_deltas_and_the_first_text_unheld(
    fake_llm: FakeLLM, paced_server: Callable[[int], LiveServer]
) -> None:
    fake_llm.script(text(ANSWER, chunk_size=2, delay=0.005), text(ANSWER, chunk_size=2, delay=0.005))
    plain = _deltas(_chat(paced_server(0)))
    events = _chat(paced_server(300))
    paced = _deltas(events)
    assert plain == PIECES  # pacing off: one delta per provider chunk, as before
    assert "".join(paced) == ANSWER
    assert len(paced) < len(plain) // 2
    # the guard's release (3 chunks) reaches the client piece by piece, before any merged (paced) delta
    assert paced[:3] == PIECES[:3]
    names = [n for n, _ in events]
    assert names[0] == "route" and names[-1] == "done" and dict(events)["done"]["status"] == "ok"


def test_tool_calls_work_with_pacing_on(fake_llm: FakeLLM, paced_server: Callable[[int], LiveServer]) -> None:
    fake_llm.script(
        tool_calls(
            Call("searchKnowledge", {"query": "薪水談判技巧"}), text_before="讓我查一下資料喔", delay=0.005
        ),
        text(ANSWER, chunk_size=2, delay=0.005),
    )
    events = _chat(paced_server(300), "怎麼談薪水？")
    names = [n for n, _ in events]
    assert names.index("tool_call") < names.index("tool_result")
    call, result = dict(events)["tool_call"], dict(events)["tool_result"]
    assert call["requested_arguments"] == {"query": "薪水談判技巧"} and call["after_text"] is True
    assert result["ok"] and result["returned"] > 0
    phase3 = [str(d["text"]) for n, d in events if n == "delta" and d.get("phase") == 3]
    assert "".join(phase3) == ANSWER and len(phase3) < len(PIECES) // 2
    assert dict(events)["done"]["path"] == "A" and dict(events)["done"]["status"] == "ok"
    # phase 3 was asked with the tool's result: the paced phase 1 lost none of the call
    assert fake_llm.requests[1]["messages"][-1]["role"] == "tool"


def test_a_disconnect_during_a_paced_wait_closes_the_upstream(
    fake_llm: FakeLLM, paced_server: Callable[[int], LiveServer]
) -> None:
    # the provider finishes its script well inside one pace (40 chunks, 20 ms apart): the upstream is
    # closed early only if the paced wait is cut short by the disconnect, not served to its end
    fake_llm.script(text(ANSWER, chunk_size=2, delay=0.02))
    server = paced_server(1000)
    with client(server) as c, c.stream("POST", "/api/chat", json={"message": "面試要怎麼準備"}) as r:
        for line in r.iter_lines():
            if line.startswith("event: delta"):
                break  # leave once the first text is here: the provider is in its first paced wait
    assert _wait_for(lambda: fake_llm.closed_early == 1)
    assert _wait_for(lambda: _stored(server)[1] == ["cancelled"])
    messages, _ = _stored(server)
    partial = messages[-1][2]
    assert messages[-1][:2] == ("assistant", "cancelled")
    assert partial and ANSWER.startswith(partial) and len(partial) < len(ANSWER)
    assert fake_llm.open_streams == 0


async def test_the_read_deadline_still_holds_between_paced_reads(fake_llm: FakeLLM) -> None:
    # the provider goes silent after the first text: paced or not, that is a timeout, not a hang
    fake_llm.script(stall(30.0, after_chunks=PIECES[:5]))
    provider = OpenAIProvider(
        base_url=fake_llm.base_url,
        api_key="x",
        model="fake-model",
        connect_timeout=5.0,
        read_timeout=0.5,
        stream_pace=0.2,
    )
    pacing = StreamPacing()
    with pytest.raises(LLMTimeoutError):
        await _collect(provider, pacing, activate_after=1)
    assert pacing.waits >= 1


async def test_the_sdk_aiohttp_connection_can_be_paused(fake_llm: FakeLLM) -> None:
    """The paced wait pauses the socket reads of the SDK's aiohttp transport (found through its
    private layout): an SDK upgrade that moves it must fail here, not silently cost the saving."""
    fake_llm.script(text(ANSWER, chunk_size=2, first_token_delay=0.2, delay=0.01))  # still sending
    sdk = openai.AsyncOpenAI(
        base_url=fake_llm.base_url, api_key="x", max_retries=0, http_client=openai.DefaultAioHttpClient()
    )
    try:
        async with sdk.chat.completions.with_streaming_response.create(
            stream=True, model="fake-model", messages=[{"role": "user", "content": "hi"}]
        ) as response:
            assert flow_control(response.http_response) is not None
            async for _ in response.http_response.aiter_bytes():
                pass
    finally:
        await sdk.close()


# --------------------------------------------------------------------------- adaptive pace (the amendment)
# The loop's lag is given to the pace directly (``observe``, no probe): no assertion reads a clock.


def _behind(base: float, cap: float) -> StreamPace:
    pace = StreamPace(base=base, cap=cap)
    pace.observe(5.0, now=0.0)  # five seconds behind: far past the threshold where the cap applies
    assert pace.current() == cap
    return pace


async def test_an_adaptive_pace_reads_at_its_cap_while_behind_and_at_the_base_after(
    fake_llm: FakeLLM,
) -> None:
    fake_llm.script(text(ANSWER, chunk_size=2, delay=0.005), text(ANSWER, chunk_size=2, delay=0.005))
    pace = _behind(0.05, 0.3)
    behind = StreamPacing()
    chunks, waits = await _collect(_provider(fake_llm, pace=pace), behind, activate_after=3)
    texts = [c.text for c in chunks if c.text]
    assert texts[:3] == PIECES[:3] and waits[:3] == [0, 0, 0]  # the first text is not held
    assert _text(chunks) == ANSWER and chunks[-1].usage is not None  # the same text, order kept
    assert behind.waits >= 1 and behind.last_pace == 0.3
    pace.observe(0.0, now=60.0)  # the backlog is gone: the estimate has decayed to nothing
    assert pace.current() == 0.05
    calm = StreamPacing()
    chunks, _ = await _collect(_provider(fake_llm, pace=pace), calm, activate_after=3)
    assert _text(chunks) == ANSWER and calm.waits >= 1 and calm.last_pace == 0.05


async def test_a_cancel_during_an_adaptive_wait_closes_the_upstream(fake_llm: FakeLLM) -> None:
    # the provider's whole reply (40 chunks 20 ms apart) fits well inside one capped wait: the upstream
    # is closed early only if the cancellation cuts the wait short and closes the response
    fake_llm.script(text(ANSWER, chunk_size=2, delay=0.02))
    pacing = StreamPacing()
    got: list[StreamChunk] = []
    task = asyncio.create_task(
        _collect_into(_provider(fake_llm, pace=_behind(0.05, 30.0)), pacing, got), name="paced-consumer"
    )
    assert await _until(lambda: pacing.waits >= 1)  # the first text is in, the provider is waiting
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _until(lambda: fake_llm.closed_early == 1 and fake_llm.open_streams == 0)
    assert got and ANSWER.startswith(_text(got)) and len(_text(got)) < len(ANSWER)
    assert pacing.last_pace == 30.0


async def _collect_into(provider: OpenAIProvider, pacing: StreamPacing, got: list[StreamChunk]) -> None:
    request = CompletionRequest(messages=[ChatMessage("user", "面試要怎麼準備")], pacing=pacing)
    try:
        async for chunk in provider.stream(request):
            got.append(chunk)
            if chunk.text:
                pacing.activate()
    finally:
        await provider.aclose()


async def _until(predicate: Callable[[], bool]) -> bool:
    """Polls for an outcome (another thread's, the fake's); the bound only stops a broken test hanging."""
    for _ in range(1000):  # 20 s at most
        if predicate():
            return True
        await asyncio.sleep(0.02)
    return predicate()


def _gauge(metrics: str, name: str) -> float:
    found = re.search(rf"^{name} (\S+)$", metrics, re.MULTILINE)
    assert found, f"{name} is not in /metrics"
    return float(found.group(1))


def test_with_adaptive_pacing_on_a_chat_streams_the_same_text_and_shows_its_pace(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    fake_llm.script(text(ANSWER, chunk_size=2, delay=0.005))
    server = live_server(stream_pace_ms=50, stream_pace_max_ms=400, sse_coalesce_behind_ms=0)
    assert server.services.providers.stream_pace.adaptive
    events = _chat(server)
    deltas = _deltas(events)
    assert "".join(deltas) == ANSWER and deltas[:3] == PIECES[:3]
    assert dict(events)["done"]["status"] == "ok"
    with client(server) as c:
        metrics = c.get("/metrics").text
    assert 0.05 <= _gauge(metrics, "careerwise_stream_pace_seconds") <= 0.4
    assert _gauge(metrics, "careerwise_event_loop_lag_seconds") >= 0.0


def test_with_adaptive_pacing_off_the_pace_gauge_is_the_fixed_pace(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    server = live_server(stream_pace_ms=100, stream_pace_max_ms=0)
    pace = server.services.providers.stream_pace
    assert not pace.adaptive and pace.current() == 0.1
    with client(server) as c:
        metrics = c.get("/metrics").text
    assert _gauge(metrics, "careerwise_stream_pace_seconds") == 0.1
