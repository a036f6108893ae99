"""A turn's reads and writes: its opening (conversation, user message, pending reply, trace), the
history it is answered with, and its closing (the answer, the trace with its rows, the day's tokens).

Every write is one transaction in one job on the database's writer thread, through Core statements
compiled once per dialect and run on the driver's cursor (store/direct.py): on the writer threads,
SQLAlchemy's per-execution work was most of a job's CPU. No ORM instances are built and nothing is
read back: the ids are made by the caller.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import Connection, Table, bindparam, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from careerwise.assistant_settings import SettingsStore, TurnRead
from careerwise.errors import ConversationBusyError, NotFoundError
from careerwise.store.db import Database
from careerwise.store.direct import DirectStatement
from careerwise.store.models import Conversation, Message, Trace, TraceEvent
from careerwise.store.models_observability import TraceSpan

if TYPE_CHECKING:
    from careerwise.budget import TokenBudget

__all__ = ["TraceRows", "TurnClosing", "TurnOpening", "TurnStore"]

_CONVERSATIONS = cast(Table, Conversation.__table__)
_MESSAGES = cast(Table, Message.__table__)
_TRACES = cast(Table, Trace.__table__)
_EVENTS = cast(Table, TraceEvent.__table__)
_SPANS = cast(Table, TraceSpan.__table__)

_INSERT_CONVERSATION = DirectStatement(insert(_CONVERSATIONS))
_INSERT_MESSAGE = DirectStatement(insert(_MESSAGES))
_INSERT_TRACE = DirectStatement(insert(_TRACES))
_INSERT_EVENTS = DirectStatement(insert(_EVENTS))
_INSERT_SPANS = DirectStatement(insert(_SPANS))
_TOUCH_CONVERSATION = DirectStatement(  # the caller's (or an anonymous) conversation only
    update(_CONVERSATIONS).where(
        _CONVERSATIONS.c.id == bindparam("conv"),
        or_(_CONVERSATIONS.c.user_id.is_(None), _CONVERSATIONS.c.user_id == bindparam("caller")),
    )
)
_FINISH_REPLY = DirectStatement(update(_MESSAGES).where(_MESSAGES.c.id == bindparam("reply")))
_FINISH_TRACE = DirectStatement(update(_TRACES).where(_TRACES.c.id == bindparam("trace")))

_HISTORY = (
    select(_MESSAGES.c.role, _MESSAGES.c.content)
    .where(
        _MESSAGES.c.conversation_id == bindparam("conv"),
        _MESSAGES.c.status == "ok",
        _MESSAGES.c.id != bindparam("before"),
    )
    .order_by(_MESSAGES.c.created_at.desc())
    .limit(bindparam("limit"))
)

_BUSY = "a reply is still being written in this conversation; wait for it to finish"


@dataclass(frozen=True)
class TurnOpening:
    """What a turn's start stores; the ids are made by the caller, so nothing needs to be read back.
    ``new_conversation``: the conversation is made in the same transaction (else it must exist and be
    the caller's or anonymous)."""

    conversation_id: str
    user_message_id: str
    assistant_message_id: str
    trace_id: str
    new_conversation: bool
    message: str
    channel: str
    user_id: str | None
    assistant_id: str
    model: str
    process_id: str | None  # the process writing the pending reply (store/recovery.py)
    now: datetime


@dataclass(frozen=True)
class TraceRows:
    """A trace's rows, as column values: its events (every event the stream carried but the text deltas
    after the first) and its spans. A tool call is stored once, as its ``tool_call`` and ``tool_result``
    event rows; its span holds only its timing and its ``call_id`` (store/traces.py joins them)."""

    events: Sequence[dict[str, Any]]
    spans: Sequence[dict[str, Any]]


@dataclass(frozen=True)
class TurnClosing:
    """What a turn's end stores: the reply's text and status, the trace's columns and its rows, and
    (``spend``) whose daily token budgets the turn's tokens count against, and how many."""

    trace_id: str
    assistant_message_id: str
    content: str
    status: str
    trace: dict[str, Any]
    rows: TraceRows
    spend: tuple[Sequence[str], int] | None = None
    # the report's structure (messages.report), when the turn made one
    report: dict[str, Any] | None = None


def _abandon(connection: Connection, opening: TurnOpening) -> None:
    """The turn's opening committed after its caller had gone (a client that disconnected while it was
    being stored): close the reply and the trace as cancelled, so the conversation is not left busy."""
    _FINISH_REPLY.execute(connection, {"reply": opening.assistant_message_id, "status": "cancelled"})
    _FINISH_TRACE.execute(connection, {"trace": opening.trace_id, "status": "cancelled"})


class TurnStore:
    """The turn's SQL, on one :class:`Database`."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def history(self, conversation_id: str, *, before: str, limit: int) -> list[tuple[str, str]]:
        """The conversation's finished messages as (role, content), newest first, at most ``limit``,
        without the message ``before`` (the turn's own)."""
        params = {"conv": conversation_id, "before": before, "limit": limit}
        async with self.db.session(autocommit=True) as s:
            rows = (await s.execute(_HISTORY, params)).all()
        return [(role, content) for role, content in rows]

    async def reads_before_turn(
        self,
        *,
        budget: TokenBudget | None,
        owner: str | None,
        group: str | None,
        assistant_id: str,
    ) -> tuple[int, int, TurnRead | None]:
        """The day's tokens used by ``owner`` and by ``group`` (0 without a budget or a key) and the
        assistant's stored settings, in one job on the database's reader thread: one hand-off instead of
        two statements through the async session."""

        def read(connection: Connection) -> tuple[int, int, TurnRead | None]:
            used = budget.used_on(connection, owner) if budget is not None and owner is not None else 0
            group_used = budget.used_on(connection, group) if budget is not None and group is not None else 0
            return used, group_used, SettingsStore.read_on(connection, assistant_id)

        return await self.db.read(read, name="turn reads")

    async def open(self, opening: TurnOpening) -> None:
        """Store the turn's start in one write transaction: the conversation (new, or checked to be the
        caller's and touched), the user's message, the pending reply and the trace.

        Raises NotFoundError for a conversation that is unknown or someone else's, and
        ConversationBusyError when the database refuses a second pending reply in the conversation."""
        o = opening
        conversation = (
            {
                "id": o.conversation_id,
                "title": o.message[:60],
                "channel": o.channel,
                "user_id": o.user_id,
                "assistant_id": o.assistant_id,
                "created_at": o.now,
                "updated_at": o.now,
            }
            if o.new_conversation
            else None
        )
        common = {"conversation_id": o.conversation_id, "trace_id": o.trace_id}
        messages = [
            common
            | {"id": o.user_message_id, "role": "user", "content": o.message}
            | {"status": "ok", "created_at": o.now, "process_id": None},
            # a microsecond later: the history's order never depends on a tie
            common
            | {"id": o.assistant_message_id, "role": "assistant", "content": ""}
            | {
                "status": "pending",
                "created_at": o.now + timedelta(microseconds=1),
                "process_id": o.process_id,
            },
        ]
        trace = {
            "id": o.trace_id,
            "conversation_id": o.conversation_id,
            "user_message_id": o.user_message_id,
            "assistant_message_id": o.assistant_message_id,
            "channel": o.channel,
            "assistant_id": o.assistant_id,
            "model": o.model,
            "started_at": o.now,
        }
        touch = {"conv": o.conversation_id, "caller": o.user_id, "updated_at": o.now}

        def store(connection: Connection) -> TurnOpening:
            """The transaction, all of it in one job: on SQLite one hand-off to the writer thread. On
            PostgreSQL batched (store/direct.py): ``send`` waits for no answer, so a new
            conversation's three INSERTs travel with the COMMIT."""
            if conversation is None:
                if _TOUCH_CONVERSATION.execute(connection, touch) != 1:  # unknown, or someone else's
                    raise NotFoundError(f"conversation {o.conversation_id} does not exist")
                try:
                    _INSERT_MESSAGE.execute(connection, messages)
                except IntegrityError as exc:  # uq_messages_one_pending: another turn is answering
                    raise ConversationBusyError(_BUSY) from exc
            else:  # a conversation made in this transaction has no reply pending: no answer to wait for
                _INSERT_CONVERSATION.send(connection, conversation)
                _INSERT_MESSAGE.send(connection, messages)
            _INSERT_TRACE.send(connection, trace)
            return o

        await self.db.write(store, name="turn opening", undo=_abandon, direct_only=True)

    async def close(self, closing: TurnClosing, *, budget: TokenBudget | None) -> None:
        """One write transaction: the answer, the trace, its rows and (``closing.spend``, on ``budget``)
        the day's token count. UPDATEs by primary key rather than loading the two rows first, and one
        multi-row INSERT per table. Raises LookupError when the pending reply is gone."""
        c = closing
        reply = {
            "reply": c.assistant_message_id,
            "content": c.content,
            "report": c.report,
            "status": c.status,
        }
        spend = c.spend if budget is not None else None

        def store(connection: Connection) -> None:
            """The transaction, all of it in one job: on SQLite one hand-off to the writer thread."""
            stored = _FINISH_REPLY.execute(connection, reply)
            _FINISH_TRACE.send(connection, {"trace": c.trace_id, **c.trace})  # batched: no wait
            if stored != 1:
                raise LookupError(f"the pending reply {c.assistant_message_id} is gone")
            if c.rows.events:
                _INSERT_EVENTS.send(connection, list(c.rows.events))
            if c.rows.spans:
                _INSERT_SPANS.send(connection, list(c.rows.spans))
            if budget is not None and spend is not None:
                # last, so a row lock on the owner's day (PostgreSQL) is held only until the commit
                for key in spend[0]:
                    budget.add_on(connection, key, spend[1])

        await self.db.write(store, name="turn closing", direct_only=True)
