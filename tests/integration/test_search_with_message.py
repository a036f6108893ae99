"""searchKnowledge through the real tool-use flow (fake provider): the top_k floor and the user's message
searched beside the model's query (issue #3). The event, the number returned, what the model reads and
the stored trace must agree, as in test_topk_consistency.py."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from careerwise.engine import HistoryItem
from careerwise.events import ToolCallEvent, ToolResultEvent
from careerwise.knowledge.cache import normalize_query
from careerwise.knowledge.embeddings import Embedder, Matrix
from careerwise.services import Services
from careerwise.store.traces import TraceStore
from careerwise.tools.search_knowledge import SearchKnowledgeTool
from tests.fakes.fake_llm import Call, FakeLLM, text, tool_calls
from tests.integration.test_tool_use_flow import run_turn

SEARCH = "searchKnowledge"
OFF_TOPIC = "qwzx blorfquux"  # matches nothing: the gate empties the model's own search


@pytest.mark.parametrize("mode", ["off", "lexical", "hybrid", "message"])
async def test_the_floor_is_resolved_before_the_event_and_returned(
    fake_llm: FakeLLM, make_services: Callable[..., Services], mode: str
) -> None:
    fake_llm.script(tool_calls(Call(SEARCH, {"query": "薪水談判 技巧", "top_k": 1}, id="c1")), text("好。"))
    services = make_services(search_min_top_k=3, search_message_fusion=mode)
    events = await run_turn(services, "怎麼談薪水？")
    call = next(e for e in events if isinstance(e, ToolCallEvent))
    result = next(e for e in events if isinstance(e, ToolResultEvent))
    assert call.requested_arguments == {"query": "薪水談判 技巧", "top_k": 1}
    assert call.effective_arguments == {"query": "薪水談判 技巧", "top_k": 3}
    assert call.reason == "top_k 1 raised to the minimum 3"
    assert result.ok and result.returned == 3 == len(result.sources)
    tool_msg = fake_llm.requests[1]["messages"][-1]["content"]
    assert tool_msg.count("source=") == 3
    stored = await TraceStore(services.db).turn(events[-1].trace_id)
    assert stored is not None
    (rec,) = stored.tool_calls
    assert rec.call["effective_arguments"] == call.effective_arguments
    assert rec.result is not None and rec.result["returned"] == 3


async def test_the_admin_override_still_wins_over_the_floor(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.script(tool_calls(Call(SEARCH, {"query": "薪水談判 技巧", "top_k": 1}, id="c1")), text("好。"))
    services = make_services(
        search_min_top_k=3, use_full_retrieval_range=True, configured_top_k=2, search_message_fusion="hybrid"
    )
    events = await run_turn(services, "怎麼談薪水？")
    call = next(e for e in events if isinstance(e, ToolCallEvent))
    result = next(e for e in events if isinstance(e, ToolResultEvent))
    assert call.effective_arguments["top_k"] == 2 == result.returned
    assert "minimum 3" in call.reason and "configured_top_k=2" in call.reason


# "lexical" is left out: its BM25 list of this short message stays under the gate's min_lexical (by
# design: the lexical arm's own floor), so it would find nothing here either
@pytest.mark.parametrize(("mode", "found"), [("off", False), ("hybrid", True), ("message", True)])
async def test_the_users_message_is_searched_when_fusion_is_on(
    fake_llm: FakeLLM, make_services: Callable[..., Services], mode: str, found: bool
) -> None:
    """The model's query matches nothing; the user's question does. Only a tool that searches the
    message too hands the model passages."""
    fake_llm.script(tool_calls(Call(SEARCH, {"query": OFF_TOPIC}, id="c1")), text("好。"))
    services = make_services(search_message_fusion=mode)
    events = await run_turn(services, "怎麼談薪水？")
    result = next(e for e in events if isinstance(e, ToolResultEvent))
    assert result.ok and (result.returned == 3) is found and len(result.sources) == result.returned
    tool_msg = fake_llm.requests[1]["messages"][-1]["content"]
    assert ("No matching knowledge" in tool_msg) is not found
    assert tool_msg.count("source=") == result.returned


async def test_the_message_is_not_searched_beside_several_calls_or_after_history(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    """Several calls split the question into facets, and a follow-up means little alone: in both cases
    the model's queries are searched as they are (flows/tool_use.py ``_searchable_message``)."""
    services = make_services(search_message_fusion="message")
    fake_llm.script(
        tool_calls(Call(SEARCH, {"query": OFF_TOPIC}, id="a"), Call(SEARCH, {"query": OFF_TOPIC}, id="b")),
        text("好。"),
    )
    events = await run_turn(services, "怎麼談薪水？")
    assert [e.returned for e in events if isinstance(e, ToolResultEvent)] == [0, 0]
    fake_llm.script(tool_calls(Call(SEARCH, {"query": OFF_TOPIC}, id="c")), text("好。"))
    history = [HistoryItem("user", "我想換工作"), HistoryItem("assistant", "好，先說說你的情況。")]
    events = await run_turn(services, "怎麼談薪水？", history=history)
    assert [e.returned for e in events if isinstance(e, ToolResultEvent)] == [0]


class _Recording:
    """The knowledge base's real embedder, recording every text it is asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.texts: list[str] = []

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        self.texts.extend(texts)
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        return self.inner.embed_passages(texts)


@pytest.mark.parametrize("mode", ["message", "hybrid"])
async def test_the_message_is_embedded_once_starting_at_the_first_tool_call_delta(
    fake_llm: FakeLLM,
    make_services: Callable[..., Services],
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
) -> None:
    """The tool is told to warm up when the call's name arrives (its arguments still streaming), and the
    search that follows uses that embedding instead of computing it again (decision 0010)."""
    services = make_services(search_message_fusion=mode)
    recording = _Recording(services.kb.embedder.inner)
    services.kb.embedder.inner = recording
    warmed: list[str] = []
    original = SearchKnowledgeTool.warm

    async def spy(self: SearchKnowledgeTool, message: str) -> None:
        warmed.append(message)
        await original(self, message)

    monkeypatch.setattr(SearchKnowledgeTool, "warm", spy)
    fake_llm.script(tool_calls(Call(SEARCH, {"query": "薪水談判 技巧"}, id="c1"), split=6), text("好。"))
    events = await run_turn(services, "怎麼談薪水？")
    result = next(e for e in events if isinstance(e, ToolResultEvent))
    assert result.ok and result.returned == 3
    assert warmed == ["怎麼談薪水？"]  # once, although the call came in six pieces
    assert recording.texts.count(normalize_query("怎麼談薪水？")) == 1  # by the warm-up; the search waited


async def test_no_warm_up_on_a_follow_up_or_when_the_message_is_not_searched(
    fake_llm: FakeLLM, make_services: Callable[..., Services], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A follow-up's message is not searched (``_searchable_message``), so the tool is not asked to warm
    up; with fusion off it is asked and embeds nothing."""
    calls: list[str] = []

    async def spy(self: SearchKnowledgeTool, message: str) -> None:
        calls.append(message)

    monkeypatch.setattr(SearchKnowledgeTool, "warm", spy)
    services = make_services(search_message_fusion="message")
    fake_llm.script(tool_calls(Call(SEARCH, {"query": "薪水談判 技巧"}, id="c1")), text("好。"))
    history = [HistoryItem("user", "我想換工作"), HistoryItem("assistant", "好，先說說你的情況。")]
    events = await run_turn(services, "那薪水呢？", history=history)
    assert next(e for e in events if isinstance(e, ToolResultEvent)).ok
    assert calls == []
    monkeypatch.undo()
    off = make_services(search_message_fusion="off")
    assert await off.tools.get(SEARCH).warm("怎麼談薪水？") is None
    assert not off.kb.embedder.has_all([normalize_query("怎麼談薪水？")])
