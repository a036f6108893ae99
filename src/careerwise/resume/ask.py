"""One model step of the review whose reply is JSON constrained by a schema.

The request carries the schema (``CompletionRequest.json_schema``): the embedded model samples under a
grammar built from it, so its reply is that JSON by construction (the right keys, the right count of
items, scores 1–5, strings within their length); an OpenAI-compatible server gets it as
``response_format``. The reply is still validated with Pydantic, and one that fails (a server that
ignored the schema, a semantic check) goes back to the model once with the reason. The step is the deep
answers' JSON step (``deep_steps.ask_json``): the same deadline sized to the provider's speed, heartbeat,
retries and failure codes.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from careerwise.flows import deep_steps
from careerwise.flows.base import FlowContext
from careerwise.flows.deep_steps import Budget, Emit
from careerwise.llm.types import ChatMessage

T = TypeVar("T", bound=BaseModel)


async def ask_schema(
    ctx: FlowContext,
    messages: list[ChatMessage],
    model: type[T],
    schema: dict[str, Any],
    *,
    temperature: float,
    max_tokens: int,
    budget: Budget,
    label: str,
    emit: Emit | None = None,
) -> T:
    """The reply as ``model``; :class:`~careerwise.errors.StepFailed` when two replies fail validation,
    the step's deadline passes or the provider fails (``unreachable`` when it cannot be reached)."""
    return await deep_steps.ask_json(
        ctx,
        messages,
        model,
        temperature=temperature,
        max_tokens=max_tokens,
        budget=budget,
        label=label,
        emit=emit,
        json_schema=schema,
    )
