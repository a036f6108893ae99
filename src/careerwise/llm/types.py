"""Provider-neutral types for chat messages and streamed chunks."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


@dataclass(frozen=True)
class ToolCallRequest:
    """One complete tool call as the model wrote it (arguments still raw text)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ChatMessage:
    role: Role
    content: str = ""
    tool_calls: tuple[ToolCallRequest, ...] = ()
    tool_call_id: str | None = None

    def to_openai(self) -> dict[str, Any]:
        msg: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            # do not 'fix' to None: llama.cpp's server answers 500 to content null with tool calls.
            msg["content"] = self.content or ""
            msg["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        if self.tool_call_id is not None:
            msg["tool_call_id"] = self.tool_call_id
        return msg


@dataclass(frozen=True)
class ToolCallDelta:
    index: int
    id: str | None = None
    name: str | None = None
    arguments: str | None = None


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False  # counted by us (llm/clean.py), the provider reported none


@dataclass(frozen=True)
class StreamChunk:
    text: str | None = None
    tool_deltas: tuple[ToolCallDelta, ...] = ()
    finish_reason: str | None = None
    usage: Usage | None = None


@dataclass(eq=False)
class StreamPacing:
    """The consumer's word to the provider that this answer's text is on the user's screen (issue #10).

    Until then the provider reads every chunk as it comes, so the first visible text is never held.
    Once :meth:`activate` is called the provider may read the network in batches (one read every
    ``CAREERWISE_STREAM_PACE_MS``) and merge consecutive text chunks: fewer wake-ups and engine passes
    per answer. Mutable on purpose: the request is frozen and already in the provider's hands when the
    flow learns that text is showing; the flow keeps this object and flips it."""

    active: bool = False
    waits: int = 0  # paced waits the provider made for this request (tests and traces count them)
    last_pace: float = 0.0  # seconds: the pace the provider's latest paced read used (adaptive pacing)

    def activate(self) -> None:
        self.active = True


@dataclass(frozen=True)
class CompletionRequest:
    messages: Sequence[ChatMessage]
    tools: Sequence[ToolSpec] = ()
    max_tokens: int = 512
    temperature: float = 0.7
    tool_choice: Literal["auto", "none"] = "auto"
    metadata: dict[str, str] = field(default_factory=dict)
    # None: the text is not streamed to a user (routing, agents, merges), so nothing is ever paced
    pacing: StreamPacing | None = field(default=None, compare=False, repr=False)
    # The reply must be one JSON value following this JSON schema. The embedded model samples under a
    # grammar built from it, so its reply follows it by construction; an OpenAI-compatible server gets it
    # as ``response_format`` (json_schema). None: free text (every existing caller).
    json_schema: dict[str, Any] | None = field(default=None, compare=False, repr=False)


class LLMProvider(Protocol):
    """Anything that streams chat completions: a remote OpenAI-compatible server or the local model."""

    name: str
    model: str

    def stream(self, request: CompletionRequest) -> AsyncIterator[StreamChunk]:
        """Stream one completion. Raises ``LLMError`` subclasses; never returns partial garbage silently."""
        ...

    async def aclose(self) -> None: ...
