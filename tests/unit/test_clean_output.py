"""CleanOutput: what any provider writes reaches the flow without tool-call text, schemas or template
tokens, in Taiwan Chinese, with usage counted when the provider sent none."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from careerwise.llm.clean import CleanOutput, estimate_tokens
from careerwise.llm.types import ChatMessage, CompletionRequest, StreamChunk, ToolSpec, Usage

SEARCH = ToolSpec(
    name="searchKnowledge",
    description="search",
    parameters={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
)


class Pieces:
    """A provider that streams fixed chunks and records whether it was closed early."""

    def __init__(self, chunks: list[StreamChunk]) -> None:
        self.name, self.model = "stub", "stub-model"
        self.chunks = chunks
        self.sent = 0
        self.closed_early = False

    async def stream(self, request: CompletionRequest) -> AsyncIterator[StreamChunk]:
        try:
            for c in self.chunks:
                self.sent += 1
                yield c
        except GeneratorExit:
            self.closed_early = True
            raise

    async def aclose(self) -> None:
        return None


def text_chunks(text: str, size: int, *, usage: Usage | None = None) -> list[StreamChunk]:
    out = [StreamChunk(text=text[i : i + size]) for i in range(0, len(text), size)]
    return [*out, StreamChunk(finish_reason="stop", usage=usage)]


async def run(
    chunks: list[StreamChunk], *, tools: bool = True, tool_choice: str = "auto", convert_zh: bool = True
) -> tuple[str, list[tuple[str, dict[str, object]]], list[StreamChunk], Pieces]:
    inner = Pieces(chunks)
    clean = CleanOutput(inner, convert_zh=convert_zh)
    request = CompletionRequest(
        messages=[ChatMessage("system", "You are Summer."), ChatMessage("user", "怎麼談薪水？")],
        tools=[SEARCH] if tools else (),
        tool_choice=tool_choice,  # type: ignore[arg-type]
    )
    out = [c async for c in clean.stream(request)]
    text = "".join(c.text or "" for c in out)
    calls = [(d.name or "", json.loads(d.arguments or "{}")) for c in out for d in c.tool_deltas]
    return text, calls, out, inner


@pytest.mark.parametrize("size", [1, 3, 7, 200])
@pytest.mark.parametrize(
    "written",
    [
        '{"name": "searchKnowledge", "arguments": {"query": "薪资谈判"}}',
        '```json\n{"name": "searchKnowledge", "arguments": {"query": "薪资谈判"}}\n```',
        '<tool_call>\n{"name": "searchKnowledge", "arguments": {"query": "薪资谈判"}}\n</tool_call>',
        '{"function": {"name": "searchKnowledge", "arguments": "{\\"query\\": \\"薪资谈判\\"}"}}',
    ],
)
async def test_a_call_written_as_text_becomes_a_call_in_taiwan_chinese(written: str, size: int) -> None:
    text, calls, out, inner = await run(text_chunks(written + " 然後一些多餘的字", size))
    assert text == ""
    assert calls == [("searchKnowledge", {"query": "薪資談判"})]
    assert out[-1].finish_reason == "tool_calls"
    assert inner.closed_early or inner.sent == len(inner.chunks)


async def test_the_provider_is_closed_once_the_call_is_complete() -> None:
    call = '{"name": "searchKnowledge", "arguments": {"query": "x"}}'
    chunks = [StreamChunk(text=call), *[StreamChunk(text="多餘") for _ in range(50)]]
    _, calls, _, inner = await run(chunks)
    assert calls and inner.closed_early and inner.sent < len(chunks)


async def test_a_call_to_a_tool_nobody_offered_is_a_call_not_text() -> None:
    text, calls, _, _ = await run(text_chunks('{"name": "poemAboutCat", "arguments": {"topic": "貓"}}', 4))
    assert text == ""
    assert calls == [("poemAboutCat", {"topic": "貓"})]


async def test_a_call_written_in_a_final_round_is_recognised_too() -> None:
    _, calls, _, _ = await run(
        text_chunks('{"name": "searchKnowledge", "arguments": {"query": "x"}}', 5), tool_choice="none"
    )
    assert calls == [("searchKnowledge", {"query": "x"})]


@pytest.mark.parametrize(
    "echo",
    [
        '<tools>{"type": "function", "function": {"name": "searchKnowledge", "parameters": {}}}</tools>',
        '{"type": "function", "function": {"name": "searchKnowledge", "description": "x", "parameters": '
        '{"type": "object", "properties": {}}}}',
    ],
)
async def test_an_echoed_schema_is_never_shown(echo: str) -> None:
    text, calls, out, _ = await run(text_chunks(echo, 6))
    assert text == "" and calls == []
    assert out[-1].finish_reason == "stop"


async def test_json_that_is_not_machinery_is_shown() -> None:
    answer = '{"salary": 60000} 是一個 JSON 範例。'
    text, calls, _, _ = await run(text_chunks(answer, 5))
    assert text == answer and calls == []


@pytest.mark.parametrize("size", [1, 2, 5, 100])
async def test_template_tokens_are_removed_however_split(size: int) -> None:
    text, _, _, _ = await run(text_chunks("答案是這樣。<|im_end|><|im_start|>assistant 再見", size))
    assert text == "答案是這樣。assistant 再見"


async def test_a_lone_angle_bracket_is_kept() -> None:
    text, _, _, _ = await run(text_chunks("a < b 且 <div> 不是標記 <|", 3))
    assert text == "a < b 且 <div> 不是標記 <|"


@pytest.mark.parametrize("size", [1, 2, 3, 100])
async def test_simplified_and_mainland_wording_become_taiwan_usage(size: int) -> None:
    text, _, _, _ = await run(text_chunks("这个项目的数据库，信息和软件，“重点”在视频。", size))
    assert text == "這個專案的資料庫，資訊和軟體，「重點」在影片。"


async def test_taiwan_text_passes_unchanged() -> None:
    answer = "台灣的薪資談判：先探、再錨、後換。後來的面試裡，乾淨俐落地回答。"
    text, _, _, _ = await run(text_chunks(answer, 3))
    assert text == answer


async def test_english_curly_quotes_are_left_alone() -> None:
    answer = "Say \u201cthank you\u201d first."
    text, _, _, _ = await run(text_chunks(answer, 4))
    assert text == answer


async def test_conversion_off_passes_simplified_through() -> None:
    text, _, _, _ = await run(text_chunks("软件", 1), convert_zh=False)
    assert text == "软件"


async def test_reported_usage_passes_through_unestimated() -> None:
    _, _, out, _ = await run(text_chunks("好的。", 2, usage=Usage(prompt_tokens=40, completion_tokens=3)))
    usages = [c.usage for c in out if c.usage is not None]
    assert usages == [Usage(prompt_tokens=40, completion_tokens=3)]


@pytest.mark.parametrize("usage", [None, Usage(0, 0)])
async def test_missing_usage_is_estimated_and_marked(usage: Usage | None) -> None:
    _, _, out, _ = await run(text_chunks("薪水要先做功課，再開口。", 4, usage=usage))
    usages = [c.usage for c in out if c.usage is not None]
    assert len(usages) == 1
    estimate = usages[0]
    assert estimate.estimated
    assert estimate.prompt_tokens >= estimate_tokens("You are Summer.怎麼談薪水？")
    assert estimate.completion_tokens == estimate_tokens("薪水要先做功課，再開口。")


def test_estimate_counts_han_one_each_and_other_text_by_fours() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("薪水") == 2
    assert estimate_tokens("abcdefgh") == 2


@pytest.mark.parametrize("size", [1, 4, 50])
async def test_a_call_written_after_some_text_is_a_call_and_never_shown(size: int) -> None:
    written = (
        "If you need Summer's views, search:\n```json\n"
        '{"name": "searchKnowledge", "arguments": {"query": "resignation"}}\n```\nmore'
    )
    text, calls, out, _ = await run(text_chunks(written, size))
    assert text == "If you need Summer's views, search:\n"
    assert calls == [("searchKnowledge", {"query": "resignation"})]
    assert out[-1].finish_reason == "tool_calls"


@pytest.mark.parametrize("size", [1, 3, 100])
async def test_code_and_json_examples_inside_an_answer_still_show(size: int) -> None:
    answer = 'Use a list:\n```python\nx = [i for i in y]\n```\nand {"salary": 1} is JSON; a < b.'
    text, calls, _, _ = await run(text_chunks(answer, size))
    assert text == answer and calls == []


async def test_a_call_cut_off_by_the_token_limit_never_shows() -> None:
    written = 'Use the tool:\n\n```json\n{\n  "name": "searchKnowledge",\n  "arguments": {\n    "query": "Summer\'s 30-'
    text, calls, _, _ = await run(text_chunks(written, 3))
    assert text == "Use the tool:\n\n" and calls == []
