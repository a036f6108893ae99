"""The canary guard: the marker goes into the system prompt and never comes out, however it is split."""

from __future__ import annotations

import json
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


@pytest.mark.parametrize(
    "written",
    [
        CANARY.lower(),
        CANARY.upper(),
        "ｃｗ－０１２３４５６７８９ａｂｃｄｅｆ",  # fullwidth
        "C W - 0 1 2 3 4 5 6 7 8 9 a b c d e f",
        "CW-0123\u200b4567\u200c89ab\u00adcdef",  # zero-width space, non-joiner, soft hyphen
        "CW_0123.4567-89ab_cdef",
        "0123456789abcdef",  # the random part alone
    ],
)
@pytest.mark.parametrize("size", [1, 3, 100])
async def test_copied_forms_of_the_canary_are_redacted_too(written: str, size: int) -> None:
    text, _, guard = await run(split(f"標記：{written}。", size))
    assert text == f"標記：{REDACTED}。" and guard.leaks_blocked == 1


async def test_names_and_ids_of_tool_calls_are_scrubbed() -> None:
    chunks = [
        StreamChunk(
            tool_deltas=(ToolCallDelta(index=0, id=f"call-{CANARY}", name=CANARY.lower(), arguments="{}"),)
        ),
        # a name split over two deltas: the piece that completes the canary is replaced
        StreamChunk(tool_deltas=(ToolCallDelta(index=1, id="c2", name="CW-0123"),)),
        StreamChunk(tool_deltas=(ToolCallDelta(index=1, name="456789abcdef", arguments="{}"),)),
        StreamChunk(finish_reason="tool_calls"),
    ]
    inner = Pieces(chunks)
    guard = CanaryGuard(inner, canary=CANARY)
    out = [c async for c in guard.stream(CompletionRequest(messages=[ChatMessage(role="user", content="x")]))]
    deltas = [d for c in out for d in c.tool_deltas]
    written = " ".join(f"{d.id} {d.name} {d.arguments}" for d in deltas)
    assert CANARY not in written and CANARY.lower() not in written
    names = [d.name for d in deltas if d.name]
    assert names == [REDACTED, "CW-0123", REDACTED] and deltas[0].id == f"call-{REDACTED}"
    assert guard.leaks_blocked == 3


async def test_arguments_are_checked_as_the_json_they_decode_to() -> None:
    escaped = "".join(f"\\u{ord(c):04x}" for c in CANARY)  # what json.loads turns into the canary
    args = '{"query": "' + escaped + '", "top_k": 3}'
    chunks = [
        StreamChunk(
            tool_deltas=(ToolCallDelta(index=0, id="c1", name="searchKnowledge", arguments=args[:9]),)
        ),
        StreamChunk(tool_deltas=(ToolCallDelta(index=0, arguments=args[9:]),)),
        StreamChunk(finish_reason="tool_calls"),
    ]
    _, out, guard = await run(chunks)
    assert json.loads(out) == {"query": REDACTED, "top_k": 3} and guard.leaks_blocked == 1


async def test_arguments_too_deep_to_check_are_dropped_not_passed_on() -> None:
    deep = "[" * 5000 + '"x"' + "]" * 5000
    chunks = [
        StreamChunk(tool_deltas=(ToolCallDelta(index=0, id="c1", name="searchKnowledge", arguments=deep),)),
        StreamChunk(finish_reason="tool_calls"),
    ]
    _, out, _ = await run(chunks)
    assert out == REDACTED
