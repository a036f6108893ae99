"""Issue #10 stream pacing: the merge of a paced read's chunks, and the body reader behind it."""

from __future__ import annotations

import json

from careerwise.errors import LLMUnavailableError
from careerwise.llm.sse import BodyReader, merge_text
from careerwise.llm.types import CompletionRequest, StreamChunk, StreamPacing, ToolCallDelta, Usage


def _t(text: str) -> StreamChunk:
    return StreamChunk(text=text)


def _sse(delta: dict[str, object], finish: str | None = None) -> bytes:
    chunk = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode()


def test_consecutive_text_becomes_one_chunk() -> None:
    assert merge_text([_t("一二"), _t("三四"), _t("五")]) == [_t("一二三四五")]


def test_tool_deltas_finish_and_usage_keep_their_place_and_order() -> None:
    call = StreamChunk(
        tool_deltas=(ToolCallDelta(index=0, id="c1", name="searchKnowledge", arguments='{"q'),)
    )
    more = StreamChunk(tool_deltas=(ToolCallDelta(index=0, arguments='":1}'),))
    finish = StreamChunk(finish_reason="tool_calls")
    usage = StreamChunk(usage=Usage(prompt_tokens=7, completion_tokens=3))
    chunks = [_t("a"), _t("b"), call, _t("c"), more, finish, usage]
    assert merge_text(chunks) == [_t("ab"), call, _t("c"), more, finish, usage]


def test_text_that_carries_a_finish_reason_is_not_merged_away() -> None:
    # the finish reason travels with its own text; the text before it still merges
    last = StreamChunk(text="尾", finish_reason="stop")
    assert merge_text([_t("頭"), _t("身"), last]) == [_t("頭身"), last]


def test_nothing_to_merge_is_left_as_it_is() -> None:
    assert merge_text([]) == []
    single = [_t("x")]
    assert merge_text(single) == single


def test_a_read_is_parsed_whole_and_the_done_marker_ends_it() -> None:
    reader = BodyReader("p", cap=1000)
    data = _sse({"content": "一"}) + _sse({"content": "二"}) + _sse({}, "stop") + b"data: [DONE]\n\n"
    chunks, error = reader.parse(data + _sse({"content": "never read"}))
    assert error is None
    assert chunks == [_t("一"), _t("二"), StreamChunk(finish_reason="stop")]
    assert reader.finished and reader.ended


def test_chunks_before_a_bad_chunk_are_kept_and_the_error_comes_after() -> None:
    reader = BodyReader("p", cap=1000)
    chunks, error = reader.parse(
        _sse({"content": "看得到"}) + b"data: {not json\n\n" + _sse({"content": "x"})
    )
    assert chunks == [_t("看得到")]
    assert isinstance(error, json.JSONDecodeError)
    chunks, error = reader.parse(b'data: {"error": {"message": "boom"}}\n\n')
    assert chunks == [] and isinstance(error, LLMUnavailableError)


def test_the_size_cap_ends_the_read_with_a_length_finish() -> None:
    reader = BodyReader("p", cap=4)
    chunks, error = reader.parse(
        _sse({"content": "一二"}) + _sse({"content": "三四五"}) + _sse({"content": "六"})
    )
    assert error is None
    assert chunks == [_t("一二"), StreamChunk(finish_reason="length")]
    assert reader.ended and reader.finished


def test_pacing_starts_off_and_is_not_part_of_the_request_identity() -> None:
    pacing = StreamPacing()
    assert not pacing.active and pacing.waits == 0
    pacing.activate()
    assert pacing.active
    assert CompletionRequest(messages=[], pacing=pacing) == CompletionRequest(messages=[])
