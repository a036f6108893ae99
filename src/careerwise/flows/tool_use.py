"""The streamed tool-use flow of seed 000 (career, simple tier).

Phase 1 streams with the tools offered and ``tool_choice: auto``; without a tool call the text goes
straight to the user (path B). With tool calls, phase 2 runs them concurrently and phase 3 streams
the grounded answer with the results in the conversation (path A). The buffer guard holds the first
N chunks of a round that may still turn into a tool call.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from careerwise import prompts
from careerwise.errors import LLMError, LLMToolsUnsupportedError, ToolArgumentsError
from careerwise.events import QUOTE_PHASE, DegradedEvent, DeltaEvent, Event, ToolCallEvent, ToolResultEvent
from careerwise.flows.base import FlowContext
from careerwise.knowledge import quotes
from careerwise.llm.accumulator import ToolCallAccumulator
from careerwise.llm.echo import EchoGuard
from careerwise.llm.guard import BufferGuard
from careerwise.llm.profile import profile_of
from careerwise.llm.repeats import RepeatGuard
from careerwise.llm.types import (
    ChatMessage,
    CompletionRequest,
    StreamPacing,
    ToolCallDelta,
    ToolCallRequest,
    ToolSpec,
)
from careerwise.tools.registry import Resolution, Tool, ToolOutput
from careerwise.tracing import background

log = logging.getLogger(__name__)

# quotes shown before a grounded answer, across the turn's tool calls (decision 0023)
QUOTES_SHOWN = 3
# beside an article's outline, fewer sentences: the headings already name the method's steps
QUOTES_WITH_OUTLINE = 2


@dataclass
class _Round:
    text: list[str] = field(default_factory=list)
    calls: list[ToolCallRequest] = field(default_factory=list)
    after_text: bool = False
    finish_reason: str | None = None


async def _stream_round(
    ctx: FlowContext,
    request: CompletionRequest,
    *,
    phase: int,
    guard_size: int,
    out: _Round,
    echo_of: str = "",
) -> AsyncIterator[Event]:
    """One LLM round with the buffer guard and at most ``llm_retries`` retries before visible text.
    ``echo_of``: the instruction the round answers (a tool's); an opening that says it back is not shown.

    Every caller streams this round's text to the user, so the round owns its stream pacing: the
    provider reads every chunk until the guard has shown text, then in paced batches (issue #10)."""
    attempt = 0

    def show(piece: str) -> DeltaEvent:
        """Text the user sees: kept as the round's, marked as shown, and its event."""
        out.text.append(piece)
        ctx.state.mark_text()
        return DeltaEvent(text=piece, phase=phase)

    while True:
        attempt += 1
        guard = BufferGuard(guard_size)
        acc = ToolCallAccumulator()
        pacing = StreamPacing()
        paced = replace(request, pacing=pacing)
        warmed = False  # a named tool call was seen and its tool told to warm up (or had nothing to warm)
        shown_before = ctx.state.shown_text
        round_shown = False
        out.text.clear()
        t0 = time.perf_counter()
        ctx.state.llm_calls += 1
        repeats = RepeatGuard()
        echo = EchoGuard(echo_of)
        try:
            # closed on every way out: after a loop is cut, the provider stops generating at once
            async with contextlib.aclosing(ctx.provider.stream(paced)) as stream:  # type: ignore[type-var]
                async for chunk in stream:
                    if chunk.usage is not None:
                        ctx.state.add_usage(chunk.usage)
                    if chunk.finish_reason:
                        out.finish_reason = chunk.finish_reason
                    if chunk.tool_deltas:
                        if not acc:
                            if round_shown:
                                out.after_text = True
                            else:
                                guard.drop()
                        for delta in chunk.tool_deltas:
                            acc.add(delta)
                        if phase == 1 and not warmed:
                            warmed = _warm(ctx, chunk.tool_deltas)
                    if chunk.text:
                        if acc:
                            ctx.state.dropped_text.append(chunk.text)  # text after a call began: not shown
                            continue
                        for piece in map(repeats.push, map(echo.push, guard.push(chunk.text))):
                            if not piece:
                                continue
                            round_shown = True
                            yield show(piece)
                            pacing.activate()  # after the first text is on its way: it is never held
                        if repeats.looping:
                            break
            if repeats.looping:
                # the model started the answer over: its copy is not shown and generation has stopped
                log.warning("tool_use: phase %d repeated a sentence; the answer ends before the copy", phase)
                background.count_failure(background.ANSWER_LOOP)
                out.finish_reason = "stop"
            if not acc and guard.holding:
                for piece in map(repeats.push, map(echo.push, guard.release())):
                    if piece:
                        yield show(piece)
            if not acc and not repeats.looping and (piece := repeats.push(echo.flush())):
                yield show(piece)
            if echo.dropped:
                log.info("tool_use: phase %d opened by restating its instruction; not shown", phase)
                ctx.state.dropped_text.extend(echo.dropped)
                ctx.state.timings["instruction_echo"] = ctx.state.timings.get("instruction_echo", 0.0) + 1
            if not acc and (rest := repeats.flush()):
                yield show(rest)
            ctx.state.dropped_text.extend(guard.dropped)
            if acc.nameless():
                log.warning(
                    "tool_use: %d streamed tool call(s) had no function name; ignored", acc.nameless()
                )
            out.calls = acc.calls()
            ctx.state.timings[f"phase{phase}_ms"] = ctx.state.timings.get(f"phase{phase}_ms", 0.0) + 1000 * (
                time.perf_counter() - t0
            )
            return
        except LLMError as exc:
            # never retry once the user has seen text: a retry would show a second, different answer
            if (
                exc.retryable
                and not ctx.state.shown_text
                and not shown_before
                and attempt <= ctx.options.llm_retries
            ):
                ctx.state.retries += 1
                log.warning("tool_use: retrying phase %d after %s: %s", phase, type(exc).__name__, exc)
                continue
            raise


# warm-ups in flight; a task needs a strong reference until it ends
_WARMING: set[asyncio.Task[None]] = set()


def _warm(ctx: FlowContext, deltas: Sequence[ToolCallDelta]) -> bool:
    """When the first tool-call delta names an offered tool, let the tool start the work that does not
    depend on the arguments still streaming (searchKnowledge embeds the user's message: decision 0010);
    returns whether that moment has come. A first turn only: a follow-up's message is not searched
    (``_searchable_message``). A warm-up that fails is logged; the tool's own run then does the same work
    and reports its failure as every tool failure is reported."""
    name = next((d.name for d in deltas if d.name), None)
    if name is None:
        return False
    tool = next((t for t in ctx.tools.for_intent(ctx.intent) if t.spec.name == name), None)
    warm = getattr(tool, "warm", None)
    if warm is None or ctx.history:
        return True
    task: asyncio.Task[None] = asyncio.create_task(warm(ctx.message), name=f"careerwise-warm-{name}")
    _WARMING.add(task)
    task.add_done_callback(_warm_done)
    return True


def _warm_done(task: asyncio.Task[None]) -> None:
    _WARMING.discard(task)
    what = f"tool_use: {task.get_name()} failed (the tool's run will try again)"
    background.task_failed(task, task=background.TOOL_WARM, logger=log, what=what, level=logging.WARNING)


def _no_constant(name: str) -> Any:
    raise ToolArgumentsError(f"arguments hold {name}, which is not a JSON number")


def _finite(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise ToolArgumentsError(f"the number {literal[:20]} is too large")
    return value


def _parse_arguments(raw: str) -> dict[str, Any]:
    """The model's arguments as a JSON object, or ToolArgumentsError. A number no float holds (``1e999``)
    and ``NaN``/``Infinity`` are refused here: such a value could not be stored in a trace or sent as
    JSON, and a tool would have to turn it into an integer."""
    try:
        value = json.loads(raw or "{}", parse_constant=_no_constant, parse_float=_finite)
    except json.JSONDecodeError as exc:
        raise ToolArgumentsError(f"arguments are not valid JSON ({exc.msg} at position {exc.pos})") from exc
    except (ValueError, RecursionError) as exc:  # an integer of thousands of digits; nesting too deep
        raise ToolArgumentsError(f"arguments are not valid JSON ({type(exc).__name__})") from exc
    if not isinstance(value, dict):
        raise ToolArgumentsError("arguments must be a JSON object")
    return value


@dataclass
class _Prepared:
    call: ToolCallRequest
    event: ToolCallEvent
    tool: Tool | None
    resolution: Resolution | None
    error: str | None


def _prepare(
    ctx: FlowContext,
    call: ToolCallRequest,
    offered: dict[str, Tool],
    index: int,
    after_text: bool,
    *,
    message: str = "",
) -> _Prepared:
    """``message``: the user's message, for a tool that searches it beside its arguments (``""``: none;
    see ``_searchable_message``)."""
    tool = offered.get(call.name)
    profile = profile_of(ctx.provider)
    error: str | None = None
    resolution: Resolution | None = None
    requested: dict[str, Any] = {}
    raw: str | None = None
    if index >= ctx.options.max_tool_calls:
        error = f"too many tool calls in one turn (limit {ctx.options.max_tool_calls})"
    elif tool is None:
        error = f"unknown tool {call.name!r}"
    else:
        try:
            requested = _parse_arguments(call.arguments)
            resolution = replace(
                tool.resolve(requested, ctx.settings),
                message=message,
                budget_tokens=profile.passage_budget_tokens,
                quotes=profile.answer_quotes,
            )
        except ToolArgumentsError as exc:
            error = str(exc)
            raw = call.arguments
    if error is not None:
        # refused, not run: the model reads why as the call's result; the trace and the metrics
        # (careerwise_tool_calls ok="false") keep it too
        log.info("tool_use: call %s to %s refused: %s", call.id, call.name, error)
    event = ToolCallEvent(
        call_id=call.id,
        name=call.name,
        requested_arguments=resolution.requested if resolution else requested,
        effective_arguments=resolution.effective if resolution else {},
        reason=resolution.reason if resolution else f"not run: {error}",
        raw_arguments=raw,
        after_text=after_text,
    )
    return _Prepared(call, event, tool, resolution, error)


def _searchable_message(ctx: FlowContext, calls: Sequence[ToolCallRequest], tool_round: int) -> str:
    """The user's message when it may stand beside the model's query (issue #3, decision 0010), else "".

    Only where it was measured: the first tool round of a first turn (no history: a follow-up such as
    "and in English?" means nothing searched alone) with a single call (several calls split the question
    into facets, and the one message would pull every facet's search to the same passages)."""
    if tool_round != 1 or len(calls) != 1 or ctx.history:
        return ""
    return ctx.message


def _refused(call: ToolCallRequest, why: str, *, after_text: bool) -> ToolCallEvent:
    try:
        requested, raw = _parse_arguments(call.arguments), None
    except ToolArgumentsError:
        requested, raw = {}, call.arguments
    return ToolCallEvent(
        call_id=call.id,
        name=call.name,
        requested_arguments=requested,
        effective_arguments={},
        reason=f"not run: {why}",
        raw_arguments=raw,
        after_text=after_text,
    )


async def _run_one(ctx: FlowContext, p: _Prepared) -> tuple[ToolOutput | None, str | None, float]:
    t0 = time.perf_counter()
    if p.error is not None or p.tool is None or p.resolution is None:
        return None, p.error, 0.0
    try:
        output = await p.tool.run(p.resolution, ctx.settings)
        return output, None, 1000 * (time.perf_counter() - t0)
    except Exception as exc:
        log.exception("tool %s failed", p.call.name)
        return None, f"{type(exc).__name__}: {exc}", 1000 * (time.perf_counter() - t0)


async def _coverage_note(ctx: FlowContext, offered: dict[str, Tool]) -> str:
    """What the offered tools hold for this message (``coverage`` of searchKnowledge: the titles its
    search of the message matches), as one line for the phase-1 prompt. A pre-check that fails leaves the
    line out and the turn goes on: the failure is logged and kept on the trace (``coverage_failed``)."""
    for tool in offered.values():
        coverage = getattr(tool, "coverage", None)
        if coverage is None:
            continue
        t0 = time.perf_counter()
        try:
            titles: list[str] = await coverage(ctx.message, ctx.settings)
        except Exception:
            log.exception("tool_use: the coverage pre-check of %s failed; the prompt goes without it", tool)
            ctx.state.timings["coverage_failed"] = 1.0
            return ""
        finally:
            ctx.state.timings["coverage_ms"] = 1000 * (time.perf_counter() - t0)
        return prompts.coverage_note(titles, ctx.zh)
    return ""


async def tool_use_flow(ctx: FlowContext) -> AsyncIterator[Event]:
    opts = ctx.options
    offered: dict[str, Tool] = {}
    if opts.supports_tools:
        offered = {t.spec.name: t for t in ctx.tools.for_intent(ctx.intent)}
    missing = ctx.tools.unavailable_for_intent(ctx.intent)
    if missing:
        yield DegradedEvent(
            reason="knowledge_unavailable", message=prompts.line("knowledge_unavailable", ctx.zh)
        )
    elif not opts.supports_tools:
        yield DegradedEvent(reason="tools_unsupported", message=prompts.line("tools_unsupported", ctx.zh))
    specs: Sequence[ToolSpec] = [t.spec for t in offered.values()]
    # the persona is the same for every question (a provider may keep it evaluated); what the knowledge
    # base holds for this question follows the question itself, where a small model weighs it most
    note = await _coverage_note(ctx, offered) if offered and profile_of(ctx.provider).coverage_hint else ""
    messages: list[ChatMessage] = [
        ChatMessage(role="system", content=prompts.career_system(ctx.zh, persona=ctx.settings.system_prompt)),
        *ctx.history,
        ChatMessage(role="user", content=f"{ctx.message}\n\n{note}" if note else ctx.message),
    ]
    tool_rounds = 0
    retry_tools = True
    quoted = False
    instruction = ""  # the last round's tools' instructions on how to answer from their results
    while True:
        final = not specs or not retry_tools or tool_rounds >= opts.max_tool_rounds
        phase = 1 if tool_rounds == 0 else 3
        request = CompletionRequest(
            messages=list(messages),
            tools=specs if tool_rounds else (specs if not final else ()),
            tool_choice="none" if final else "auto",
            max_tokens=opts.phase1_max_tokens if phase == 1 else opts.phase3_max_tokens,
            temperature=opts.phase1_temperature if phase == 1 else opts.phase3_temperature,
            metadata={"purpose": f"phase{phase}"},  # names the LLM-call span (tracing/llm_calls.py)
        )
        rnd = _Round()
        try:
            async for event in _stream_round(
                ctx,
                request,
                phase=phase,
                guard_size=0 if final else opts.buffer_guard_chunks,
                out=rnd,
                echo_of=instruction,
            ):
                yield event
        except LLMToolsUnsupportedError as exc:
            if ctx.state.shown_text:
                raise
            log.warning("tool_use: provider refused tools, answering without them: %s", exc)
            yield DegradedEvent(reason="tools_unsupported", message=prompts.line("tools_unsupported", ctx.zh))
            specs, offered = (), {}
            continue
        if not rnd.calls and specs and not ctx.state.shown_text and not "".join(rnd.text).strip():
            # nothing to show and nothing to run (the output was an echoed tool schema, or empty): the model
            # is asked once more with no tools at all, so the user never gets an empty answer
            log.warning("tool_use: phase %d gave no text and no call; answering again without tools", phase)
            specs, offered = (), {}
            continue
        if not rnd.calls or final:
            if rnd.calls:
                # tool_choice "none" was ignored (weaker models do; so does one obeying an injected
                # instruction): the calls are shown as not run, and the model is asked once more with no
                # tools at all, so the user never gets an empty answer
                log.warning(
                    "tool_use: model asked for tools in the final round; ignored %d call(s)", len(rnd.calls)
                )
                for call in rnd.calls:
                    yield _refused(call, "the final round answers without tools", after_text=bool(rnd.text))
                if not "".join(rnd.text).strip() and specs:
                    specs, offered = (), {}
                    continue
            return
        tool_rounds += 1
        ctx.state.timings.setdefault("phase2_started_ms", ctx.state.elapsed_ms())
        if rnd.after_text:
            yield DeltaEvent(text=prompts.line("tool_after_text", ctx.zh), phase=1, notice=True)
        message = _searchable_message(ctx, rnd.calls, tool_rounds)
        prepared = [
            _prepare(ctx, c, offered, i, rnd.after_text, message=message) for i, c in enumerate(rnd.calls)
        ]
        for p in prepared:
            yield p.event  # effective arguments are final before the user sees anything
        t2 = time.perf_counter()
        results = await asyncio.gather(*(_run_one(ctx, p) for p in prepared))
        ctx.state.timings["phase2_ms"] = ctx.state.timings.get("phase2_ms", 0.0) + 1000 * (
            time.perf_counter() - t2
        )
        messages.append(ChatMessage(role="assistant", content="".join(rnd.text), tool_calls=tuple(rnd.calls)))
        retry_tools = False
        failed_run = False
        if profile_of(ctx.provider).answer_quotes:
            # a slow small model, whose grounded answer starts with the quotes anyway: holding its first
            # sentence to check for a restated instruction delays nothing the user is waiting for
            instruction = " ".join(output.instruction for output, _, _ in results if output is not None)
        for p, (output, error, ms) in zip(prepared, results, strict=True):
            if output is not None:
                ctx.state.path = "A"
                yield ToolResultEvent(
                    call_id=p.call.id,
                    name=p.call.name,
                    ok=True,
                    returned=output.returned,
                    sources=output.sources,
                    duration_ms=round(ms, 2),
                )
                messages.append(ChatMessage(role="tool", content=output.content, tool_call_id=p.call.id))
            else:
                yield ToolResultEvent(
                    call_id=p.call.id,
                    name=p.call.name,
                    ok=False,
                    returned=0,
                    error=error,
                    duration_ms=round(ms, 2),
                )
                if p.resolution is None:
                    retry_tools = True  # the model gets its argument error back once
                    hint = "Call the tool again with valid arguments, or answer without it."
                else:
                    failed_run = True
                    hint = "The search failed. Answer from general knowledge and cite no sources."
                messages.append(
                    ChatMessage(role="tool", content=f"Error: {error}. {hint}", tool_call_id=p.call.id)
                )
        if failed_run:
            yield DegradedEvent(reason="tool_failed", message=prompts.line("tool_failed", ctx.zh))
        if not quoted and profile_of(ctx.provider).answer_quotes:
            chosen = [q for output, _, _ in results if output is not None for q in output.quotes]
            outline = next(
                (o.outline for o, _, _ in results if o is not None and o.outline is not None), None
            )
            if chosen or outline is not None:
                # Summer's own sentences, shown while the model reads the passages (decision 0023). They
                # are not the model's text: a phase-3 failure before its first token may still retry.
                quoted = True
                if ctx.state.first_text_ms is None:
                    ctx.state.first_text_ms = ctx.state.elapsed_ms()
                shown = QUOTES_WITH_OUTLINE if outline is not None else QUOTES_SHOWN
                yield DeltaEvent(text=quotes.render(chosen[:shown], ctx.zh, outline), phase=QUOTE_PHASE)
