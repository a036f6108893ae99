"""The tool registry and the small protocol every tool follows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from careerwise.assistant_settings import AssistantSettings
from careerwise.events import Source
from careerwise.knowledge.quotes import Outline, Quote
from careerwise.llm.types import ToolSpec


@dataclass(frozen=True)
class Resolution:
    """Arguments resolved once, before the tool-call event exists (shared/DESIGN.md principle 2)."""

    requested: dict[str, Any]
    effective: dict[str, Any]
    reason: str
    # the turn's user message, which searchKnowledge searches beside the model's query (issue #3); set by
    # the flow, not an argument: the model never writes it, and the events do not repeat it
    message: str = ""
    # tokens of passages the provider should read (its profile); None: whole passages. Set by the flow.
    budget_tokens: int | None = None
    # whether the output should carry the passages' best sentences to quote (the provider's profile says
    # so: decision 0023). Set by the flow.
    quotes: bool = False


@dataclass(frozen=True)
class ToolOutput:
    content: str  # what the model reads
    returned: int
    sources: list[Source] = field(default_factory=list)
    # sentences of the passages that best answer the question, verbatim (knowledge/quotes.py); the flow
    # shows them where the provider's profile says so
    quotes: tuple[Quote, ...] = ()
    # the section headings of the article that answers best, shown with the quotes
    outline: Outline | None = None
    # the instruction at the end of ``content`` on how to answer from it: an answer that opens by saying
    # it back has that opening dropped (llm/echo.py)
    instruction: str = ""


class Tool(Protocol):
    spec: ToolSpec

    def available(self) -> bool: ...

    def resolve(self, arguments: dict[str, Any], settings: AssistantSettings) -> Resolution:
        """Validate and resolve the effective arguments. Raises ToolArgumentsError."""
        ...

    async def run(self, resolution: Resolution, settings: AssistantSettings) -> ToolOutput: ...


class ToolRegistry:
    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}
        self._intents: dict[str, list[str]] = {}

    def register(self, tool: Tool, *, intents: tuple[str, ...]) -> None:
        self._tools[tool.spec.name] = tool
        for intent in intents:
            self._intents.setdefault(intent, []).append(tool.spec.name)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def for_intent(self, intent: str) -> list[Tool]:
        """Tools offered on an intent's path; a tool that cannot run now is not offered at all."""
        return [self._tools[n] for n in self._intents.get(intent, []) if self._tools[n].available()]

    def unavailable_for_intent(self, intent: str) -> list[str]:
        return [n for n in self._intents.get(intent, []) if not self._tools[n].available()]
