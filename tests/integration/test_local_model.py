"""The embedded provider against the real Qwen2.5-Coder-1.5B weights (slow: ``-m local_model``)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
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


async def test_prompt_lookup_checks_a_copied_sentence_in_batches(model_path: Path) -> None:
    """A sentence the answer copies from the prompt is checked in drafts of several tokens, not generated
    one token per evaluation, and the Llama is back to its usual settings afterwards."""
    from llama_cpp import Llama

    from careerwise.llm.local.chatml import IM_END, render_prompt
    from careerwise.llm.local.lookup import PromptLookup, drafting

    sentence = (
        "Before you answer with a number, ask three things: the pay band of the level, the bonus months "
        "the company guarantees, and the month of the yearly raise."
    )
    prompt = render_prompt(
        [
            ChatMessage("system", "Repeat the user's sentence exactly once, and write nothing else."),
            ChatMessage("user", sentence),
        ],
        [],
        allow_calls=False,
    )
    llm = Llama(model_path=str(model_path), n_ctx=1024, verbose=False)
    tokens = llm.tokenize(prompt.encode(), add_bos=False, special=True)
    end_of_turn = llm.tokenize(IM_END.encode(), add_bos=False, special=True)[0]
    user_turn = len(
        llm.tokenize(prompt[: prompt.index(IM_END) + len(IM_END) + 1].encode(), add_bos=False, special=True)
    )
    llm.eval(tokens[:-1])
    evaluations: list[int] = []
    evaluate = llm.eval

    def counted(batch: Sequence[int]) -> None:
        evaluations.append(len(batch))
        evaluate(batch)

    llm.eval = counted  # type: ignore[method-assign]
    lookup = PromptLookup(user_turn)
    out: list[int] = []
    with drafting(llm, lookup, last_position=len(tokens) + 80 + lookup.draft_tokens):
        for token in llm.generate(tokens, temp=0.0):
            if token in (end_of_turn, llm.token_eos()) or len(out) >= 80:
                break
            out.append(token)
    answer = llm.detokenize(out).decode("utf-8", errors="replace")
    assert sentence in answer, answer
    assert lookup.proposed > 0
    assert len(evaluations) < len(out) / 2, (len(evaluations), len(out))  # most tokens came from drafts
    assert llm.draft_model is None and not llm._logits_all and llm.scores.shape[0] == llm.n_batch
    llm.close()


def _anon_mb() -> float:
    """This process's anonymous resident memory (RssAnon in /proc/self/status), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no RssAnon in /proc/self/status")


async def test_repack_setting_reaches_llama_cpp_and_saves_the_repacked_copy(
    model_path: Path, record_property: Callable[[str, object], None]
) -> None:
    """``repack_weights=False`` (CAREERWISE_LOCAL_REPACK_WEIGHTS) turns llama.cpp's extra buffer types off for
    this model only: the model answers, holds no repacked copy of the weights (hundreds of MB less
    anonymous memory than the same model loaded with it on), and llama.cpp's defaults are left as they were."""
    from llama_cpp import llama_cpp as low_level

    added: dict[bool, float] = {}
    for repack in (False, True):
        provider = LocalProvider(model_path=model_path, n_ctx=512, repack_weights=repack)
        try:
            before = _anon_mb()
            await provider.warm()
            added[repack] = _anon_mb() - before
            assert provider._llm is not None
            assert provider._llm.model_params.use_extra_bufts is repack
            request = CompletionRequest(messages=[ChatMessage("user", "履歷是什麼？")], max_tokens=4)
            chunks = [chunk async for chunk in provider.stream(request)]
            assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0
        finally:
            await provider.aclose()
        assert low_level.llama_model_default_params().use_extra_bufts is True
    record_property("local_load_anon_mb", added)
    print(f"\nanonymous memory added by loading: repack off {added[False]:.0f} MB, on {added[True]:.0f} MB")
    # the packaged model's repacked weights are about 600 MB (docs/benchmarks.md, 2026-12-01)
    assert added[True] - added[False] > 300, added


def test_a_failed_construction_without_repack_still_restores_the_defaults() -> None:
    from llama_cpp import llama_cpp as low_level

    from careerwise.llm.local.weights import _model_params

    factory = low_level.llama_model_default_params
    with pytest.raises(ValueError, match="bad file"), _model_params(repack_weights=False):
        assert low_level.llama_model_default_params().use_extra_bufts is False
        raise ValueError("bad file")
    assert low_level.llama_model_default_params is factory
    assert low_level.llama_model_default_params().use_extra_bufts is True
