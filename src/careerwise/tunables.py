"""The per-turn tunables, each declared once: its type, bounds, default and description.

Nothing else declares them again:

- :class:`careerwise.config.Settings` inherits :class:`Tunables`: the environment (``CAREERWISE_*``)
  gives the configured value, checked at start-up against these bounds;
- :class:`careerwise.assistant_settings.AssistantSettings` inherits :class:`Tunables` and
  :class:`Deadlines`: a value stored for one assistant is checked against the same bounds, so a
  configured value is always one an assistant could store, and the reverse;
- :class:`careerwise.flows.base.FlowOptions` takes its defaults from them (a dataclass carries no bounds).

The three deadlines differ by type only: unset in the configuration means "the provider's default"
(``Settings.resolved_*``), so ``Settings`` declares them optional, while a turn always has a number
(:class:`Deadlines`, whose defaults are a remote provider's). Both declarations take their bounds
from :data:`Seconds`.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

__all__ = ["DEADLINE_KEYS", "TUNABLE_KEYS", "Deadlines", "Seconds", "Tunables"]

# a deadline in seconds: positive, at most an hour
Seconds = Annotated[float, Field(gt=0, le=3600)]


class Tunables(BaseModel):
    """Per-turn values an operator configures and an assistant may override (``careerwise settings``).

    No model configuration of its own: the models that inherit it set theirs (``Settings`` reads the
    environment, ``AssistantSettings`` is frozen).
    """

    use_full_retrieval_range: bool = Field(
        default=False, description="Return the configured_top_k passages whatever top_k the model asks for."
    )
    configured_top_k: int = Field(default=12, ge=1, le=50, description="top_k used when the override is on.")
    search_default_top_k: int = Field(default=3, ge=1, le=50)
    rerank_candidates: int = Field(default=12, ge=1, le=200)
    buffer_guard_chunks: int = Field(default=3, ge=0, le=20, description="Phase-1 chunks held back (N).")
    phase1_max_tokens: int = Field(default=512, ge=16, le=8192)
    phase1_temperature: float = Field(default=0.7, ge=0, le=2)
    phase3_max_tokens: int = Field(default=384, ge=16, le=8192)
    phase3_temperature: float = Field(default=0.5, ge=0, le=2)
    max_tool_rounds: int = Field(default=2, ge=1, le=4)


class Deadlines(BaseModel):
    """The deadlines of one turn, resolved: the defaults are a remote provider's (the configuration gives
    the embedded model longer ones, ``Settings.resolved_*``)."""

    turn_deadline: Seconds = Field(default=120.0, description="Whole-turn deadline, seconds.")
    deep_step_timeout: Seconds = Field(default=30.0, description="Each deep-flow step, seconds.")
    deep_turn_timeout: Seconds = Field(default=75.0, description="The whole deep attempt, seconds.")


TUNABLE_KEYS: tuple[str, ...] = tuple(Tunables.model_fields)
DEADLINE_KEYS: tuple[str, ...] = tuple(Deadlines.model_fields)
