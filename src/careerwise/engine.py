"""The engine: one turn from a message to a stream of events, stored as it goes.

The user's message is stored before any LLM call; the assistant's message ends with a status
(ok / error / cancelled); the trace is written from the very events the caller received.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from careerwise import prompts
from careerwise.assistant_settings import DEFAULT_ASSISTANT, SettingsStore
from careerwise.errors import (
    CareerWiseError,
    ConversationBusyError,
    LLMError,
    LLMTimeoutError,
    NotFoundError,
    UserInputError,
)
from careerwise.events import DoneEvent, ErrorEvent, Event, RouteEvent
from careerwise.flows._resume_context import stored_resume_loader
from careerwise.flows.base import Flow, FlowContext, FlowOptions, FlowRegistry, TurnState
from careerwise.llm.types import ChatMessage, LLMProvider
from careerwise.routing.router import ContextualRouter, RouteDecision, Router
from careerwise.store import Conversation, Database, Message, Trace, as_utc
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
class TurnRequest:
    message: str
    history: list[HistoryItem] | None = None
    conversation_id: str | None = None
    channel: str = "web"
    user_id: str | None = None
    # whose daily token budget this turn spends: the user (user_id) or, without one, e.g. "ip:1.2.3.4"
    budget_key: str | None = None
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
    # (provider name, model) -> provider, from the assistant's settings each turn (services.ProviderRegistry)
    pick_provider: Callable[[str, str], LLMProvider] | None = None
    _running: set[str] = field(default_factory=set)

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
        async with self.db.session() as s:
            rows = (
                await s.scalars(
                    select(Message)
                    .where(
                        Message.conversation_id == req.conversation_id,
                        Message.status == "ok",
                        Message.id != before,
                    )
                    .order_by(Message.created_at.desc())
                    .limit(self.limits.max_history_messages)
                )
            ).all()
        return [
            ChatMessage(role="user" if m.role == "user" else "assistant", content=m.content)
            for m in reversed(rows)
        ]

    async def _open(
        self, req: TurnRequest, message: str, *, model: str | None = None
    ) -> tuple[Conversation, Message, Message, Trace]:
        async with self.db.session() as s, s.begin():
            conv: Conversation | None = None
            if req.conversation_id:
                conv = await s.get(Conversation, req.conversation_id)
                if conv is None:
                    raise NotFoundError(f"conversation {req.conversation_id} does not exist")
                if conv.user_id is not None and conv.user_id != req.user_id:
                    raise NotFoundError(f"conversation {req.conversation_id} does not exist")
            else:
                conv = Conversation(
                    title=message[:60],
                    channel=req.channel,
                    user_id=req.user_id,
                    assistant_id=req.assistant,
                )
                s.add(conv)
                await s.flush()
            conv.updated_at = datetime.now(UTC)
            if req.conversation_id:  # a conversation created just now has nothing pending
                await self._expire_interrupted(s, conv.id)
            user_msg = Message(conversation_id=conv.id, role="user", content=message, status="ok")
            asst = Message(conversation_id=conv.id, role="assistant", content="", status="pending")
            s.add_all([user_msg, asst])
            try:
                await s.flush()
            except IntegrityError as exc:  # uq_messages_one_pending: another process is answering
                raise ConversationBusyError(
                    "a reply is still being written in this conversation; wait for it to finish"
                ) from exc
            trace = Trace(
                conversation_id=conv.id,
                user_message_id=user_msg.id,
                assistant_message_id=asst.id,
                channel=req.channel,
                assistant_id=req.assistant,
                model=model or self.provider.model,
            )
            s.add(trace)
            await s.flush()
            user_msg.trace_id = asst.trace_id = trace.id
        return conv, user_msg, asst, trace

    async def _expire_interrupted(self, s: AsyncSession, conversation_id: str) -> None:
        """A reply still 'pending' long after any turn could have ended was interrupted (its process
        stopped mid-turn): close it as an error so the conversation is not busy forever."""
        cutoff = datetime.now(UTC) - timedelta(seconds=self.limits.turn_deadline + 60)
        pending = (
            await s.scalars(
                select(Message).where(Message.conversation_id == conversation_id, Message.status == "pending")
            )
        ).all()
        for m in pending:
            if as_utc(m.created_at) < cutoff:
                log.warning(
                    "conversation %s: reply %s was interrupted; closed as error", conversation_id, m.id
                )
                m.status = "error"
        await s.flush()

    async def run(self, req: TurnRequest) -> AsyncIterator[Event]:
        """Validate, store, route, run the flow. Raises ``UserInputError`` / ``NotFoundError`` /
        ``ConversationBusyError`` before the first event; after that, failures become events."""
        message = self.validate(req)
        if req.conversation_id and req.conversation_id in self._running:
            raise ConversationBusyError(
                "a reply is still being written in this conversation; wait for it to finish"
            )
        owner = req.budget_owner
        if self.budget is not None and owner is not None:
            await self.budget.check(owner)  # 429 before anything is stored or sent to the model
        # fresh every turn: no restart needed; an unknown (404) or disabled (409) assistant stores nothing
        assistant = await self.settings_store.for_turn(req.assistant)
        provider = (
            self.pick_provider(assistant.llm_provider, assistant.llm_model)
            if self.pick_provider
            else self.provider
        )
        conv, user_msg, asst, trace = await self._open(req, message, model=provider.model)
        history = await self._history(req, before=user_msg.id)
        self._running.add(conv.id)
        state = TurnState()
        recorder = TraceRecorder(trace.id, started=state.started)
        observer = self.telemetry.start_turn(
            recorder,
            TurnStart(
                trace_id=trace.id,
                conversation_id=conv.id,
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
        try:
            try:
                async with asyncio.timeout(assistant.turn_deadline):
                    # an open dialogue (a booking half-way: "2", "王小明", "確認") keeps its flow; else route
                    decision = (
                        req.route
                        or await self._continuing(req, conv.id, message)
                        or await self._route(message, history, observer)
                    )
                    flow_name, flow = req.flow or self.flows.lookup(decision.intent, decision.tier)
                    # the routing record as the router made it: one mapping, no field-by-field copy
                    route = RouteEvent.model_validate({**decision.to_json(), "flow": flow_name})
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
                        conversation_id=conv.id,
                        user_id=req.user_id,
                        channel=req.channel,
                        turn_id=trace.id,
                        stored_resume=stored_resume_loader(self.db, req.user_id),
                    )
                    async for event in flow(ctx):
                        observer.observe(event)
                        yield event
            except TimeoutError:
                exc = LLMTimeoutError(f"the turn took longer than {assistant.turn_deadline:.0f} s")
                log.warning("turn %s: %s", trace.id, exc)
                status = "error"
                err = ErrorEvent(code=exc.code, message=prompts.line("llm_timeout", zh), retryable=True)
                observer.observe(err)
                yield err
            except LLMError as exc:
                log.warning("turn %s: LLM failed: %s", trace.id, exc)
                status = "error"
                key = "llm_timeout" if isinstance(exc, LLMTimeoutError) else "llm_unavailable"
                err = ErrorEvent(code=exc.code, message=prompts.line(key, zh), retryable=exc.retryable)
                observer.observe(err)
                yield err
            except (asyncio.CancelledError, GeneratorExit):
                status = "cancelled"
                raise
            except Exception as exc:
                log.exception("turn %s: internal error", trace.id)
                status = "error"
                code = exc.code if isinstance(exc, CareerWiseError) else "internal_error"
                err = ErrorEvent(code=code, message=prompts.line("internal_error", zh))
                observer.observe(err)
                yield err
            done = DoneEvent(
                trace_id=trace.id,
                conversation_id=conv.id,
                message_id=asst.id,
                status=status,  # type: ignore[arg-type]
                path=state.path,
                usage={
                    "prompt_tokens": state.prompt_tokens,
                    "completion_tokens": state.completion_tokens,
                    "llm_calls": state.llm_calls,
                },
            )
            observer.observe(done)
            yield done
        finally:
            self._running.discard(conv.id)
            try:
                # shielded: a client that disconnects must still leave a stored, final message and trace
                # the day's token count rides in the same transaction: one write per turn end, not two
                await asyncio.shield(
                    self._close(
                        trace.id, asst.id, recorder, state, status, flow_name, spend=self._spend(owner, state)
                    )
                )
            finally:
                observer.finish(TurnEnd(status=status, flow=flow_name, path=state.path))

    def _spend(self, owner: str | None, state: TurnState) -> tuple[str, int] | None:
        """Whose budget this turn's tokens count against, and how many; None when nothing is counted."""
        if self.budget is None or owner is None:
            return None
        return owner, state.prompt_tokens + state.completion_tokens

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
        spend: tuple[str, int] | None = None,
    ) -> None:
        """One write transaction: the answer, the trace, its rows and (``spend``) the day's token count.
        UPDATEs by primary key rather than loading the two rows first: two fewer round trips a turn
        through the driver's thread, on an event loop that the burst keeps busy."""
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
            },
        } | ({"intent": route.intent, "tier": route.tier} if route is not None else {})
        no_sync = {"synchronize_session": False}  # nothing of these rows is loaded in this session
        try:
            async with self.db.session() as s, s.begin():
                stored = await s.execute(
                    update(Message)
                    .where(Message.id == asst_id)
                    .values(content=recorder.text, status=status)
                    .execution_options(**no_sync)
                )
                await s.execute(
                    update(Trace)
                    .where(Trace.id == trace_id)
                    .values(**trace_values)
                    .execution_options(**no_sync)
                )
                if stored.rowcount != 1:  # type: ignore[attr-defined]
                    raise LookupError(f"the pending reply {asst_id} is gone")
                s.add_all(recorder.rows)
                s.add_all(recorder.tool_calls.values())
                s.add_all(recorder.spans)
                if spend is not None and self.budget is not None:
                    # last, so a row lock on the owner's day (PostgreSQL) is held only until the commit
                    await self.budget.add_in(s, *spend)
        except Exception:
            log.exception("turn %s: could not store the trace", trace_id)
            raise
