"""The engine: one turn from a message to a stream of events, stored as it goes.

The user's message is stored before any LLM call; the assistant's message ends with a status
(ok / error / cancelled); the trace is written from the very events the caller received. The turn's SQL
is in store/turns.py: this module says what is stored when, never how.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from careerwise import prompts
from careerwise.assistant_settings import DEFAULT_ASSISTANT, AssistantSettings, SettingsStore
from careerwise.errors import (
    CareerWiseError,
    ConversationBusyError,
    LLMError,
    LLMTimeoutError,
    UserInputError,
)
from careerwise.events import DoneEvent, ErrorEvent, Event, RouteEvent
from careerwise.flows.base import Flow, FlowContext, FlowOptions, FlowRegistry, TurnState
from careerwise.flows.compact import design_of
from careerwise.flows.resume_context import stored_resume_loader
from careerwise.llm.profile import profile_of
from careerwise.llm.types import ChatMessage, LLMProvider
from careerwise.routing.router import ContextualRouter, RouteDecision, Router
from careerwise.store import Database
from careerwise.store.models import new_id
from careerwise.store.recovery import (
    LEASE_SECONDS,
    ProcessIdentity,
    ProcessLease,
    close_interrupted_replies,
)
from careerwise.store.turns import TraceRows, TurnClosing, TurnOpening, TurnStore
from careerwise.tools.registry import ToolRegistry
from careerwise.tracing.llm_calls import ROUTING_SINK, ObservedProvider
from careerwise.tracing.recorder import TraceRecorder
from careerwise.tracing.telemetry import Telemetry
from careerwise.tracing.turn import TurnEnd, TurnObserver, TurnStart

if TYPE_CHECKING:
    from careerwise.budget import TokenBudget
    from careerwise.knowledge.service import KnowledgeBase

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HistoryItem:
    role: str
    content: str


@dataclass(frozen=True)
class _Opened:
    """The ids of what :meth:`Engine._open` stored."""

    conversation_id: str
    user_message_id: str
    assistant_message_id: str
    trace_id: str
    took_ms: float = 0.0  # storing it, waits included (the trace's timings: store_turn_ms)


@dataclass(frozen=True)
class TurnRequest:
    message: str
    history: list[HistoryItem] | None = None
    conversation_id: str | None = None
    channel: str = "web"
    user_id: str | None = None
    # whose daily token budget this turn spends: the user (user_id) or, without one, e.g. "ip:1.2.3.4"
    budget_key: str | None = None
    # a second budget the turn also spends, shared by a group of owners (the young accounts of one IP,
    # e.g. "young-ip:1.2.3.4"): checked and counted beside the owner's, against its own ceiling
    budget_group: str | None = None
    # who is asking, for per-client limits in flows (bookings): "ip:1.2.3.4", "line:U123"
    client: str | None = None
    # a turn whose route and flow are already known (a resume upload): skips the router and the registry
    route: RouteDecision | None = None
    flow: tuple[str, Flow] | None = None
    # which assistant answers (its persona, knowledge domains, settings); unknown -> 404, disabled -> 409
    assistant: str = DEFAULT_ASSISTANT

    @property
    def budget_owner(self) -> str | None:
        return self.budget_key or (f"user:{self.user_id}" if self.user_id else None)


@dataclass
class EngineLimits:
    max_message_chars: int = 4000
    max_history_messages: int = 40
    turn_deadline: float = 120.0


@dataclass
class Engine:
    db: Database
    provider: LLMProvider
    tools: ToolRegistry
    router: Router
    flows: FlowRegistry
    options: FlowOptions
    settings_store: SettingsStore
    limits: EngineLimits = field(default_factory=EngineLimits)
    kb: KnowledgeBase | None = None
    budget: TokenBudget | None = None
    telemetry: Telemetry = field(default_factory=Telemetry)
    assistant_id: str = DEFAULT_ASSISTANT  # the default assistant: a request that names none gets her
    # (provider name, model) -> provider, from the assistant's settings each turn (provider_registry.ProviderRegistry)
    pick_provider: Callable[[str, str], LLMProvider] | None = None
    # this process's row in app_processes: pending replies are stamped with it once it is started, so
    # another process can tell a reply whose writer died from one still being written (store/recovery.py)
    process: ProcessLease | None = None
    # the turn's reads and writes (store/turns.py), on ``db``
    turns: TurnStore = field(init=False)
    _running: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.turns = TurnStore(self.db)

    def validate(self, req: TurnRequest) -> str:
        message = req.message.strip() if isinstance(req.message, str) else ""
        if not message:
            raise UserInputError("message must not be empty")
        if len(req.message) > self.limits.max_message_chars:
            raise UserInputError(
                f"message is {len(req.message)} characters; the limit is {self.limits.max_message_chars}"
            )
        for item in req.history or []:
            if item.role not in ("user", "assistant"):
                raise UserInputError(f"history role must be 'user' or 'assistant', got {item.role!r}")
        return message

    async def _history(self, req: TurnRequest, *, before: str | None = None) -> list[ChatMessage]:
        """The conversation's finished messages, oldest first; ``before``: this turn's own user message,
        which is left out (read after the turn is stored, so a reply another process finished while this
        turn waited is in it)."""
        if req.history is not None:
            items = req.history[-self.limits.max_history_messages :]
            return [
                ChatMessage(role="user" if h.role == "user" else "assistant", content=h.content)
                for h in items
            ]
        if req.conversation_id is None:
            return []
        rows = await self.turns.history(
            req.conversation_id, before=before or "", limit=self.limits.max_history_messages
        )
        return [
            ChatMessage(role="user" if role == "user" else "assistant", content=content)
            for role, content in reversed(rows)
        ]

    async def _open(self, req: TurnRequest, message: str, *, model: str | None = None) -> _Opened:
        """Store the turn's start in one write transaction (TurnStore.open): the conversation (new, or
        checked to be the caller's and touched), the user's message, the pending reply and the trace,
        with ids made here so nothing needs to be read back.

        A second pending reply in the conversation is refused by the database (409). Only then are
        replies left pending long ago by a stopped process closed, and the turn tried once more: the
        check costs nothing on the common path."""
        started = time.perf_counter()
        try:
            opened = await self._insert_turn(req, message, model=model)
        except ConversationBusyError:
            if req.conversation_id is None or not await self._expire_interrupted(req.conversation_id):
                raise
            opened = await self._insert_turn(req, message, model=model)
        return replace(opened, took_ms=1000 * (time.perf_counter() - started))

    async def _insert_turn(self, req: TurnRequest, message: str, *, model: str | None) -> _Opened:
        opened = _Opened(req.conversation_id or new_id(), new_id(), new_id(), new_id())
        await self.turns.open(
            TurnOpening(
                conversation_id=opened.conversation_id,
                user_message_id=opened.user_message_id,
                assistant_message_id=opened.assistant_message_id,
                trace_id=opened.trace_id,
                new_conversation=req.conversation_id is None,
                message=message,
                channel=req.channel,
                user_id=req.user_id,
                assistant_id=req.assistant,
                model=model or self.provider.model,
                process_id=self.process.owner if self.process is not None else None,
                now=datetime.now(UTC),
            )
        )
        return opened

    async def _expire_interrupted(self, conversation_id: str) -> int:
        """The conversation's pending reply was left by a process that died mid-turn (its owner is dead,
        store/recovery.py; without an owner: it is older than any turn can last): close it as an error
        so the conversation is not busy. Returns how many were closed."""
        process = self.process
        closed = await close_interrupted_replies(
            self.db,
            here=process.identity if process is not None else ProcessIdentity.current(),
            lease=process.lease_seconds if process is not None else LEASE_SECONDS,
            conversation_id=conversation_id,
            unowned_before=self.unowned_cutoff(),
        )
        for reply in closed:
            log.warning(
                "conversation %s: reply %s was interrupted (its process %s is gone); closed as error",
                conversation_id,
                reply.message_id,
                reply.owner or "unrecorded",
            )
        if closed:
            self.telemetry.metrics.recovered.labels("reply").inc(len(closed))
        return len(closed)

    def unowned_cutoff(self) -> datetime:
        """A pending reply with no owner recorded, written before this, was interrupted: no turn lasts
        that long."""
        return datetime.now(UTC) - timedelta(seconds=self.limits.turn_deadline + 60)

    async def run(self, req: TurnRequest) -> AsyncIterator[Event]:
        """Validate, store, route, run the flow. Raises ``UserInputError`` / ``NotFoundError`` /
        ``ConversationBusyError`` before the first event; after that, failures become events."""
        message = self.validate(req)
        if req.conversation_id and req.conversation_id in self._running:
            raise ConversationBusyError(
                "a reply is still being written in this conversation; wait for it to finish"
            )
        owner = req.budget_owner
        assistant = await self._pre_turn(req, owner)
        spenders = [k for k in (owner, req.budget_group) if k is not None]
        provider = (
            self.pick_provider(assistant.llm_provider, assistant.llm_model)
            if self.pick_provider
            else self.provider
        )
        opened = await self._open(req, message, model=provider.model)
        conv_id, trace_id = opened.conversation_id, opened.trace_id
        asst_id = opened.assistant_message_id
        history: list[ChatMessage] = []
        self._running.add(conv_id)
        state = TurnState()
        state.timings["store_turn_ms"] = opened.took_ms
        recorder = TraceRecorder(trace_id, started=state.started)
        observer = self.telemetry.start_turn(
            recorder,
            TurnStart(
                trace_id=trace_id,
                conversation_id=conv_id,
                channel=req.channel,
                assistant_id=req.assistant,
                model=provider.model,
                started=state.started,
            ),
        )
        zh = prompts.is_chinese(message)
        status = "ok"
        flow_name = "unknown"
        decision = None
        # The turn's deadline is held around the turn's own awaits, never across a ``yield``: the caller
        # may read the events from another task than the one that started the turn (api/_sse.py reads
        # them in a task of its own), and a timeout is bound to the task that entered it. Held across a
        # yield, it would cancel the reader's writer instead of the turn: the error and done events were
        # then stored but never sent. Re-entered at each await, it cancels the turn wherever it waits.
        deadline = asyncio.get_running_loop().time() + assistant.turn_deadline
        try:
            try:
                async with asyncio.timeout_at(deadline):
                    # read inside the turn's error handling: a failed read ends the turn as an error
                    # (the pending reply closed, the user told) instead of leaving the reply pending
                    history = await self._history(req, before=opened.user_message_id)
                    # an open dialogue (a booking half-way: "2", "王小明", "確認") keeps its flow; else route
                    decision = (
                        req.route
                        or await self._continuing(req, conv_id, message)
                        or await self._route(message, history, observer)
                    )
                record = decision.to_json()
                if req.flow is not None:
                    flow_name, flow = req.flow
                else:
                    tier, sized = self._sized_tier(decision.intent, decision.tier, provider)
                    flow_name, flow = self.flows.lookup(decision.intent, tier)
                    if sized:
                        record["reasons"] = [*record["reasons"], sized]
                    if flow_name == "career-parallel":  # which deep design answers, and why (0016)
                        record["reasons"] = [*record["reasons"], design_of(self.options, provider)[1]]
                # the routing record as the router made it (and why the flow differs from its tier's)
                route = RouteEvent.model_validate({**record, "flow": flow_name})
                observer.observe(route)
                yield route
                ctx = FlowContext(
                    message=message,
                    history=history,
                    zh=zh,
                    provider=ObservedProvider(provider, observer.llm_call),
                    tools=self.tools,
                    intent=decision.intent,
                    options=self.options.with_assistant(assistant),
                    settings=assistant,
                    state=state,
                    kb=self.kb,
                    conversation_id=conv_id,
                    user_id=req.user_id,
                    client=req.client,
                    channel=req.channel,
                    turn_id=trace_id,
                    stored_resume=stored_resume_loader(self.db, req.user_id),
                )
                events = aiter(flow(ctx))
                while True:
                    async with asyncio.timeout_at(deadline):
                        try:
                            event = await anext(events)
                        except StopAsyncIteration:
                            break
                    observer.observe(event)
                    yield event
            except TimeoutError:
                exc = LLMTimeoutError(f"the turn took longer than {assistant.turn_deadline:.0f} s")
                log.warning("turn %s: %s", trace_id, exc)
                status = "error"
                err = ErrorEvent(code=exc.code, message=prompts.line("llm_timeout", zh), retryable=True)
                observer.observe(err)
                yield err
            except LLMError as exc:
                log.warning("turn %s: LLM failed: %s", trace_id, exc)
                status = "error"
                key = "llm_timeout" if isinstance(exc, LLMTimeoutError) else "llm_unavailable"
                err = ErrorEvent(code=exc.code, message=prompts.line(key, zh), retryable=exc.retryable)
                observer.observe(err)
                yield err
            except (asyncio.CancelledError, GeneratorExit):
                status = "cancelled"
                raise
            except Exception as exc:
                log.exception("turn %s: internal error", trace_id)
                status = "error"
                code = exc.code if isinstance(exc, CareerWiseError) else "internal_error"
                err = ErrorEvent(code=code, message=prompts.line("internal_error", zh))
                observer.observe(err)
                yield err
            done = DoneEvent(
                trace_id=trace_id,
                conversation_id=conv_id,
                message_id=asst_id,
                status=status,  # type: ignore[arg-type]
                path=state.path,
                usage={
                    "prompt_tokens": state.prompt_tokens,
                    "completion_tokens": state.completion_tokens,
                    "llm_calls": state.llm_calls,
                }
                | ({"estimated": 1} if state.usage_estimated else {}),
            )
            observer.observe(done)
            yield done
        finally:
            self._running.discard(conv_id)
            try:
                # shielded: a client that disconnects must still leave a stored, final message and trace
                # the day's token count rides in the same transaction: one write per turn end, not two
                await asyncio.shield(
                    self._close(
                        trace_id,
                        asst_id,
                        recorder,
                        state,
                        status,
                        flow_name,
                        spend=self._spend(spenders, state),
                    )
                )
            finally:
                observer.finish(TurnEnd(status=status, flow=flow_name, path=state.path))

    async def _pre_turn(self, req: TurnRequest, owner: str | None) -> AssistantSettings:
        """The turn's reads before anything is stored or sent, fresh every turn (a change made in
        another process applies from the next turn on): the day's token count (429 when spent; not read
        when no budget applies) and the assistant with its settings (an unknown one 404, a disabled one
        409). One job on the database's reader thread (TurnStore.reads_before_turn), so the event loop
        serving other streams waits for none of it (decision 0007)."""
        budget = (
            self.budget if self.budget is not None and owner is not None and self.budget.applies else None
        )
        assistant_id = req.assistant
        group = req.budget_group if budget is not None and budget.group_tokens > 0 else None

        used, group_used, found = await self.turns.reads_before_turn(
            budget=budget, owner=owner, group=group, assistant_id=assistant_id
        )
        if budget is not None:
            budget.refuse_when_spent(used)
            if group is not None:
                budget.refuse_when_group_spent(group_used)
        return await self.settings_store.for_turn(assistant_id, read=found)

    def _spend(self, owners: list[str], state: TurnState) -> tuple[list[str], int] | None:
        """Whose budgets this turn's tokens count against (the owner's, and its group's when it has
        one), and how many; None when nothing is counted."""
        if self.budget is None or not owners:
            return None
        return owners, state.prompt_tokens + state.completion_tokens

    async def _route(self, message: str, history: list[ChatMessage], observer: TurnObserver) -> RouteDecision:
        """Route in a task whose context names this turn's LLM-call sink, so the router's layer-3 call is
        recorded on the turn and nothing of it outlives the task (tracing/llm_calls.py). A router that
        can use history gets the earlier user turns: a short follow-up («那薪水呢？») keeps their intent."""
        context = contextvars.copy_context()
        context.run(ROUTING_SINK.set, observer.llm_call)
        previous = [m.content for m in history if m.role == "user"]
        routing = (
            self.router.route_in_context(message, previous)
            if previous and isinstance(self.router, ContextualRouter)
            else self.router.route(message)
        )
        return await asyncio.create_task(routing, context=context)

    def _sized_tier(self, intent: str, tier: str | None, provider: LLMProvider) -> tuple[str | None, str]:
        """The tier whose flow answers, sized to the provider (decision 0014): on a provider that writes
        slowly (declared slow, or its speed measured or declared under the full design's bar) a medium
        question takes the streamed flow (``medium_flow`` auto), so its text shows in seconds instead of
        after a chain of generations. Returns the tier and the reason when it changed."""
        mode = self.options.medium_flow
        if intent != "career" or tier != "medium" or mode == "chain":
            return tier, ""
        if mode == "auto" and not profile_of(provider).writes_slowly:
            return tier, ""
        why = "the provider is slow" if mode == "auto" else "medium_flow=streamed"
        return "simple", f"medium answered by the streamed flow: {why}"

    async def _continuing(self, req: TurnRequest, conversation_id: str, message: str) -> RouteDecision | None:
        if req.conversation_id is None:
            return None  # a new conversation has no dialogue open
        claimed = await self.flows.continuation(conversation_id, message)
        if claimed is None:
            return None
        intent, reason = claimed
        return RouteDecision(intent=intent, tier=None, layer="dialogue", reasons=[reason])

    async def _close(
        self,
        trace_id: str,
        asst_id: str,
        recorder: TraceRecorder,
        state: TurnState,
        status: str,
        flow_name: str,
        *,
        spend: tuple[list[str], int] | None = None,
    ) -> None:
        """One write transaction (TurnStore.close): the answer, the trace, its rows and (``spend``) the
        day's token count."""
        route = recorder.route
        trace_values = {
            "status": status,
            "flow": flow_name,
            "path": state.path,
            "degraded": bool(recorder.degraded),
            "error_code": recorder.error.code if recorder.error else None,
            "duration_ms": round(state.elapsed_ms(), 2),
            "first_text_ms": round(state.first_text_ms, 2) if state.first_text_ms is not None else None,
            "timings": {k: round(v, 2) for k, v in state.timings.items()}
            | {"retries": state.retries, "dropped_text_chars": sum(len(t) for t in state.dropped_text)},
            "usage": {
                "prompt_tokens": state.prompt_tokens,
                "completion_tokens": state.completion_tokens,
                "llm_calls": state.llm_calls,
            }
            | ({"estimated": 1} if state.usage_estimated else {}),
            # set on every turn (NULL without a route, as stored at the start) so the statement is one
            "intent": route.intent if route is not None else None,
            "tier": route.tier if route is not None else None,
        }
        closing = TurnClosing(
            trace_id=trace_id,
            assistant_message_id=asst_id,
            content=recorder.text,
            report=recorder.stored_report,
            status=status,
            trace=trace_values,
            rows=TraceRows(events=recorder.event_rows(), spans=recorder.span_rows()),
            spend=spend,
        )
        try:
            await self.turns.close(closing, budget=self.budget if spend is not None else None)
        except Exception:
            log.exception("turn %s: could not store the trace", trace_id)
            raise
