"""Issue #10: the OpenAI-compatible provider reads the streamed body itself (no pydantic model per chunk).

The decoder must give the same events however the network splits the bytes; the chunk parser must turn
every shape a provider sends into the same :class:`StreamChunk` the SDK path gave, and a broken stream
(bad JSON, a wrong shape, an error event) into a logged, retryable provider error that the LLM-call
record counts, never a crash.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterator
from typing import Literal

import pytest

from careerwise.errors import LLMTimeoutError, LLMUnavailableError
from careerwise.llm.accumulator import ToolCallAccumulator
from careerwise.llm.openai_provider import OpenAIProvider
from careerwise.llm.sse import SSEDecoder, parse_chunk
from careerwise.llm.types import ChatMessage, CompletionRequest, StreamChunk, ToolCallDelta, Usage
from careerwise.tracing.llm_calls import LLMCall, ObservedProvider
from tests.fakes.fake_llm import FakeLLM, connection_reset, raw, stall


def _chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    body = {"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}
    body["choices"][0]["finish_reason"] = finish  # type: ignore[index]
    return b"data: " + json.dumps(body, ensure_ascii=False).encode() + b"\n\n"


STREAM = (
    b": a comment line\n\n"
    + _chunk({"role": "assistant", "content": None})
    + _chunk({"content": "面試"})
    + _chunk({"content": "前先"})
    + b"event: message\ndata: "
    + json.dumps({"choices": [{"delta": {"content": "研究"}}]}).encode()
    + b"\n\n"
    + _chunk({}, "stop")
    + b'data: {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}}\n\n'
    + b"data: [DONE]\n\n"
)


def _events(pieces: Iterator[bytes]) -> list[tuple[bytes, bytes]]:
    decoder = SSEDecoder()
    out: list[tuple[bytes, bytes]] = []
    for piece in pieces:
        out += decoder.feed(piece)
    return out


def _split(data: bytes, size: int) -> Iterator[bytes]:
    return (data[i : i + size] for i in range(0, len(data), size))


def test_the_events_are_the_same_however_the_bytes_are_split() -> None:
    whole = _events(iter([STREAM]))
    assert [e for e, _ in whole] == [b"", b"", b"", b"message", b"", b"", b""]
    assert whole[-1] == (b"", b"[DONE]")
    for size in (1, 2, 3, 7, 64):
        assert _events(_split(STREAM, size)) == whole, size


@pytest.mark.parametrize("newline", [b"\r\n", b"\r"])
def test_crlf_and_cr_line_ends_even_split_between_reads(newline: bytes) -> None:
    data = STREAM.replace(b"\n", newline)
    expected = _events(iter([STREAM]))
    assert _events(iter([data])) == expected
    for size in (1, 2, 5):
        assert _events(_split(data, size)) == expected, size


def test_several_data_lines_join_and_a_partial_event_waits() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"a":\ndata: 1}\n') == []  # no blank line yet: the event is open
    assert decoder.feed(b"\n") == [(b"", b'{"a":\n1}')]
    assert decoder.feed(b"data:no-space\n\n") == [(b"", b"no-space")]


def test_chunks_parse_to_the_provider_neutral_shape() -> None:
    parsed = [parse_chunk(e, d) for e, d in _events(iter([STREAM]))[:-1]]
    assert parsed == [
        None,  # the role-only first chunk carries nothing
        StreamChunk(text="面試"),
        StreamChunk(text="前先"),
        StreamChunk(text="研究"),
        StreamChunk(finish_reason="stop"),
        StreamChunk(usage=Usage(prompt_tokens=7, completion_tokens=3)),
    ]


def test_tool_call_deltas_across_chunks_join_into_one_call() -> None:
    pieces = [
        {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "search"}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"query": '}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": '"面試"}'}}]},
    ]
    data = b"".join(_chunk(p) for p in pieces) + _chunk({}, "tool_calls")
    chunks = [parse_chunk(e, d) for e, d in _events(_split(data, 5))]
    assert chunks[0] == StreamChunk(tool_deltas=(ToolCallDelta(index=0, id="call_1", name="search"),))
    acc = ToolCallAccumulator()
    for c in chunks:
        assert c is not None
        for d in c.tool_deltas:
            acc.add(d)
    [call] = acc.calls()
    assert (call.id, call.name, json.loads(call.arguments)) == ("call_1", "search", {"query": "面試"})
    assert chunks[-1] == StreamChunk(finish_reason="tool_calls")


@pytest.mark.parametrize(
    "payload",
    [
        b'{"choices": {"delta": {}}}',  # choices not a list
        b'{"choices": [{"delta": {"content": 42}}]}',  # content not text
        b'{"choices": [{"delta": {"tool_calls": [7]}}]}',  # a tool call that is not an object
        b'{"usage": "lots"}',
        b"[1, 2]",
    ],
)
def test_a_chunk_of_the_wrong_shape_is_a_logged_provider_error(
    payload: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING), pytest.raises(LLMUnavailableError) as info:
        parse_chunk(b"", payload, "prov")
    assert info.value.retryable
    assert "malformed chunk" in caplog.text


def test_an_error_event_is_a_provider_error() -> None:
    with pytest.raises(LLMUnavailableError, match="overloaded"):
        parse_chunk(b"", b'{"error": {"message": "overloaded", "type": "server_error"}}')
    with pytest.raises(LLMUnavailableError):
        parse_chunk(b"error", b'{"detail": "boom"}')


# ---------------------------------------------------------------- through the provider, over real HTTP

REQUEST = CompletionRequest(messages=[ChatMessage(role="user", content="面試怎麼準備")])


@pytest.fixture(params=["aiohttp", "httpx"])
def http_client(request: pytest.FixtureRequest) -> str:
    """Both of the SDK's transports (CAREERWISE_LLM_HTTP_CLIENT) must behave the same."""
    return str(request.param)


async def _collect(
    fake: FakeLLM | str, calls: list[LLMCall], http_client: Literal["aiohttp", "httpx"]
) -> list[StreamChunk]:
    inner = OpenAIProvider(
        base_url=fake if isinstance(fake, str) else fake.base_url,
        api_key="k",
        model="fake",
        connect_timeout=2,
        read_timeout=2,
        http_client=http_client,
    )
    provider = ObservedProvider(inner, calls.append)
    try:
        return [c async for c in provider.stream(REQUEST)]
    finally:
        await inner.aclose()


async def test_the_stream_stops_at_done_whatever_follows(http_client: Literal["aiohttp", "httpx"]) -> None:
    calls: list[LLMCall] = []
    with FakeLLM() as fake:
        fake.script(raw([STREAM[:40], STREAM[40:] + b"data: {not json after the end\n\n"]))
        chunks = await _collect(fake, calls, http_client)
    assert "".join(c.text or "" for c in chunks) == "面試前先研究"
    assert [c.finish_reason for c in chunks if c.finish_reason] == ["stop"]
    assert calls[0].ok and calls[0].prompt_tokens == 7 and calls[0].completion_tokens == 3


async def test_malformed_json_mid_stream_is_logged_counted_and_not_a_crash(
    caplog: pytest.LogCaptureFixture, http_client: Literal["aiohttp", "httpx"]
) -> None:
    calls: list[LLMCall] = []
    with FakeLLM() as fake, caplog.at_level(logging.WARNING):
        fake.script(raw([_chunk({"content": "面"}), b'data: {"choices": [{"delta": {"content": "x"\n\n']))
        with pytest.raises(LLMUnavailableError, match="malformed chunk"):
            await _collect(fake, calls, http_client)
    assert "malformed chunk" in caplog.text
    assert [c.error for c in calls] == ["llm_unavailable"]  # the call record /metrics counts


async def test_an_error_event_mid_stream_ends_the_call_as_unavailable(
    http_client: Literal["aiohttp", "httpx"],
) -> None:
    calls: list[LLMCall] = []
    with FakeLLM() as fake:
        fake.script(raw([_chunk({"content": "面"}), b'data: {"error": {"message": "model overloaded"}}\n\n']))
        with pytest.raises(LLMUnavailableError, match="model overloaded"):
            await _collect(fake, calls, http_client)
    assert [c.error for c in calls] == ["llm_unavailable"]


async def test_errors_are_the_same_kind_on_both_transports(http_client: Literal["aiohttp", "httpx"]) -> None:
    """aiohttp's transport reports a refused connection as a connect *timeout*; it is still "unavailable"
    (not "timed out"), and a reset, a cut-off stream and a stall keep their kinds too."""
    calls: list[LLMCall] = []
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    with pytest.raises(LLMUnavailableError, match="connection failed"):
        await _collect(closed, calls, http_client)
    with FakeLLM() as fake:
        fake.script(connection_reset(["面試"]))
        with pytest.raises(LLMUnavailableError, match="stream broke"):
            await _collect(fake, calls, http_client)
        fake.script(stall(0.0, ["面試"]))
        with pytest.raises(LLMUnavailableError, match="without a finish reason"):
            await _collect(fake, calls, http_client)
        fake.script(stall(5.0, ["面試"]))
        with pytest.raises(LLMTimeoutError):
            await _collect(fake, calls, http_client)
    assert [c.error for c in calls] == ["llm_unavailable"] * 3 + ["llm_timeout"]
