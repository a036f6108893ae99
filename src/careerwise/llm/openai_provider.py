"""Remote providers through the official ``openai`` async client (Groq, OpenAI, Ollama, vLLM, llama.cpp)."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx
import httpx2
import openai

from careerwise.errors import LLMError, LLMTimeoutError, LLMToolsUnsupportedError, LLMUnavailableError
from careerwise.llm.types import CompletionRequest, StreamChunk, ToolCallDelta, Usage

log = logging.getLogger(__name__)

_TOOL_REFUSALS = ("tool", "function")


class OpenAIProvider:
    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        connect_timeout: float,
        read_timeout: float,
        stream_usage: bool = True,
    ) -> None:
        self.name = "openai-compatible"
        self.model = model
        self._stream_usage = stream_usage
        timeout = openai.Timeout(read_timeout, connect=connect_timeout)
        # Retries are ours (one layer, never after the first visible token), so the SDK's are off.
        self._client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout)

    async def aclose(self) -> None:
        await self._client.close()

    def _body(self, request: CompletionRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [m.to_openai() for m in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if request.tools:
            body["tools"] = [t.to_openai() for t in request.tools]
            body["tool_choice"] = request.tool_choice
        return body

    async def stream(self, request: CompletionRequest) -> AsyncIterator[StreamChunk]:
        body = self._body(request)
        extra: dict[str, Any] = {}
        if self._stream_usage:
            extra["stream_options"] = {"include_usage": True}
        # A server that ignores max_tokens must not fill our memory or the user's screen: past this many
        # characters the answer ends as if the model had hit its token limit (finish_reason "length").
        cap = max(16_000, request.max_tokens * 16)
        produced = 0
        finished = False
        try:
            response = await self._client.chat.completions.create(stream=True, **body, **extra)
            async with response as stream:
                async for chunk in stream:
                    converted = _convert(chunk)
                    produced += len(converted.text or "") + sum(
                        len(d.arguments or "") for d in converted.tool_deltas
                    )
                    if produced > cap:
                        log.warning("%s: the answer passed %d characters; cut off", self.name, cap)
                        yield StreamChunk(finish_reason="length")
                        return
                    finished = finished or converted.finish_reason is not None
                    yield converted
            if not finished:
                # every OpenAI-compatible server ends a complete answer with a finish_reason; a stream that
                # stops without one was cut off, and showing it as a complete answer would hide that
                raise LLMUnavailableError(f"{self.name}: the stream ended without a finish reason (cut off)")
        except json.JSONDecodeError as exc:
            raise LLMUnavailableError(f"{self.name}: a malformed chunk in the stream: {exc}") from exc
        except openai.APITimeoutError as exc:
            raise LLMTimeoutError(f"{self.name}: no data within the read deadline") from exc
        except openai.APIConnectionError as exc:
            raise LLMUnavailableError(f"{self.name}: connection failed: {exc}") from exc
        except openai.APIStatusError as exc:
            raise _status_error(exc, tools_offered=bool(request.tools)) from exc
        except (httpx2.HTTPError, httpx.HTTPError) as exc:  # a reset mid-stream surfaces as a raw HTTP error
            raise LLMUnavailableError(f"{self.name}: stream broke: {exc!r}") from exc


def _status_error(exc: openai.APIStatusError, *, tools_offered: bool) -> LLMError:
    status = exc.status_code
    text = str(exc.message).lower()
    if tools_offered and status in (400, 422) and any(w in text for w in _TOOL_REFUSALS):
        return LLMToolsUnsupportedError(f"provider refused tools: {exc.message}")
    if status == 429 or status >= 500:
        return LLMUnavailableError(f"provider answered {status}: {exc.message}")
    err = LLMError(f"provider answered {status}: {exc.message}")
    err.retryable = False
    return err


def _convert(chunk: Any) -> StreamChunk:
    usage = None
    if getattr(chunk, "usage", None):
        usage = Usage(
            prompt_tokens=chunk.usage.prompt_tokens or 0, completion_tokens=chunk.usage.completion_tokens or 0
        )
    if not chunk.choices:
        return StreamChunk(usage=usage)
    choice = chunk.choices[0]
    delta = choice.delta
    tool_deltas: tuple[ToolCallDelta, ...] = ()
    if delta is not None and delta.tool_calls:
        tool_deltas = tuple(
            ToolCallDelta(
                index=tc.index if tc.index is not None else 0,
                id=tc.id,
                name=tc.function.name if tc.function else None,
                arguments=tc.function.arguments if tc.function else None,
            )
            for tc in delta.tool_calls
        )
    text = delta.content if delta is not None else None
    return StreamChunk(
        text=text or None, tool_deltas=tool_deltas, finish_reason=choice.finish_reason, usage=usage
    )
