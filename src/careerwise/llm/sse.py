"""An OpenAI-compatible streamed body, read as the network delivers it, as :class:`StreamChunk` values.

:class:`SSEDecoder` splits bytes into Server-Sent Events, whatever the line endings and however the
reads cut them. :func:`parse_chunk` turns one ``chat.completion.chunk`` into a chunk, or None when it
carries nothing; bad JSON raises ``json.JSONDecodeError``, and an error event or a chunk of the wrong
shape raises :class:`careerwise.errors.LLMUnavailableError` (a provider fault, like any other).
:class:`BodyReader` applies ``[DONE]`` and a size cap (past it the answer ends as if the token limit was
hit) and hands back the chunks parsed before an error with the error, so nothing shown is lost.
:func:`merge_text` joins runs of text-only chunks without dropping or reordering anything.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from careerwise.errors import LLMError, LLMUnavailableError
from careerwise.llm.types import StreamChunk, ToolCallDelta, Usage

log = logging.getLogger(__name__)


def _text_only(chunk: StreamChunk) -> bool:
    return bool(chunk.text) and not chunk.tool_deltas and chunk.finish_reason is None and chunk.usage is None


def merge_text(chunks: Sequence[StreamChunk]) -> list[StreamChunk]:
    """Each run of consecutive text-only chunks as one chunk with their text joined; every other chunk
    (tool-call deltas, a finish reason, usage) as it is, in its place. Nothing is dropped or reordered."""
    out: list[StreamChunk] = []
    run: list[str] = []
    for chunk in chunks:
        if _text_only(chunk):
            run.append(chunk.text or "")
            continue
        if run:
            out.append(StreamChunk(text="".join(run)))
            run = []
        out.append(chunk)
    if run:
        out.append(StreamChunk(text="".join(run)))
    return out


class BodyReader:
    """The streamed body, one network read at a time: its SSE events as chunks, ``[DONE]`` and the size
    cap applied. A read is parsed whole so a paced read's chunks can be merged."""

    def __init__(self, provider: str, *, cap: int) -> None:
        self._provider = provider
        self._cap = cap
        self._decoder = SSEDecoder()
        self._produced = 0
        self.finished = False  # a finish_reason was seen
        self.ended = False  # [DONE] or the cap: read no further

    def parse(self, data: bytes) -> tuple[list[StreamChunk], Exception | None]:
        """The read's chunks, and the error (bad JSON, an error event) that stopped it, if any: the
        caller passes the chunks before it on, then raises it."""
        out: list[StreamChunk] = []
        for event, payload in self._decoder.feed(data):
            if payload.startswith(b"[DONE]"):
                self.ended = True
                break
            try:
                converted = parse_chunk(event, payload, self._provider)
            except (json.JSONDecodeError, LLMError) as exc:
                return out, exc
            if converted is None:
                continue
            self._produced += len(converted.text or "") + sum(
                len(d.arguments or "") for d in converted.tool_deltas
            )
            if self._produced > self._cap:
                log.warning("%s: the answer passed %d characters; cut off", self._provider, self._cap)
                out.append(StreamChunk(finish_reason="length"))
                self.finished = self.ended = True
                break
            self.finished = self.finished or converted.finish_reason is not None
            out.append(converted)
        return out, None


class SSEDecoder:
    """Server-Sent Events from a byte stream, fed as the network delivers it: returns each event's
    ``(event name, data)`` once its blank line has arrived; a partial line waits for the next read.

    Lines end with LF, CRLF or CR (a CR at the end of a read waits: the LF may follow). Comment lines
    (``:``), ``id`` and ``retry`` are ignored; several ``data`` lines of one event are joined with LF."""

    def __init__(self) -> None:
        self._rest = b""  # a line not yet ended
        self._skip_lf = False  # the last read ended with CR: a LF opening the next one ends no line
        self._event = b""
        self._data: list[bytes] = []

    def feed(self, chunk: bytes) -> list[tuple[bytes, bytes]]:
        if self._skip_lf and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._skip_lf = False
        buf = self._rest + chunk if self._rest else chunk
        if b"\r" in buf:
            self._skip_lf = buf.endswith(b"\r")
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = buf.split(b"\n")
        self._rest = lines.pop()
        out: list[tuple[bytes, bytes]] = []
        for line in lines:
            if not line:
                if self._data:
                    out.append((self._event, b"\n".join(self._data)))
                self._event, self._data = b"", []
            elif line.startswith(b"data:"):
                self._data.append(line[6:] if line.startswith(b"data: ") else line[5:])
            elif line.startswith(b"event:"):
                self._event = line[6:].strip()
            # ":" comments, "id:", "retry:" and unknown fields: nothing to do
        return out


def _malformed(provider: str, what: str, payload: bytes) -> LLMUnavailableError:
    log.warning("%s: a malformed chunk in the stream (%s): %r", provider, what, payload[:200])
    return LLMUnavailableError(f"{provider}: a malformed chunk in the stream: {what}")


def parse_chunk(event: bytes, payload: bytes, provider: str = "provider") -> StreamChunk | None:
    """One ``chat.completion.chunk`` as a :class:`StreamChunk`; None for a chunk that carries nothing
    (the role-only first chunk, an empty delta), so no layer above spends time on it.

    Raises ``json.JSONDecodeError`` for bad JSON and :class:`LLMUnavailableError` for an error event or a
    chunk of the wrong shape: the provider failed mid-answer, which the breaker and the retry rules treat
    like any other provider fault."""
    obj = json.loads(payload)
    if not isinstance(obj, dict):
        raise _malformed(provider, "not a JSON object", payload)
    error = obj.get("error")
    if error or event == b"error":
        message = error.get("message") if isinstance(error, dict) else error
        log.warning("%s: the stream carried an error: %r", provider, str(message or payload[:200]))
        raise LLMUnavailableError(f"{provider}: the stream carried an error: {message or 'unknown'}")
    usage = None
    raw_usage = obj.get("usage")
    if raw_usage:
        if not isinstance(raw_usage, dict):
            raise _malformed(provider, "usage is not an object", payload)
        usage = Usage(
            prompt_tokens=raw_usage.get("prompt_tokens") or 0,
            completion_tokens=raw_usage.get("completion_tokens") or 0,
        )
    choices = obj.get("choices")
    if not choices:
        return StreamChunk(usage=usage) if usage is not None else None
    try:
        choice = choices[0]
        delta = choice.get("delta") or {}
        finish_reason = choice.get("finish_reason")
        text = delta.get("content")
        calls = delta.get("tool_calls")
        tool_deltas: tuple[ToolCallDelta, ...] = ()
        if calls:
            tool_deltas = tuple(_tool_delta(tc) for tc in calls)
    except (AttributeError, KeyError, TypeError, IndexError) as exc:
        raise _malformed(provider, f"{type(exc).__name__}: {exc}", payload) from exc
    if text is not None and not isinstance(text, str):
        raise _malformed(provider, "content is not a string", payload)
    if not text and not tool_deltas and not finish_reason and usage is None:
        return None
    return StreamChunk(
        text=text or None, tool_deltas=tool_deltas, finish_reason=finish_reason or None, usage=usage
    )


def _tool_delta(tc: dict[str, Any]) -> ToolCallDelta:
    fn = tc.get("function") or {}
    index = tc.get("index")
    return ToolCallDelta(
        index=index if isinstance(index, int) else 0,
        id=tc.get("id") or None,
        name=fn.get("name") or None,
        arguments=fn.get("arguments") or None,
    )
