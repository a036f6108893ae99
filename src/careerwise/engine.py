"""The engine: one turn from a message to a stream of events, stored as it goes.

The user's message is stored before any LLM call; the assistant's message ends with a status
(ok / error / cancelled); the trace is written from the very events the caller received.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
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
from careerwise.flows.base import Flow, FlowContext, FlowOptions, FlowRegistry, TurnState
from careerwise.llm.types import ChatMessage, LLMProvider
from careerwise.routing.router import RouteDecision, Router
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
    assistant_id: str = DEFAULT_ASSISTANT
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

    async def _history(self, req: TurnRequest) -> list[ChatMessage]:
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
                    .where(Message.conversation_id == req.conversation_id, Message.status == "ok")
                    .order_by(Message.created_at.desc())
                    .limit(self.limits.max_history_messages)
                )
            ).all()
        return [
            ChatMessage(role="user" if m.role == "user" else "assistant", content=m.content)
            for m in reversed(rows)
        ]

    async def _open(self, req: TurnRequest, message: str) -> tuple[Conversation, Message, Message, Trace]:
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
                    assistant_id=self.assistant_id,
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
                assistant_id=self.assistant_id,
                model=self.provider.model,
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
        history = await self._history(req)
        if req.conversation_id and req.conversation_id in self._running:
            raise ConversationBusyError(
                "a reply is still being written in this conversation; wait for it to finish"
            )
        owner = req.budget_owner
        if self.budget is not None and owner is not None:
            await self.budget.check(owner)  # 429 before anything is stored or sent to the model
        # fresh every turn: no restart needed
        assistant = (await self.settings_store.effective(self.assistant_id)).values
        conv, _user_msg, asst, trace = await self._open(req, message)
        self._running.add(conv.id)
        state = TurnState()
        recorder = TraceRecorder(trace.id, started=state.started)
        observer = self.telemetry.start_turn(
            recorder,
            TurnStart(
                trace_id=trace.id,
                conversation_id=conv.id,
                channel=req.channel,
                assistant_id=self.assistant_id,
                model=self.provider.model,
                started=state.started,
            ),
        )
        zh = prompts.is_chinese(message)
        status = "ok"
        flow_name = "unknown"
        decision = None
        try:
            try:
                async with asyncio.timeout(self.limits.turn_deadline):
                    # an open dialogue (a booking half-way: "2", "王小明", "確認") keeps its flow; else route
                    decision = (
                        req.route
                        or await self._continuing(req, conv.id, message)
                        or await self._route(message, observer)
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
                        provider=ObservedProvider(self.provider, observer.llm_call),
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
                    )
                    async for event in flow(ctx):
                        observer.observe(event)
                        yield event
            except TimeoutError:
                exc = LLMTimeoutError(f"the turn took longer than {self.limits.turn_deadline:.0f} s")
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
                await asyncio.shield(
                    self._close(trace.id, asst.id, recorder, state, status, flow_name, decision)
                )
                if self.budget is not None and owner is not None:
                    await asyncio.shield(self._spend(owner, state.prompt_tokens + state.completion_tokens))
            finally:
                observer.finish(TurnEnd(status=status, flow=flow_name, path=state.path))

    async def _spend(self, owner: str, tokens: int) -> None:
        assert self.budget is not None
        try:
            await self.budget.add(owner, tokens)
        except SQLAlchemyError:
            # the answer is already stored; an uncounted turn is logged, not turned into a failed one
            log.exception("token budget: could not count %d tokens for %s", tokens, owner)

    async def _route(self, message: str, observer: TurnObserver) -> RouteDecision:
        """Route in a task whose context names this turn's LLM-call sink, so the router's layer-3 call is
        recorded on the turn and nothing of it outlives the task (tracing/llm_calls.py)."""
        context = contextvars.copy_context()
        context.run(ROUTING_SINK.set, observer.llm_call)
        return await asyncio.create_task(self.router.route(message), context=context)

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
        decision: object,
    ) -> None:
        try:
            async with self.db.session() as s, s.begin():
                asst = await s.get(Message, asst_id)
                trace = await s.get(Trace, trace_id)
                assert asst is not None and trace is not None
                asst.content = recorder.text
                asst.status = status
                trace.status = status
                trace.flow = flow_name
                if recorder.route is not None:
                    trace.intent, trace.tier = recorder.route.intent, recorder.route.tier
                trace.path = state.path
                trace.degraded = bool(recorder.degraded)
                trace.error_code = recorder.error.code if recorder.error else None
                trace.duration_ms = round(state.elapsed_ms(), 2)
                trace.first_text_ms = (
                    round(state.first_text_ms, 2) if state.first_text_ms is not None else None
                )
                trace.timings = {k: round(v, 2) for k, v in state.timings.items()} | {
                    "retries": state.retries,
                    "dropped_text_chars": sum(len(t) for t in state.dropped_text),
                }
                trace.usage = {
                    "prompt_tokens": state.prompt_tokens,
                    "completion_tokens": state.completion_tokens,
                    "llm_calls": state.llm_calls,
                }
                s.add_all(recorder.rows)
                s.add_all(recorder.tool_calls.values())
                s.add_all(recorder.spans)
        except Exception:
            log.exception("turn %s: could not store the trace", trace_id)
            raise
