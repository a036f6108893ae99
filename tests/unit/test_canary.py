"""The canary guard: the marker goes into the system prompt and never comes out, however it is split."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from careerwise.llm.canary import REDACTED, CanaryGuard
from careerwise.llm.types import ChatMessage, CompletionRequest, StreamChunk, ToolCallDelta

CANARY = "CW-0123456789abcdef"


class Pieces:
    def __init__(self, chunks: list[StreamChunk]) -> None:
        self.name, self.model = "stub", "stub-model"
        self.chunks = chunks
        self.seen: list[CompletionRequest] = []

    async def stream(self, request: CompletionRequest) -> AsyncIterator[StreamChunk]:
        self.seen.append(request)
        for c in self.chunks:
            yield c

    async def aclose(self) -> None:
        return None


async def run(
    chunks: list[StreamChunk], messages: list[ChatMessage] | None = None
) -> tuple[str, str, CanaryGuard]:
    inner = Pieces(chunks)
    guard = CanaryGuard(inner, canary=CANARY)
    req = CompletionRequest(messages=messages or [ChatMessage(role="system", content="You are Summer.")])
    out = [c async for c in guard.stream(req)]
    text = "".join(c.text or "" for c in out)
    args = "".join(d.arguments or "" for c in out for d in c.tool_deltas)
    return text, args, guard


def split(s: str, n: int) -> list[StreamChunk]:
    return [StreamChunk(text=s[i : i + n]) for i in range(0, len(s), n)] + [StreamChunk(finish_reason="stop")]


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 19, 100])
async def test_the_canary_is_redacted_however_the_stream_splits_it(size: int) -> None:
    answer = f"我的標記是 {CANARY}，再一次：{CANARY}。結束"
    text, _, guard = await run(split(answer, size))
    assert CANARY not in text and text == f"我的標記是 {REDACTED}，再一次：{REDACTED}。結束"
    assert guard.leaks_blocked == 2


async def test_ordinary_text_passes_unchanged_and_unheld() -> None:
    answer = "CW 是縮寫，C 開頭的字，CW-12 不是標記。"
    text, _, guard = await run(split(answer, 4))
    assert text == answer and guard.leaks_blocked == 0


async def test_a_tail_that_looks_like_the_start_is_released_at_the_end() -> None:
    text, _, _ = await run([StreamChunk(text="結尾是 CW-01"), StreamChunk(finish_reason="stop")])
    assert text == "結尾是 CW-01"
    text, _, _ = await run([StreamChunk(text="沒有結束標記 CW-0")])  # a stream cut off: still released
    assert text == "沒有結束標記 CW-0"


async def test_tool_arguments_are_scrubbed_per_call() -> None:
    args = '{"query": "' + CANARY + '"}'
    chunks = [
        StreamChunk(
            tool_deltas=(ToolCallDelta(index=0, id="c1", name="searchKnowledge", arguments=args[:12]),)
        ),
        StreamChunk(tool_deltas=(ToolCallDelta(index=0, arguments=args[12:]),)),
        StreamChunk(finish_reason="tool_calls"),
    ]
    _, out, guard = await run(chunks)
    assert out == '{"query": "' + REDACTED + '"}' and guard.leaks_blocked == 1


async def test_every_request_carries_the_canary_in_its_system_prompt() -> None:
    inner = Pieces([StreamChunk(text="好"), StreamChunk(finish_reason="stop")])
    guard = CanaryGuard(inner, canary=CANARY)
    for messages in (
        [ChatMessage(role="system", content="You are Summer.")],
        [ChatMessage(role="user", content="hi")],
    ):
        [c async for c in guard.stream(CompletionRequest(messages=messages))]
    # a system message of its own after the leading ones: the persona itself is left as it was
    first = inner.seen[0].messages
    assert first[0].content == "You are Summer." and first[1].role == "system" and CANARY in first[1].content
    assert inner.seen[1].messages[0].role == "system" and CANARY in inner.seen[1].messages[0].content
    assert inner.seen[1].messages[1].content == "hi"
