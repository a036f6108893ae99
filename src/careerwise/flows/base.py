"""What every flow receives, and the registry that maps (intent, tier) to a flow."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING

from careerwise.assistant_settings import AssistantSettings
from careerwise.events import Event
from careerwise.llm.types import ChatMessage, LLMProvider, Usage
from careerwise.tools.registry import ToolRegistry
from careerwise.tunables import DEADLINE_KEYS, TUNABLE_KEYS, Deadlines, Tunables

if TYPE_CHECKING:
    from careerwise.knowledge.service import KnowledgeBase


_TUNED = Tunables()
_DEADLINES = Deadlines()


@dataclass(frozen=True)
class FlowOptions:
    """What the flows read besides the assistant's settings. The tunables among these fields take their
    defaults (and, in the configuration, their bounds) from ``careerwise.tunables``; the engine builds
    them from the configuration and :meth:`with_assistant` applies an assistant's own values per turn."""

    buffer_guard_chunks: int = _TUNED.buffer_guard_chunks
    phase1_max_tokens: int = _TUNED.phase1_max_tokens
    phase1_temperature: float = _TUNED.phase1_temperature
    phase3_max_tokens: int = _TUNED.phase3_max_tokens
    phase3_temperature: float = _TUNED.phase3_temperature
    max_tool_rounds: int = _TUNED.max_tool_rounds
    max_tool_calls: int = 4
    llm_retries: int = 1
    supports_tools: bool = True
    medium_flow: str = "auto"  # auto | chain | streamed: which flow answers a medium question
    deep_design: str = "auto"  # auto | full | compact: the deep design (auto: the provider profile's rule)
    deep_step_timeout: float = _DEADLINES.deep_step_timeout
    deep_turn_timeout: float = _DEADLINES.deep_turn_timeout
    deep_heartbeat: float = 10.0  # seconds between "waiting" progress events during one deep LLM step

    def with_assistant(self, a: AssistantSettings) -> FlowOptions:
        """These options with the values the assistant sets itself (``a.overridden``) for this turn.

        A tunable the assistant does not set keeps the value these options were built with (the
        configuration's), whatever ``a`` holds for it: ``a`` may carry built-in defaults there.
        """
        own = {key: getattr(a, key) for key in FLOW_TUNABLES if key in a.overridden}
        return replace(self, **own) if own else self


# the FlowOptions fields an assistant may set for itself (careerwise settings)
FLOW_TUNABLES: tuple[str, ...] = tuple(
    f.name for f in fields(FlowOptions) if f.name in TUNABLE_KEYS or f.name in DEADLINE_KEYS
)


@dataclass
class TurnState:
    """Mutable facts about the running turn that the engine stores on the trace."""

    started: float = field(default_factory=time.perf_counter)
    path: str = "B"
    shown_text: bool = False
    first_text_ms: float | None = None
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usage_estimated: bool = False  # some of the counts are estimates: a provider reported no usage
    llm_calls: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    dropped_text: list[str] = field(default_factory=list)

    def elapsed_ms(self) -> float:
        return 1000 * (time.perf_counter() - self.started)

    def mark_text(self) -> None:
        if self.first_text_ms is None:
            self.first_text_ms = self.elapsed_ms()
        self.shown_text = True

    def add_usage(self, usage: Usage | None) -> None:
        if usage:
            self.prompt_tokens += usage.prompt_tokens
            self.completion_tokens += usage.completion_tokens
            self.usage_estimated = self.usage_estimated or usage.estimated


# The user's latest stored resume (contact details masked), or None: the one narrow way a flow reads it.
ResumeLoader = Callable[[], Awaitable[str | None]]


@dataclass
class FlowContext:
    message: str
    history: list[ChatMessage]
    zh: bool
    provider: LLMProvider
    tools: ToolRegistry
    intent: str
    options: FlowOptions
    settings: AssistantSettings = field(default_factory=AssistantSettings)
    state: TurnState = field(default_factory=TurnState)
    kb: KnowledgeBase | None = None  # the deep flows search it directly (facets, the chain)
    # who and where: flows that keep per-conversation state or act for a user (booking) need these
    conversation_id: str | None = None
    user_id: str | None = None
    client: str | None = None  # "ip:1.2.3.4" or "line:U123": per-client limits (bookings)
    channel: str = "web"
    turn_id: str | None = None  # the trace id: unique per turn
    # set by the engine for a logged-in user only, bound to that user: a flow cannot ask for anyone else's
    stored_resume: ResumeLoader | None = None


Flow = Callable[[FlowContext], AsyncIterator[Event]]
# A flow whose dialogue spans turns (booking) claims the next message of a conversation while that
# dialogue is open: (conversation_id, message) -> why it claims it, or None. Asked before routing.
Continuation = Callable[[str, str], Awaitable[str | None]]


class FlowRegistry:
    def __init__(self) -> None:
        self._flows: dict[tuple[str, str | None], tuple[str, Flow]] = {}
        self._continuations: list[tuple[str, Continuation]] = []

    def register(self, intent: str, tier: str | None, name: str, flow: Flow) -> None:
        self._flows[(intent, tier)] = (name, flow)

    def register_continuation(self, intent: str, check: Continuation) -> None:
        self._continuations.append((intent, check))

    async def continuation(self, conversation_id: str, message: str) -> tuple[str, str] | None:
        """(intent, reason) when an open multi-turn dialogue claims this message, else None."""
        for intent, check in self._continuations:
            reason = await check(conversation_id, message)
            if reason is not None:
                return intent, reason
        return None

    def lookup(self, intent: str, tier: str | None) -> tuple[str, Flow]:
        found = self._flows.get((intent, tier)) or self._flows.get((intent, None))
        if found is None:
            raise LookupError(f"no flow registered for intent={intent} tier={tier}")
        return found
