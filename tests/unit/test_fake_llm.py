"""Tests of the fake OpenAI-compatible server itself (tests/fakes/fake_llm.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import openai
import pytest
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionMessageFunctionToolCall

from tests.fakes.fake_llm import Call, FakeLLM, error, raw, stall, text, tool_calls


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


@pytest.fixture
async def client(fake: FakeLLM) -> AsyncIterator[AsyncOpenAI]:
    fake.reset()
    async with AsyncOpenAI(base_url=fake.base_url, api_key="x", max_retries=0) as c:
        yield c


MESSAGES: list[Any] = [{"role": "user", "content": "怎麼談薪水？"}]


async def collect(stream: Any) -> tuple[list[Any], str, dict[int, dict[str, Any]], str | None]:
    """Drain an openai chunk stream: (chunks, text, tool calls by index, finish_reason)."""
    chunks: list[Any] = []
    content = ""
    calls: dict[int, dict[str, Any]] = {}
    finish: str | None = None
    async for chunk in stream:
        chunks.append(chunk)
        for choice in chunk.choices:
            delta = choice.delta
            content += delta.content or ""
            for tc in delta.tool_calls or []:
                slot = calls.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
                if tc.id:
                    slot["id"] = tc.id
                if tc.function and tc.function.name:
                    slot["name"] = tc.function.name
                if tc.function and tc.function.arguments:
                    slot["arguments"] += tc.function.arguments
            finish = choice.finish_reason or finish
    return chunks, content, calls, finish


async def test_text_stream_reassembles(fake: FakeLLM, client: AsyncOpenAI) -> None:
    fake.script(text("談薪水要先做功課。", chunk_size=3))
    stream = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    chunks, content, calls, finish = await collect(stream)
    assert content == "談薪水要先做功課。"
    assert finish == "stop"
    assert calls == {}
    # role chunk, 3 content chunks, finish chunk
    assert len(chunks) == 5
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[0].choices[0].delta.content is None
    assert [c.choices[0].delta.content for c in chunks[1:4]] == ["談薪水", "要先做", "功課。"]
    assert all(c.object == "chat.completion.chunk" and c.model == "m" for c in chunks)
    assert len({c.id for c in chunks}) == 1


async def test_text_chunks_equal_pieces_and_default(fake: FakeLLM, client: AsyncOpenAI) -> None:
    fake.script(text("abcdef", chunks=2))
    _, content, _, _ = await collect(
        await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    )
    assert content == "abcdef"
    # queue empty: the default reply
    _, content, _, _ = await collect(
        await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    )
    assert content == "好的。"


async def test_wire_format_is_sse(fake: FakeLLM) -> None:
    fake.script(text("hi", chunk_size=1))
    async with httpx.AsyncClient() as http:
        resp = await http.post(
            fake.base_url + "/chat/completions",
            json={
                "model": "m",
                "messages": MESSAGES,
                "stream": True,
                "stream_options": {"include_usage": True},
            },
        )
    assert resp.headers["content-type"].startswith("text/event-stream")
    events = resp.text.split("\n\n")
    assert events[-1] == ""
    assert events[-2] == "data: [DONE]"
    payloads = [json.loads(e.removeprefix("data: ")) for e in events[:-2]]
    assert all(e.startswith("data: ") for e in events[:-1])
    assert payloads[0]["choices"][0] == {
        "index": 0,
        "delta": {"role": "assistant", "content": None},
        "finish_reason": None,
    }
    assert [p["choices"][0]["delta"] for p in payloads[1:3]] == [{"content": "h"}, {"content": "i"}]
    assert payloads[3]["choices"][0]["finish_reason"] == "stop"
    usage_chunk = payloads[4]
    assert usage_chunk["choices"] == []
    prompt = len(json.dumps(MESSAGES, ensure_ascii=False)) // 4
    assert usage_chunk["usage"] == {
        "prompt_tokens": prompt,
        "completion_tokens": 1,
        "total_tokens": prompt + 1,
    }


async def test_tool_call_arguments_split_and_reassemble(fake: FakeLLM, client: AsyncOpenAI) -> None:
    fake.script(tool_calls(Call("searchKnowledge", {"query": "薪水談判技巧"}, id="call_1"), split=4))
    chunks, content, calls, finish = await collect(
        await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    )
    assert finish == "tool_calls"
    assert content == ""
    assert calls == {0: {"id": "call_1", "name": "searchKnowledge", "arguments": '{"query": "薪水談判技巧"}'}}
    tc_deltas = [
        c.choices[0].delta.tool_calls[0] for c in chunks if c.choices and c.choices[0].delta.tool_calls
    ]
    assert len(tc_deltas) == 4
    assert tc_deltas[0].id == "call_1" and tc_deltas[0].function.name == "searchKnowledge"
    assert all(d.id is None and d.function.name is None for d in tc_deltas[1:])


async def test_repeat_id_and_name_and_text_before(fake: FakeLLM, client: AsyncOpenAI) -> None:
    fake.script(
        tool_calls(Call("f", '{"a": 1}'), text_before="讓我查一下。", repeat_id_and_name=True, first_index=2)
    )
    chunks, content, calls, _ = await collect(
        await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    )
    assert content == "讓我查一下。"
    assert list(calls) == [2]
    assert calls[2]["arguments"] == '{"a": 1}'
    tc_deltas = [
        c.choices[0].delta.tool_calls[0] for c in chunks if c.choices and c.choices[0].delta.tool_calls
    ]
    assert len(tc_deltas) == 3
    assert {d.id for d in tc_deltas} == {calls[2]["id"]}
    assert all(d.function.name == "f" for d in tc_deltas)
    # text chunks come before any tool-call chunk
    first_tool = next(i for i, c in enumerate(chunks) if c.choices and c.choices[0].delta.tool_calls)
    assert all(not (c.choices and c.choices[0].delta.content) for c in chunks[first_tool:])


async def test_parallel_calls_interleave(fake: FakeLLM, client: AsyncOpenAI) -> None:
    fake.script(tool_calls(Call("a", {"x": "一"}), Call("b", {"y": "二"}), split=2))
    chunks, _, calls, finish = await collect(
        await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    )
    assert finish == "tool_calls"
    assert {i: (c["name"], json.loads(c["arguments"])) for i, c in calls.items()} == {
        0: ("a", {"x": "一"}),
        1: ("b", {"y": "二"}),
    }
    assert calls[0]["id"] != calls[1]["id"]
    order = [
        c.choices[0].delta.tool_calls[0].index for c in chunks if c.choices and c.choices[0].delta.tool_calls
    ]
    assert order == [0, 1, 0, 1]


async def test_non_streaming(fake: FakeLLM, client: AsyncOpenAI) -> None:
    fake.script(text("完整回答"), tool_calls(Call("searchKnowledge", {"query": "履歷"}, id="c9")))
    done = await client.chat.completions.create(model="m", messages=MESSAGES)
    assert done.object == "chat.completion"
    assert done.choices[0].message.content == "完整回答"
    assert done.choices[0].finish_reason == "stop"
    assert done.usage is not None and done.usage.completion_tokens == 2
    done = await client.chat.completions.create(model="m", messages=MESSAGES, stream=False)
    msg = done.choices[0].message
    assert msg.content is None
    assert msg.tool_calls is not None and msg.tool_calls[0].id == "c9"
    call = msg.tool_calls[0]
    assert call.type == "function"
    assert isinstance(call, ChatCompletionMessageFunctionToolCall)
    assert call.function.name == "searchKnowledge"
    assert json.loads(call.function.arguments) == {"query": "履歷"}
    assert done.choices[0].finish_reason == "tool_calls"


async def test_error_statuses(fake: FakeLLM, client: AsyncOpenAI) -> None:
    fake.script(
        error(500),
        error(429, headers={"Retry-After": "7"}),
        error(400, {"error": {"message": "tools not supported"}}),
    )
    with pytest.raises(openai.InternalServerError):
        await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    with pytest.raises(openai.RateLimitError) as rate:
        await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    assert rate.value.response.headers["retry-after"] == "7"
    with pytest.raises(openai.BadRequestError, match="tools not supported"):
        await client.chat.completions.create(model="m", messages=MESSAGES)


async def test_requests_recorded(fake: FakeLLM, client: AsyncOpenAI) -> None:
    tools: Any = [
        {"type": "function", "function": {"name": "searchKnowledge", "parameters": {"type": "object"}}}
    ]
    await collect(
        await client.chat.completions.create(model="m1", messages=MESSAGES, stream=True, tools=tools)
    )
    await client.chat.completions.create(model="m2", messages=[{"role": "user", "content": "第二"}])
    recorded = fake.requests
    assert [r["model"] for r in recorded] == ["m1", "m2"]
    assert recorded[0]["messages"] == MESSAGES
    assert recorded[0]["stream"] is True
    assert recorded[0]["tools"] == tools
    assert recorded[1]["messages"][0]["content"] == "第二"


async def test_models_endpoint(client: AsyncOpenAI) -> None:
    models = await client.models.list()
    assert [m.id for m in models.data] == ["fake-model"]


async def test_stall_disconnect_is_noticed(fake: FakeLLM, client: AsyncOpenAI) -> None:
    fake.script(stall(30, after_chunks=["半"]))
    stream = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    got = ""
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.3):
            async for chunk in stream:
                got += chunk.choices[0].delta.content or ""
    assert got == "半"
    await stream.close()
    for _ in range(2000):  # polling for the outcome; the bound only stops a broken test from hanging
        if fake.closed_early and fake.open_streams == 0:
            break
        await asyncio.sleep(0.01)
    assert fake.closed_early == 1
    assert fake.open_streams == 0


async def test_concurrent_streams_and_delays(fake: FakeLLM, client: AsyncOpenAI) -> None:
    fake.default = text("abcd", chunk_size=1, first_token_delay=0.1, delay=0.02)

    async def one() -> str:
        return (
            await collect(await client.chat.completions.create(model="m", messages=MESSAGES, stream=True))
        )[1]

    loop = asyncio.get_running_loop()
    t0 = loop.time()
    assert await asyncio.gather(*(one() for _ in range(4))) == ["abcd"] * 4
    assert loop.time() - t0 >= 0.16  # the delays are kept: 0.1 + 3 * 0.02 (no upper bound: noisy machine)
    assert fake.max_open_streams >= 2  # served concurrently
    # the server counts a stream closed after its last bytes left, on its own thread: wait for that
    for _ in range(400):
        if fake.open_streams == 0:
            break
        await asyncio.sleep(0.05)
    assert fake.open_streams == 0


async def test_raw_malformed_stream(fake: FakeLLM) -> None:
    fake.script(raw(["data: {not json\n\n", b"data: [DONE]\n\n"]))
    async with httpx.AsyncClient() as http:
        resp = await http.post(fake.base_url + "/chat/completions", json={"model": "m", "stream": True})
    assert resp.status_code == 200
    assert resp.text == "data: {not json\n\ndata: [DONE]\n\n"


def test_sync_usage_and_stop_ends_stalled_stream() -> None:
    with FakeLLM() as server:
        server.script(stall(60))
        with httpx.Client(timeout=5) as http:
            assert http.get(server.base_url + "/models").status_code == 200
            with http.stream("POST", server.base_url + "/chat/completions", json={"stream": True}) as resp:
                assert resp.status_code == 200
                server.stop()  # must not wait for the 60 s stall
                assert resp.read() == b""
    assert server.requests == [{"stream": True}]
