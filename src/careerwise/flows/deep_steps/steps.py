"""One LLM step of a deep answer, non-streamed, under a deadline.

A step collects the provider's stream into one reply, within the step deadline of a :class:`Budget`
(itself capped by the deep attempt's deadline). ``ask_text`` returns non-empty text; ``ask_json``
returns a reply validated by a Pydantic model. Either retries once: a retryable provider failure
before any reply, or a reply that cannot be used (the reason goes back to the model). A step that
cannot give a usable result raises :class:`careerwise.errors.StepFailed` with a stable ``code``
(``timeout``, ``turn_deadline``, ``llm_unavailable``, ``llm_error``, ``empty``, ``invalid_json``).
Given ``emit``, a step sends a ``waiting`` progress event every ``deep_heartbeat`` seconds while it
runs, and no beat outlives the step. Usage, calls, retries and the step's time are counted on the
turn's state.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from pydantic import BaseModel

from careerwise.errors import LLMError, LLMTimeoutError, LLMUnavailableError, StepFailed
from careerwise.events import Event, ProgressEvent
from careerwise.flows.base import FlowContext
from careerwise.flows.deep_steps.replies import parse_model
from careerwise.llm.clean import estimate_tokens
from careerwise.llm.profile import DEFAULT_PROFILE, ProviderProfile, profile_of
from careerwise.llm.types import ChatMessage, CompletionRequest

log = logging.getLogger(__name__)

CHAIN_TEMPERATURE = 0.5
REFLECTION_TEMPERATURE = 0.3

T = TypeVar("T", bound=BaseModel)
Emit = Callable[[Event], None]

# --------------------------------------------------------------------------- failures and deadlines


class Budget:
    """The deep attempt's deadline (``deep_turn_timeout``, the turn's ceiling) and each step's.

    A step's deadline follows the provider's speed when its profile knows it: reading the step's prompt
    and writing its planned output (``max_tokens``), with the profile's safety factor and floor
    (:meth:`ProviderProfile.step_deadline`), capped by what is left of the attempt. A provider of unknown
    speed, or a step that names no planned output, gets the fixed ``deep_step_timeout``."""

    def __init__(self, step: float, total: float, profile: ProviderProfile = DEFAULT_PROFILE) -> None:
        self.step = step
        self.profile = profile
        self.deadline = time.monotonic() + total

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def step_timeout(self, messages: Sequence[ChatMessage] = (), max_tokens: int = 0) -> float:
        left = self.remaining()
        if left <= 0:
            raise StepFailed("turn_deadline", "the deep answer ran out of time")
        if self.profile.speed_known and max_tokens > 0:
            prompt = sum(estimate_tokens(m.content) for m in messages)
            return self.profile.step_deadline(prompt, max_tokens, ceiling=left)
        return min(self.step, left)


def budget_for(ctx: FlowContext) -> Budget:
    """The budget of a deep attempt on ``ctx``'s provider, with its profile as it stands now."""
    return Budget(ctx.options.deep_step_timeout, ctx.options.deep_turn_timeout, profile_of(ctx.provider))


# --------------------------------------------------------------------------- calling the LLM


async def complete(ctx: FlowContext, request: CompletionRequest) -> str:
    """One completion, non-streamed: the provider's stream collected. Usage and calls are counted."""
    ctx.state.llm_calls += 1
    parts: list[str] = []
    async for chunk in ctx.provider.stream(request):
        ctx.state.add_usage(chunk.usage)
        if chunk.text:
            parts.append(chunk.text)
    return "".join(parts)


HEARTBEAT_TASK = "careerwise-heartbeat"  # the name prefix of the heartbeat tasks (tests look for leftovers)


@asynccontextmanager
async def heartbeat(emit: Emit | None, step: str, interval: float) -> AsyncIterator[None]:
    """While the body runs, a ``progress`` event (stage ``waiting``, the step, the seconds so far) every
    ``interval`` seconds, so a long LLM call (a slow provider's, such as the embedded model's) does not
    leave the stream silent. The beat is cancelled and awaited before the body's caller goes on, so no beat can follow
    (or be reordered after) the step's own events; nothing is left running when the step ends, fails or
    is cancelled."""
    if emit is None or interval <= 0:
        yield
        return
    started = time.monotonic()

    async def beat() -> None:
        while True:
            await asyncio.sleep(interval)
            elapsed = time.monotonic() - started
            emit(
                ProgressEvent(
                    stage="waiting",
                    detail=f"{step}: {elapsed:.0f} s",
                    step=step,
                    elapsed_s=round(elapsed, 1),
                )
            )

    task = asyncio.create_task(beat(), name=f"{HEARTBEAT_TASK}:{step}")
    try:
        yield
    finally:
        task.cancel()  # suspended in its sleep: it cannot emit again
        await asyncio.wait({task})  # gone before the caller emits its next event (never swallows a cancel)


def _failure(exc: LLMError) -> StepFailed:
    if isinstance(exc, LLMTimeoutError):
        return StepFailed("timeout", str(exc))
    if isinstance(exc, LLMUnavailableError):
        return StepFailed("llm_unavailable", str(exc), unreachable=True)
    return StepFailed("llm_error", str(exc))


async def _attempts(
    ctx: FlowContext,
    messages: list[ChatMessage],
    *,
    temperature: float,
    max_tokens: int,
    budget: Budget,
    label: str,
    accept: Callable[[str], object],
    note: Callable[[str], str],
    emit: Emit | None = None,
    json_schema: dict[str, Any] | None = None,
) -> object:
    """Up to two attempts of one step under one step deadline. ``accept`` turns the reply into the
    result or raises ``ValueError`` (the reason goes back to the model once). With ``emit``, a heartbeat
    reports the step as waiting every ``deep_heartbeat`` seconds while it runs. ``json_schema``
    constrains the reply where the provider can (a grammar on the embedded model, ``response_format``
    on a server); ``accept`` still checks it."""
    started = time.perf_counter()
    conversation = list(messages)
    try:
        async with (
            heartbeat(emit, label, ctx.options.deep_heartbeat),
            asyncio.timeout(budget.step_timeout(messages, max_tokens)),
        ):
            attempt = 0
            while True:
                attempt += 1
                request = CompletionRequest(
                    messages=conversation,
                    max_tokens=max_tokens,
                    temperature=temperature,
                    metadata={"purpose": label},  # names the LLM-call span (tracing/llm_calls.py)
                    json_schema=json_schema,
                )
                try:
                    reply = await complete(ctx, request)
                except LLMError as exc:
                    if exc.retryable and attempt == 1 and ctx.options.llm_retries > 0:
                        ctx.state.retries += 1
                        log.warning("deep %s: retrying after %s: %s", label, type(exc).__name__, exc)
                        continue
                    raise _failure(exc) from exc
                try:
                    return accept(reply)
                except ValueError as exc:
                    code = "empty" if not reply.strip() else "invalid_json"
                    if attempt >= 2:
                        raise StepFailed(code, str(exc)) from exc
                    ctx.state.retries += 1
                    log.warning("deep %s: %s, asking once more: %s", label, code, exc)
                    conversation = [
                        *messages,
                        ChatMessage(role="assistant", content=reply),
                        ChatMessage(role="user", content=note(str(exc))),
                    ]
    except TimeoutError as exc:
        raise StepFailed("timeout", f"{label} took longer than its deadline") from exc
    finally:
        ctx.state.timings[f"{label}_ms"] = 1000 * (time.perf_counter() - started)


def _json_note(error: str) -> str:
    return (
        "你的回覆無法使用 / Your reply could not be used: "
        f"{error[:400]}\n請只回傳一個符合上述 schema 的 JSON 物件 / Reply with one JSON object that follows "
        "the schema above, and nothing else."
    )


def _text_note(error: str) -> str:
    return "你的回覆是空的，請直接回答上面的要求。/ Your reply was empty; please answer the request above."


def _non_empty(reply: str) -> str:
    text = reply.strip()
    if not text:
        raise ValueError("the reply was empty")
    return text


async def ask_text(
    ctx: FlowContext,
    messages: list[ChatMessage],
    *,
    temperature: float,
    max_tokens: int,
    budget: Budget,
    label: str,
    emit: Emit | None = None,
) -> str:
    result = await _attempts(
        ctx,
        messages,
        temperature=temperature,
        max_tokens=max_tokens,
        budget=budget,
        label=label,
        emit=emit,
        accept=_non_empty,
        note=_text_note,
    )
    assert isinstance(result, str)
    return result


async def ask_json(
    ctx: FlowContext,
    messages: list[ChatMessage],
    model: type[T],
    *,
    temperature: float,
    max_tokens: int,
    budget: Budget,
    label: str,
    emit: Emit | None = None,
    json_schema: dict[str, Any] | None = None,
) -> T:
    def accept(reply: str) -> T:
        return parse_model(model, reply)

    result = await _attempts(
        ctx,
        messages,
        temperature=temperature,
        max_tokens=max_tokens,
        budget=budget,
        label=label,
        emit=emit,
        accept=accept,
        note=_json_note,
        json_schema=json_schema,
    )
    assert isinstance(result, model)
    return result
