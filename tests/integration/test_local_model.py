"""The embedded provider against the real Qwen2.5-Coder-1.5B weights (slow: ``-m local_model``)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from careerwise.config import Settings
from careerwise.llm.accumulator import ToolCallAccumulator
from careerwise.llm.local import LocalProvider, ensure_model_file
from careerwise.llm.types import ChatMessage, CompletionRequest, StreamChunk, ToolSpec

pytestmark = pytest.mark.local_model

SEARCH = ToolSpec(
    name="searchKnowledge",
    description="搜尋 Summer 的職涯知識庫（她的觀點、案例與數據）。Search Summer's career knowledge base.",
    parameters={
        "type": "object",
        "properties": {"query": {"type": "string", "description": "搜尋查詢字串"}},
        "required": ["query"],
    },
)
CAREER_SYSTEM = (
    "你是 Summer，一位台灣的職涯教練，用繁體中文回答求職、轉職、面試、薪資與履歷問題。"
    "當你需要 Summer 的特定觀點、案例或數據時，使用 searchKnowledge 工具查詢知識庫；常識性問題直接回答。"
    "如果知識庫沒有相關資料，根據你的專業知識回答，不要憑空編造來源。"
)
# Common characters whose Simplified form differs from the Traditional one; none may survive conversion.
SIMPLIFIED_ONLY = set("们这个为说时会对发经还实学习问题么样关应该车东长门见贝页进过钱软简历资谈职业务备")


@pytest.fixture(scope="module")
def model_path() -> Path:
    # The shared cache (data/models by default): joining 1 GB per run would dominate the test time.
    return ensure_model_file(Settings().data_dir / "models")


async def test_short_answer_streams_in_pieces_and_is_traditional(model_path: Path) -> None:
    provider = LocalProvider(model_path=model_path, n_ctx=2048)
    try:
        await provider.warm()
        request = CompletionRequest(
            messages=[
                ChatMessage("system", "你是一位職涯教練，用中文簡短回答。"),
                ChatMessage("user", "用一句話說明履歷是什麼。"),
            ],
            max_tokens=24,
            temperature=0.3,
        )
        chunks = [chunk async for chunk in provider.stream(request)]
    finally:
        await provider.aclose()
    texts = [c.text for c in chunks if c.text]
    answer = "".join(texts)
    assert len(texts) > 1, chunks
    assert any("\u4e00" <= ch <= "\u9fff" for ch in answer), answer
    assert not SIMPLIFIED_ONLY & set(answer), answer
    final = chunks[-1]
    assert final.finish_reason in ("stop", "length")
    assert final.usage is not None
    assert final.usage.prompt_tokens > 10
    assert 0 < final.usage.completion_tokens <= 24


async def test_tool_decision_yields_a_call_or_text(
    model_path: Path, record_property: Callable[[str, object], None]
) -> None:
    provider = LocalProvider(model_path=model_path, n_ctx=2048)
    request = CompletionRequest(
        messages=[
            ChatMessage("system", CAREER_SYSTEM),
            ChatMessage("user", "怎麼談薪水？請查 Summer 的知識庫"),
        ],
        tools=[SEARCH],
        max_tokens=48,
        temperature=0.3,
    )
    acc = ToolCallAccumulator()
    texts: list[str] = []
    chunks: list[StreamChunk] = []
    started = time.perf_counter()
    try:
        async for chunk in provider.stream(request):
            chunks.append(chunk)
            for delta in chunk.tool_deltas:
                acc.add(delta)
            if chunk.text:
                texts.append(chunk.text)
    finally:
        await provider.aclose()
    elapsed = time.perf_counter() - started
    calls = acc.calls()
    # The model's choice is recorded, never asserted: a 1.5B model is allowed to answer directly.
    decision = f"tool_call {calls[0].name} {calls[0].arguments}" if calls else f"text {''.join(texts)[:80]!r}"
    record_property("local_tool_decision", decision)
    print(f"\nlocal model decision ({elapsed:.1f}s): {decision}")
    assert calls or texts
    if calls:
        assert len(calls) == 1 and calls[0].name == "searchKnowledge"
        assert calls[0].id.startswith("call_")
        assert isinstance(json.loads(calls[0].arguments), dict)
        assert not texts
        assert chunks[-1].finish_reason == "tool_calls"
    else:
        assert chunks[-1].finish_reason in ("stop", "length")
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0
