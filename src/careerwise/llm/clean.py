"""Clean output from any provider: calls written as text become calls, machinery never shows, Chinese
reads as Taiwan writes it, and every call reports its token usage.

:class:`CleanOutput` wraps every provider the services build (embedded, a llama.cpp server, any
OpenAI-compatible one), so flows get the same guarantees whatever runs underneath:

- a tool call written as text (bare or fenced JSON, ``<tool_call>`` tags) at the start of an answer is
  turned into a tool-call delta, and the provider's stream is closed there; a call to a tool that was not
  offered is passed on under its own name, so the flow refuses it visibly, never as answer text; an echoed
  tool schema is dropped (``textcalls``);
- chat-template tokens (``<|im_end|>`` and the like) are removed from the text;
- Han text is converted to Taiwan standard characters and vocabulary while streaming (``zh``), and so are
  the Han strings inside calls recognised here;
- a stream that ends without usage (llama.cpp's server sends none) gets an estimate, marked as one, so
  budgets and token metrics hold.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import replace

from careerwise.llm.textcalls import Suppressed, TextOut, ToolCallDetector, ToolOut, call_delta
from careerwise.llm.types import CompletionRequest, LLMProvider, StreamChunk, Usage
from careerwise.llm.zh import ZhStreamConverter, convert_args, opencc_converter

log = logging.getLogger(__name__)

_TEMPLATE_TOKEN = re.compile(r"<\|[a-z_]{2,24}\|>")
_TOKEN_PREFIX = re.compile(r"<(\|[a-z_]{0,24}\|?)?$")
_HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate: about one token per Han character and per four other characters
    (Qwen's and Llama's vocabularies on this project's text are within a third of it either way)."""
    han = len(_HAN.findall(text))
    return han + max(0, len(text) - han + 3) // 4


def request_text(request: CompletionRequest) -> str:
    parts = [m.content for m in request.messages]
    parts.extend(c.arguments for m in request.messages for c in m.tool_calls)
    parts.extend(json.dumps(t.parameters) + t.description + t.name for t in request.tools)
    return "\n".join(parts)


class _TemplateTokens:
    """Removes chat-template tokens from streamed text, holding a tail that may be the start of one."""

    def __init__(self) -> None:
        self._tail = ""
        self.removed = 0

    def push(self, text: str) -> str:
        text = self._tail + text
        self._tail = ""
        text, n = _TEMPLATE_TOKEN.subn("", text)
        self.removed += n
        m = _TOKEN_PREFIX.search(text)
        if m:
            self._tail, text = text[m.start() :], text[: m.start()]
        return text

    def flush(self) -> str:
        out, self._tail = self._tail, ""
        return out


class CleanOutput:
    """An :class:`LLMProvider` wrapper that gives every provider's output the guarantees listed above."""

    def __init__(
        self,
        inner: LLMProvider,
        *,
        convert_zh: bool = True,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self._zh: Callable[[str], str] | None = opencc_converter() if convert_zh else None

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def warm(self) -> None:
        warm = getattr(self.inner, "warm", None)
        if warm is not None:
            await warm()

    async def stream(self, request: CompletionRequest) -> AsyncIterator[StreamChunk]:
        names = [t.name for t in request.tools]
        # also with tool_choice "none": a call written as text is recognised (the flow refuses it), not shown
        detector = ToolCallDetector(names or ["searchKnowledge"])
        tokens = _TemplateTokens()
        zh = ZhStreamConverter(self._zh) if self._zh is not None else None
        written: list[str] = []
        usage_seen = False
        finish: str | None = None
        called = False

        def shown(text: str) -> str:
            return zh.feed(text) if zh is not None and text else text

        source = self.inner.stream(request)
        try:
            async for chunk in source:
                if chunk.usage is not None and (chunk.usage.prompt_tokens or chunk.usage.completion_tokens):
                    usage_seen = True
                if chunk.finish_reason:
                    finish = chunk.finish_reason
                text: list[str] = []
                if chunk.text:
                    written.append(chunk.text)
                    for event in detector.feed(tokens.push(chunk.text)):
                        if isinstance(event, TextOut):
                            text.append(shown(event.text))
                            continue
                        call = self._call_chunk(event)
                        if call is not None:
                            called = True
                            yield call
                for d in chunk.tool_deltas:
                    written.append((d.name or "") + (d.arguments or ""))
                passed = replace(chunk, text="".join(text) or None, finish_reason=None)
                if passed.text or passed.tool_deltas or (passed.usage is not None and usage_seen):
                    yield passed
                if detector.done:
                    break  # a call (or machinery) is complete: the provider stops generating
        finally:
            close = getattr(source, "aclose", None)
            if close is not None:
                await close()
        if not detector.done:
            tail = [shown(e.text) for e in detector.feed(tokens.flush()) if isinstance(e, TextOut)]
            for event in detector.finish():
                if isinstance(event, TextOut):
                    tail.append(shown(event.text))
                    continue
                call = self._call_chunk(event)
                if call is not None:
                    called = True
                    yield call
            if zh is not None:
                tail.append(zh.flush())
            if "".join(tail):
                yield StreamChunk(text="".join(tail))
        if tokens.removed:
            log.warning("llm: removed %d chat-template token(s) from %s's output", tokens.removed, self.name)
        usage = None
        if not usage_seen:
            usage = Usage(
                prompt_tokens=estimate_tokens(request_text(request)),
                completion_tokens=estimate_tokens("".join(written)),
                estimated=True,
            )
        yield StreamChunk(finish_reason="tool_calls" if called else (finish or "stop"), usage=usage)

    def _call_chunk(self, event: ToolOut | Suppressed) -> StreamChunk | None:
        if isinstance(event, Suppressed):
            what = f"a call to a tool it was not offered ({event.name})" if event.name else "a tool schema"
            log.warning("llm: %s wrote %s; not shown", self.name, what)
        convert = self._zh
        delta = call_delta(event, (lambda a: convert_args(a, convert)) if convert is not None else None)
        return StreamChunk(tool_deltas=(delta,)) if delta is not None else None
