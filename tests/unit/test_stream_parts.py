"""The accumulator, the buffer guard and the SSE encoding."""

from __future__ import annotations

import json

from careerwise.events import DeltaEvent, ToolCallEvent, event_to_sse
from careerwise.llm.accumulator import ToolCallAccumulator
from careerwise.llm.guard import BufferGuard
from careerwise.llm.types import ChatMessage, ToolCallDelta, ToolCallRequest


def test_arguments_split_over_many_chunks_join() -> None:
    acc = ToolCallAccumulator()
    acc.add(ToolCallDelta(index=0, id="a", name="searchKnowledge", arguments='{"qu'))
    for piece in ['ery"', ': "薪', '水"', "}"]:
        acc.add(ToolCallDelta(index=0, arguments=piece))
    assert acc.calls() == [ToolCallRequest("a", "searchKnowledge", '{"query": "薪水"}')]


def test_parallel_calls_are_keyed_by_index_not_order() -> None:
    acc = ToolCallAccumulator()
    acc.add(ToolCallDelta(index=2, id="b", name="t2", arguments='{"x"'))
    acc.add(ToolCallDelta(index=1, id="a", name="t1", arguments='{"y"'))
    acc.add(ToolCallDelta(index=2, arguments=": 1}"))
    acc.add(ToolCallDelta(index=1, arguments=": 2}"))
    assert [(c.id, c.name, json.loads(c.arguments)) for c in acc.calls()] == [
        ("a", "t1", {"y": 2}),
        ("b", "t2", {"x": 1}),
    ]


def test_repeated_id_and_name_are_not_duplicated() -> None:
    acc = ToolCallAccumulator()
    for piece in ['{"q', 'uery": ', '"x"}']:
        acc.add(ToolCallDelta(index=0, id="same", name="searchKnowledge", arguments=piece))
    assert acc.calls() == [ToolCallRequest("same", "searchKnowledge", '{"query": "x"}')]


def test_missing_id_gets_one_and_missing_name_is_counted() -> None:
    acc = ToolCallAccumulator()
    acc.add(ToolCallDelta(index=0, name="t", arguments="{}"))
    acc.add(ToolCallDelta(index=1, arguments="{}"))
    calls = acc.calls()
    assert len(calls) == 1 and calls[0].id.startswith("call_")
    assert acc.nameless() == 1


def test_guard_holds_n_non_blank_chunks_then_streams() -> None:
    g = BufferGuard(3)
    assert g.push("a") == [] and g.push("\n") == [] and g.push("b") == []
    assert g.push("c") == ["a", "\n", "b", "c"]
    assert g.push("d") == ["d"]


def test_guard_drop_discards_held_text() -> None:
    g = BufferGuard(3)
    g.push("半")
    g.push("成品")
    g.drop()
    assert not g.holding and g.dropped == ["半", "成品"]


def test_guard_of_zero_passes_everything() -> None:
    assert BufferGuard(0).push("x") == ["x"]


def test_assistant_tool_call_message_has_empty_string_content() -> None:
    msg = ChatMessage(role="assistant", tool_calls=(ToolCallRequest("c", "t", "{}"),)).to_openai()
    assert msg["content"] == "" and msg["tool_calls"][0]["function"]["name"] == "t"


def test_sse_frame() -> None:
    frame = event_to_sse(DeltaEvent(text="嗨", phase=1)).decode()
    assert frame.startswith("event: delta\ndata: ") and frame.endswith("\n\n")
    assert json.loads(frame.split("data: ", 1)[1]) == {
        "type": "delta",
        "text": "嗨",
        "phase": 1,
        "notice": False,
    }


def test_tool_call_event_carries_both_argument_sets() -> None:
    e = ToolCallEvent(
        call_id="c",
        name="searchKnowledge",
        requested_arguments={"query": "q", "top_k": 5},
        effective_arguments={"query": "q", "top_k": 15},
        reason="override",
    )
    data = json.loads(e.model_dump_json())
    assert data["requested_arguments"]["top_k"] == 5 and data["effective_arguments"]["top_k"] == 15
