"""One model step of the review whose reply is JSON constrained by a schema.

The request carries the schema (``CompletionRequest.json_schema``): the embedded model samples under a
grammar built from it, so its reply is that JSON by construction (the right keys, the right count of
items, scores 1–5, strings within their length); an OpenAI-compatible server gets it as
``response_format``. The reply is still validated with Pydantic, and one that fails (a server that
ignored the schema, a semantic check) goes back to the model once with the reason. The step runs under
the deep answers' step deadline, with their heartbeat, retries and failure codes (``flows/deep_steps/``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, TypeVar

from pydantic import BaseModel

from careerwise.errors import LLMError, LLMTimeoutError, LLMUnavailableError, StepFailed
from careerwise.flows import deep_steps
from careerwise.flows.base import FlowContext
from careerwise.flows.deep_steps import Budget, Emit
from careerwise.llm.types import ChatMessage, CompletionRequest

log = logging.getLogger(__name__)
T = TypeVar("T", bound=BaseModel)


def _failure(exc: LLMError) -> StepFailed:
    if isinstance(exc, LLMTimeoutError):
        return StepFailed("timeout", str(exc))
    if isinstance(exc, LLMUnavailableError):
        return StepFailed("llm_unavailable", str(exc), unreachable=True)
    return StepFailed("llm_error", str(exc))


def _note(error: str) -> str:
    return (
        "你的回覆無法使用 / Your reply could not be used: "
        f"{error[:400]}\n請只回傳一個符合要求的 JSON 物件 / Reply with one JSON object as asked, and nothing else."
    )


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
    """The reply as ``model``; :class:`StepFailed` when two replies fail validation, the step's deadline
    passes or the provider fails (``unreachable`` when it cannot be reached)."""
    started = time.perf_counter()
    conversation = list(messages)
    try:
        async with (
            deep_steps.heartbeat(emit, label, ctx.options.deep_heartbeat),
            asyncio.timeout(budget.step_timeout()),
        ):
            attempt = 0
            while True:
                attempt += 1
                request = CompletionRequest(
                    messages=conversation,
                    max_tokens=max_tokens,
                    temperature=temperature,
                    metadata={"purpose": label},  # names the LLM-call span (tracing/llm_calls.py)
                    json_schema=schema,
                )
                try:
                    reply = await deep_steps.complete(ctx, request)
                except LLMError as exc:
                    if exc.retryable and attempt == 1 and ctx.options.llm_retries > 0:
                        ctx.state.retries += 1
                        log.warning("resume %s: retrying after %s: %s", label, type(exc).__name__, exc)
                        continue
                    raise _failure(exc) from exc
                try:
                    return deep_steps.parse_model(model, reply)
                except ValueError as exc:
                    code = "empty" if not reply.strip() else "invalid_json"
                    if attempt >= 2:
                        raise StepFailed(code, str(exc)) from exc
                    ctx.state.retries += 1
                    log.warning("resume %s: %s, asking once more: %s", label, code, exc)
                    conversation = [
                        *messages,
                        ChatMessage(role="assistant", content=reply),
                        ChatMessage(role="user", content=_note(str(exc))),
                    ]
    except TimeoutError as exc:
        raise StepFailed("timeout", f"{label} took longer than its deadline") from exc
    finally:
        ctx.state.timings[f"{label}_ms"] = 1000 * (time.perf_counter() - started)
