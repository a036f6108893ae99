"""Recovery from a dead app process: the work it left half done is closed or handed on.

A process killed mid-work (kill -9, the OOM killer, a lost machine) leaves behind

* a reply 'pending' in ``messages``: its conversation refuses every new message with 409 while it is
  pending (one reply at a time, ``uq_messages_one_pending``);
* a LINE event 'received' in ``line_events``: LINE had its 200, so it sends the event again only if
  the process died before answering the webhook, and that redelivery was dropped as a duplicate.

Every app process registers at start-up (:class:`ProcessLease`): a row in ``app_processes`` under a
boot id that is new at every start, written before any row is stamped with it, refreshed by a heartbeat,
marked stopped at shutdown. The rows a process owns carry its boot id (``process_id``). An owner is dead
when (:func:`owner_is_dead`):

1. it marked itself stopped, or no row of it exists (rows are pruned long after their process went);
2. it ran on this host (same hostname and PID namespace, :func:`host_key`) and its pid is not running,
   or the pid runs a process with another start token (the pid was reused): known at once, so a
   restart on the same machine finds every conversation free before it serves;
3. it ran on another host (or in another PID namespace: another container) and its heartbeat is older
   than the lease: its pids cannot be seen from here, so only its silence tells.

A live owner on this host is never judged dead: its pid runs with its own start token. On another host
(3) can misjudge a process whose heartbeat stalls longer than the lease, or whose clock is off by
more; the cost is a second turn in that conversation, while the first reply is still stored when it ends
(its close updates the row by id, whatever its status).

Rows without an owner (written by a process that never registered, such as the CLI, or before migration
0016) are judged by their age: dead once older than ``unowned_before``, as the engine did before.

Closing is a compare-and-set on the row's status and owner: two processes recovering at once close or
claim each row once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

from sqlalchemy import Connection, Table, delete, func, insert, select, update

from careerwise import prompts
from careerwise.events import ErrorEvent
from careerwise.store.db import Database, as_utc
from careerwise.store.models import LineEventRecord, Message, Trace, TraceEvent
from careerwise.store.models_processes import AppProcess
from careerwise.tracing import background

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 10.0
# a process on another host is taken for dead after this long without a heartbeat: several beats, so a
# busy event loop or a slow database write is not mistaken for a death
LEASE_SECONDS = 60.0
PRUNE_AFTER = timedelta(days=7)  # process rows this long silent are deleted at the next start
INTERRUPTED = "interrupted"  # the error code on the trace of a reply closed here

_PROCESSES = cast(Table, AppProcess.__table__)
_MESSAGES = cast(Table, Message.__table__)
_TRACES = cast(Table, Trace.__table__)
_EVENTS = cast(Table, TraceEvent.__table__)
_LINE = cast(Table, LineEventRecord.__table__)


# --------------------------------------------------------------------------- who is this process


def host_key() -> str:
    """The hostname and, on Linux, the PID namespace: a pid means the same process only within both."""
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:  # not Linux: no namespaces to tell apart
        namespace = ""
    return f"{socket.gethostname()}|{namespace}"[:200]


def start_token(pid: int) -> str | None:
    """The kernel's boot id and the start time of ``pid`` (Linux): two processes that had the same pid
    never have the same token. None when it cannot be read (not Linux, or no such process)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()  # the command name may hold spaces and parentheses
    return f"{boot}:{fields[19]}" if len(fields) > 19 else None  # field 22: starttime


def pid_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # running, as another user
        return True
    return True


@dataclass(frozen=True)
class ProcessIdentity:
    id: str
    host: str
    pid: int
    start_token: str | None

    @classmethod
    def current(cls) -> ProcessIdentity:
        pid = os.getpid()
        return cls(id=uuid.uuid4().hex, host=host_key(), pid=pid, start_token=start_token(pid))


@dataclass(frozen=True)
class OwnerRow:
    """What ``app_processes`` says of an owner."""

    host: str
    pid: int
    start_token: str | None
    heartbeat_at: datetime
    stopped_at: datetime | None


def owner_is_dead(owner: OwnerRow | None, *, here: ProcessIdentity, now: datetime, lease: float) -> bool:
    """The rules of the module doc, in their order."""
    if owner is None or owner.stopped_at is not None:
        return True
    if owner.host == here.host:
        if not pid_running(owner.pid):
            return True
        running = start_token(owner.pid)
        if owner.start_token is not None and running is not None:
            return running != owner.start_token
    return as_utc(owner.heartbeat_at) < now - timedelta(seconds=lease)


def dead_owners(
    connection: Connection, ids: Iterable[str], *, here: ProcessIdentity, lease: float
) -> set[str]:
    """Which of the process ids ``ids`` are dead."""
    wanted = sorted(set(ids))
    if not wanted:
        return set()
    p = _PROCESSES.c
    rows = connection.execute(
        select(p.id, p.host, p.pid, p.start_token, p.heartbeat_at, p.stopped_at).where(p.id.in_(wanted))
    ).all()
    found = {r.id: OwnerRow(r.host, r.pid, r.start_token, r.heartbeat_at, r.stopped_at) for r in rows}
    now = datetime.now(UTC)
    return {i for i in wanted if owner_is_dead(found.get(i), here=here, now=now, lease=lease)}


# --------------------------------------------------------------------------- this process's row


class ProcessLease:
    """This process's row in ``app_processes`` and its heartbeat. :attr:`owner` is what rows are
    stamped with: None until the row is written, so no row ever names a process that cannot be found."""

    def __init__(
        self,
        db: Database,
        *,
        identity: ProcessIdentity | None = None,
        heartbeat_seconds: float = HEARTBEAT_SECONDS,
        lease_seconds: float = LEASE_SECONDS,
    ) -> None:
        self.db = db
        self.identity = identity or ProcessIdentity.current()
        self.heartbeat_seconds = heartbeat_seconds
        self.lease_seconds = lease_seconds
        self.owner: str | None = None
        self._beating: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Write this process's row (and delete rows long silent), then beat. A second call does nothing."""
        if self.owner is not None:
            return
        me = self.identity
        now = datetime.now(UTC)
        row = {"id": me.id, "host": me.host, "pid": me.pid, "start_token": me.start_token}
        row |= {"started_at": now, "heartbeat_at": now, "stopped_at": None}

        def register(connection: Connection) -> None:
            connection.execute(delete(_PROCESSES).where(_PROCESSES.c.heartbeat_at < now - PRUNE_AFTER))
            connection.execute(insert(_PROCESSES), row)

        await self.db.write(register, name="process registration")
        self.owner = me.id
        self._beating = asyncio.create_task(self._beat(), name=f"process-heartbeat-{me.id[:8]}")
        log.info("recovery: this process is %s (pid %d on %s)", me.id, me.pid, me.host)

    async def _beat(self) -> None:
        mine = _PROCESSES.c.id == self.identity.id

        def beat(connection: Connection) -> None:
            connection.execute(update(_PROCESSES).where(mine).values(heartbeat_at=datetime.now(UTC)))

        while True:
            await asyncio.sleep(self.heartbeat_seconds)
            try:
                await self.db.write(beat, name="process heartbeat")
            except Exception:  # the next beat tries again: a lease lasts several beats
                log.warning("recovery: the heartbeat of process %s failed", self.identity.id, exc_info=True)
                background.count_failure(background.PROCESS_HEARTBEAT)

    async def stop(self) -> None:
        """Stop beating and mark the row stopped: whatever this process still owns is then free for
        others. Logged and counted when the write fails (the lease then runs out on its own)."""
        if self._beating is not None:
            self._beating.cancel()
            await asyncio.wait([self._beating])
            self._beating = None
        if self.owner is None:
            return
        stop = update(_PROCESSES).where(_PROCESSES.c.id == self.owner).values(stopped_at=datetime.now(UTC))
        try:
            await self.db.write(lambda c: c.execute(stop), name="process stop")
        except Exception as exc:
            log.error("recovery: could not mark process %s stopped: %r", self.owner, exc, exc_info=exc)
            background.count_failure(background.PROCESS_HEARTBEAT)
        self.owner = None


# --------------------------------------------------------------------------- pending replies


def _orphaned(owner: str | None, written: datetime, *, dead: set[str], unowned_before: datetime) -> bool:
    """A row's owner is dead; a row without one is older than ``unowned_before``."""
    return owner in dead if owner else as_utc(written) < unowned_before


@dataclass(frozen=True)
class ClosedReply:
    message_id: str
    conversation_id: str
    trace_id: str | None
    owner: str | None


def close_replies_on(
    connection: Connection,
    *,
    here: ProcessIdentity,
    lease: float,
    unowned_before: datetime,
    conversation_id: str | None = None,
) -> list[ClosedReply]:
    """Close the pending replies whose owner is dead (or, without one, older than ``unowned_before``) as
    errors, their traces with the code ``interrupted`` and a notice the page shows. One transaction."""
    m = _MESSAGES.c
    query = select(m.id, m.conversation_id, m.trace_id, m.process_id, m.created_at).where(
        m.status == "pending"
    )
    if conversation_id is not None:
        query = query.where(m.conversation_id == conversation_id)
    rows = connection.execute(query).all()
    dead = dead_owners(connection, (r.process_id for r in rows if r.process_id), here=here, lease=lease)
    closed: list[ClosedReply] = []
    for r in rows:
        if _orphaned(r.process_id, r.created_at, dead=dead, unowned_before=unowned_before):
            owned = m.process_id.is_(None) if r.process_id is None else m.process_id == r.process_id
            done = connection.execute(
                update(_MESSAGES).where(m.id == r.id, m.status == "pending", owned).values(status="error")
            )
            if done.rowcount == 1:
                closed.append(ClosedReply(r.id, r.conversation_id, r.trace_id, r.process_id))
                if r.trace_id:
                    _close_trace(connection, r.trace_id)
    return closed


def _close_trace(connection: Connection, trace_id: str) -> None:
    t = _TRACES.c
    connection.execute(
        update(_TRACES)
        .where(t.id == trace_id, t.status == "running")
        .values(status="error", error_code=INTERRUPTED)
    )
    # the notice in the language of the question, as the turn's own error would have been
    asked = connection.execute(
        select(_MESSAGES.c.content)
        .join_from(_TRACES, _MESSAGES, _MESSAGES.c.id == t.user_message_id)
        .where(t.id == trace_id)
    ).scalar()
    notice = ErrorEvent(code=INTERRUPTED, message=prompts.line(INTERRUPTED, prompts.is_chinese(asked or "")))
    last = connection.execute(select(func.max(_EVENTS.c.seq)).where(_EVENTS.c.trace_id == trace_id)).scalar()
    seq = 0 if last is None else int(last) + 1
    row = {"trace_id": trace_id, "seq": seq, "t_ms": 0.0, "type": "error"}
    connection.execute(insert(_EVENTS), row | {"payload": notice.model_dump(mode="json")})


async def close_interrupted_replies(
    db: Database,
    *,
    here: ProcessIdentity,
    lease: float = LEASE_SECONDS,
    unowned_before: datetime,
    conversation_id: str | None = None,
) -> list[ClosedReply]:
    def job(connection: Connection) -> list[ClosedReply]:
        return close_replies_on(
            connection, here=here, lease=lease, unowned_before=unowned_before, conversation_id=conversation_id
        )

    return await db.write(job, name="closing interrupted replies")


# --------------------------------------------------------------------------- received LINE events


@dataclass(frozen=True)
class ClaimedEvent:
    """A LINE event this process now answers: its previous owner is dead."""

    webhook_event_id: str
    chat_key: str | None
    payload: dict[str, Any] | None
    received_at: datetime
    previous_owner: str | None


async def claim_line_events(
    db: Database,
    lease: ProcessLease,
    *,
    unowned_before: datetime,
    event_id: str | None = None,
    payload: dict[str, Any] | None = None,
) -> list[ClaimedEvent]:
    """Take over the 'received' LINE events whose owner is dead (all of them, or the one ``event_id``,
    a redelivery, whose ``payload`` then replaces the stored one). Events already final, or owned by a
    live process (this one included), are not touched. Needs the lease started: a claim names its owner."""
    me = lease.owner
    if me is None:
        raise RuntimeError("claiming LINE events needs this process registered (ProcessLease.start)")
    e = _LINE.c

    def job(connection: Connection) -> list[ClaimedEvent]:
        query = select(e.id, e.webhook_event_id, e.chat_key, e.payload, e.received_at, e.process_id).where(
            e.status == "received"
        )
        if event_id is not None:
            query = query.where(e.webhook_event_id == event_id)
        rows = connection.execute(query).all()
        owners = (r.process_id for r in rows if r.process_id)
        dead = dead_owners(connection, owners, here=lease.identity, lease=lease.lease_seconds)
        claimed: list[ClaimedEvent] = []
        for r in rows:
            if not _orphaned(r.process_id, r.received_at, dead=dead, unowned_before=unowned_before):
                continue
            owned = e.process_id.is_(None) if r.process_id is None else e.process_id == r.process_id
            values: dict[str, Any] = {"process_id": me}
            if payload is not None:
                values |= {"payload": payload, "redelivery": True}
            done = connection.execute(
                update(_LINE).where(e.id == r.id, e.status == "received", owned).values(values)
            )
            if done.rowcount == 1:
                stored = payload if payload is not None else r.payload
                claimed.append(
                    ClaimedEvent(r.webhook_event_id, r.chat_key, stored, r.received_at, r.process_id)
                )
        return claimed

    return await db.write(job, name="claiming LINE events")
