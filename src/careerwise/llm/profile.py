"""What a flow needs to know about the provider it runs on, to size its work to it.

The seeds' design is for a fast hosted model. A 1.5B model on two CPU cores reads a prompt at about a
hundred tokens a second and writes about eight: every passage put in front of it costs seconds, and
every extra generation costs tens of seconds. A provider declares a :class:`ProviderProfile`; flows read
it through :func:`profile_of` (which looks through the wrappers every provider is built with).

- ``tool_calling``: ``native`` (the server returns tool calls as tool calls), ``text`` (the model writes
  them as text; ``llm/clean.py`` recognises them) or ``constrained`` (the provider constrains the first
  output to a well-formed call or plain text: the embedded model).
- ``passage_budget_tokens``: how many tokens of retrieved passages phase 3 gets; ``None`` means whole
  passages. The tool keeps the sentences most related to the question within it.
- ``slow``: generation in single-digit tokens a second. A medium-tier question is then answered by the
  streamed tool-use flow instead of the prompt chain (decision 0014), so text shows in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ToolCalling = Literal["native", "text", "constrained"]


@dataclass(frozen=True)
class ProviderProfile:
    tool_calling: ToolCalling = "native"
    passage_budget_tokens: int | None = None
    slow: bool = False


DEFAULT_PROFILE = ProviderProfile()
# tokens of passages a slow provider reads: a few seconds of prompt reading on two cores
SLOW_PASSAGE_BUDGET = 320


def profile_of(provider: object) -> ProviderProfile:
    """The profile of the provider inside ``provider``'s wrappers (each keeps it as ``inner`` or
    ``primary``); the default profile (a fast provider with native tool calls) if none declares one."""
    for _ in range(10):
        profile = getattr(provider, "profile", None)
        if isinstance(profile, ProviderProfile):
            return profile
        inner = getattr(provider, "inner", None) or getattr(provider, "primary", None)
        if inner is None:
            break
        provider = inner
    return DEFAULT_PROFILE
