"""The LINE channel's work on stored events: :class:`LineChannel` stores each verified event once, queues
the ones that need an answer per chat (turns of one chat never overlap and keep their order), runs each
turn through the engine with the chat's conversation and the channel's assistant, records every event's
outcome, and at start-up takes over the events a dead process left unanswered.

Sending goes through :class:`~careerwise.channels.line.delivery.LineDelivery`; the webhook's signature
and parsing are in ``webhook``. The whole order of work is described in the package docstring.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from pydantic import ValidationError
from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from careerwise import prompts
from careerwise.assistants import DEFAULT_ASSISTANT
from careerwise.channels.line.delivery import MESSAGES_PER_REPLY, TEXT_LIMIT, LineDelivery, _describe
from careerwise.channels.line.webhook import WebhookEvent, WebhookSource, verify_signature
from careerwise.channels.text import reply_plain_text, split_messages
from careerwise.engine import Engine, TurnRequest
from careerwise.errors import (
    ConflictError,
    ConversationBusyError,
    LineAssistantUnavailableError,
    NotFoundError,
    RateLimitedError,
    UserInputError,
)
from careerwise.events import Event
from careerwise.reply import TurnReply
from careerwise.store import Database, LineEventRecord, LineUser, as_utc
from careerwise.store.recovery import ClaimedEvent, claim_line_events
from careerwise.tracing import background

# The LINE SDK (and aiohttp under it) is imported where it is used, not here: a serving process without a
# LINE channel configured never holds its memory (a test keeps it unloaded: test_memory_serving.py).

# the package's one logger: operators and tests select the LINE channel's records by this name
log = logging.getLogger("careerwise.channels.line")

NOT_TEXT = "我目前只看得懂文字訊息，請用文字告訴我你的問題。\n(I can only read text messages for now.)"
TOO_LONG = (
    "這則訊息太長了（上限 {limit} 字），請精簡或分段傳送。",
    "That message is too long (the limit is {limit} characters). Please shorten it or split it up.",
)
BUSY_POLL_SECONDS = 0.25
BUSY = (
    "上一個問題還在回覆中，請稍等一下再傳。",
    "I'm still answering your previous message; please wait a moment.",
)
OVER_BUDGET = (
    "今天的對話額度已經用完了，明天（台灣時間午夜後）再來找 Summer 聊吧。",
    "You've used today's conversation allowance; Summer can answer again after midnight Taipei time.",
)
OVERFLOW = ("（內容太長，其餘已省略）", "(The rest was too long for LINE and was left out.)")
INTERRUPTED = (
    "抱歉，服務剛才重新啟動，沒來得及回覆你的訊息，請再傳一次。\n"
    "(Sorry, the service restarted before it could answer your message; please send it again.)"
)
# a message left unanswered by a dead process is answered at start-up if it is younger than this; an
# older one gets INTERRUPTED instead: an answer that long after the question would come out of the blue
REANSWER_WITHIN = timedelta(hours=1)


# --------------------------------------------------------------------------- the channel

JobKind = Literal["text", "not_text", "apology"]


@dataclass(frozen=True)
class _Job:
    event: WebhookEvent
    kind: JobKind
    chat_key: str


def _job_for(event: WebhookEvent) -> _Job | None:
    """What to do with an event: answer a text, say that only text is read, or nothing."""
    if event.type != "message" or event.mode != "active" or event.message is None or event.source is None:
        return None
    key = event.source.chat_key
    if key is None:
        return None
    if event.message.type == "text" and event.message.text and event.message.text.strip():
        return _Job(event, "text", key)
    return _Job(event, "not_text", key)


ASSISTANT_UNAVAILABLE = LineAssistantUnavailableError.code  # counted in careerwise_errors_total


class LineChannel(LineDelivery):
    """Receives verified webhook events and answers them in background tasks (see the module doc)."""

    def __init__(
        self,
        *,
        engine: Engine,
        db: Database,
        channel_secret: str,
        access_token: str,
        api_base_url: str = "https://api.line.me",
        loading_after: float = 1.0,
        request_timeout: float = 15.0,
        shutdown_timeout: float | None = None,
        assistant: str = DEFAULT_ASSISTANT,
        reanswer_within: timedelta = REANSWER_WITHIN,
    ) -> None:
        self.engine = engine
        self.db = db
        self.assistant = assistant
        self.reanswer_within = reanswer_within
        self._secret = channel_secret
        self.loading_after = loading_after
        self.request_timeout = request_timeout
        self.shutdown_timeout = shutdown_timeout or engine.limits.turn_deadline + 30
        from linebot.v3.messaging import AsyncApiClient, AsyncMessagingApi, Configuration

        self._client = AsyncApiClient(Configuration(host=api_base_url.rstrip("/"), access_token=access_token))
        self.api = AsyncMessagingApi(self._client)
        self._queues: dict[str, deque[_Job]] = {}
        self._workers: dict[str, asyncio.Task[None]] = {}
        self.failures = 0

    # ---- receiving (in the webhook request)

    def verify(self, body: bytes, header: str | None) -> bool:
        return verify_signature(self._secret, body, header)

    async def receive(self, events: list[WebhookEvent]) -> int:
        """Store each new event and queue the ones that need an answer. Returns how many were queued;
        a redelivered event that is stored already is dropped here, unless the process that was
        answering it died before it had an outcome: then this process answers it."""
        queued = 0
        for event in events:
            job = _job_for(event)
            if not await self._store(event, job):
                if job is not None and await self._take_over(event):
                    log.warning(
                        "line channel: event %s was delivered again while the process answering it had "
                        "died; answering it here",
                        event.webhookEventId,
                    )
                    self.engine.telemetry.metrics.recovered.labels("line_taken_over").inc()
                    self._enqueue(job)
                    queued += 1
                    continue
                log.info(
                    "line channel: event %s was delivered again; not answered twice", event.webhookEventId
                )
                continue
            if job is not None:
                self._enqueue(job)
                queued += 1
        return queued

    async def _take_over(self, event: WebhookEvent) -> bool:
        """Claim a stored event that is still 'received' by a dead process (store/recovery.py)."""
        process = self.engine.process
        if process is None or process.owner is None:
            return False  # an unregistered process cannot tell a dead owner from a live one
        claimed = await claim_line_events(
            self.db,
            process,
            unowned_before=self.engine.unowned_cutoff(),
            event_id=event.webhookEventId,
            payload=event.model_dump(mode="json"),
        )
        return bool(claimed)

    async def _store(self, event: WebhookEvent, job: _Job | None) -> bool:
        process = self.engine.process
        record = LineEventRecord(
            webhook_event_id=event.webhookEventId,
            event_type=event.type,
            chat_key=event.source.chat_key if event.source else None,
            redelivery=event.deliveryContext.isRedelivery,
            status="received" if job is not None else "ignored",
            processed_at=None if job is not None else datetime.now(UTC),
            # kept until the outcome is stored, so another process can answer it if this one dies
            process_id=process.owner if process is not None and job is not None else None,
            payload=event.model_dump(mode="json") if job is not None else None,
        )
        try:
            async with self.db.session() as s, s.begin():
                s.add(record)
        except IntegrityError:
            return False
        return True

    # ---- one queue per chat: turns of one chat never overlap and keep their order

    def _enqueue(self, job: _Job) -> None:
        queue = self._queues.setdefault(job.chat_key, deque())
        queue.append(job)
        if job.chat_key not in self._workers:
            task = asyncio.create_task(self._drain(job.chat_key), name=f"line-chat-{job.chat_key[:12]}")
            self._workers[job.chat_key] = task
            task.add_done_callback(self._worker_done)

    async def _drain(self, chat_key: str) -> None:
        queue = self._queues[chat_key]
        try:
            while queue:
                await self._handle(queue.popleft())
        finally:
            # no await between the empty check and here: a job queued meanwhile would have found us running
            self._queues.pop(chat_key, None)
            self._workers.pop(chat_key, None)

    def _worker_done(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            log.warning("line channel: %s was cancelled with its queue unanswered", task.get_name())
            return
        what = f"line channel: {task.get_name()} failed"
        if background.task_failed(task, task=background.LINE_CHAT_QUEUE, logger=log, what=what) is not None:
            self.failures += 1

    @property
    def busy(self) -> bool:
        return bool(self._workers)

    async def _handle(self, job: _Job) -> None:
        event = job.event
        trace_id: str | None = None
        problem: str | None = None
        try:
            if job.kind == "text":
                assert event.message is not None and event.message.text is not None
                try:
                    texts, trace_id = await self._answer(job, event.message.text)
                except LineAssistantUnavailableError as exc:
                    # the operator's problem, not the user's: logged and counted, and the user still
                    # gets the channel's usual failure line rather than silence
                    problem = str(exc)
                    self._assistant_failed(problem, event.webhookEventId)
                    texts = [prompts.line("internal_error", prompts.is_chinese(event.message.text))]
            elif job.kind == "not_text":
                texts = [NOT_TEXT]
            else:
                texts = [INTERRUPTED]
            delivery = await self._deliver(event, job.chat_key, texts)
        except Exception as exc:
            self.failures += 1
            log.exception("line channel: event %s could not be answered", event.webhookEventId)
            await self._finish(event.webhookEventId, "failed", None, trace_id, _describe(exc)[:2000])
            return
        status = "failed" if problem else "apologised" if job.kind == "apology" else "answered"
        await self._finish(event.webhookEventId, status, delivery, trace_id, problem)

    # ---- the channel's assistant

    async def assistant_problem(self) -> str | None:
        """Why the configured assistant cannot answer (unknown, disabled), or None when it can. Read
        fresh: the same check the engine makes, so what it says holds for the next turn."""
        try:
            await self.engine.settings_store.for_turn(self.assistant)
        except NotFoundError:
            return f"the LINE assistant {self.assistant!r} (CAREERWISE_LINE_ASSISTANT) does not exist"
        except ConflictError:
            return f"the LINE assistant {self.assistant!r} (CAREERWISE_LINE_ASSISTANT) is disabled"
        return None

    async def check_assistant(self) -> str | None:
        """At start-up: log (ERROR) and count a configured assistant that cannot answer. The channel runs
        anyway: the assistant may be created or enabled later, and each turn checks again."""
        try:
            problem = await self.assistant_problem()
        except Exception:  # the database is not reachable yet: the turns will check (and say) again
            self.failures += 1
            log.exception("line channel: could not check the assistant %r at start-up", self.assistant)
            return None
        if problem is not None:
            self._assistant_failed(problem, None)
        return problem

    def _assistant_failed(self, problem: str, event_id: str | None) -> None:
        self.failures += 1
        self.engine.telemetry.metrics.errors.labels(ASSISTANT_UNAVAILABLE).inc()
        where = f"event {event_id} got the failure reply" if event_id else "at start-up"
        log.error(
            "line channel: %s (%s); create or enable it (careerwise assistants) or change the setting",
            problem,
            where,
        )

    async def _finish(
        self, event_id: str, status: str, delivery: str | None, trace_id: str | None, error: str | None
    ) -> None:
        try:
            async with self.db.session() as s, s.begin():
                await s.execute(
                    update(LineEventRecord)
                    .where(LineEventRecord.webhook_event_id == event_id)
                    .values(
                        status=status,
                        delivery=delivery,
                        trace_id=trace_id,
                        error=error,
                        processed_at=datetime.now(UTC),
                        payload=None,  # the message's text stays in the conversation, not here
                    )
                )
        except Exception:
            self.failures += 1
            log.exception("line channel: could not store the outcome of event %s", event_id)

    # ---- a turn

    async def _answer(self, job: _Job, text: str) -> tuple[list[str], str | None]:
        zh = prompts.is_chinese(text)
        loading = None
        if job.event.source is not None and job.event.source.type == "user":
            loading = asyncio.create_task(self._loading_later(job.chat_key))
        try:
            reply = await self._turn(job.chat_key, text, zh)
        finally:
            if loading is not None:
                loading.cancel()
                await asyncio.wait([loading])
        if isinstance(reply, str):
            return [reply], None
        body = reply_plain_text(reply, zh) or prompts.line("internal_error", zh)
        overflow = OVERFLOW[0] if zh else OVERFLOW[1]
        return split_messages(
            body, limit=TEXT_LIMIT, max_messages=MESSAGES_PER_REPLY, overflow_note=overflow
        ), (reply.trace_id or None)

    async def _turn(self, chat_key: str, text: str, zh: bool) -> TurnReply | str:
        conversation_id = await self._conversation_of(chat_key)
        waited = 0.0
        while True:
            request = TurnRequest(
                message=text,
                conversation_id=conversation_id,
                channel="line",
                user_id=f"line:{chat_key}",
                assistant=self.assistant,
            )
            try:
                events: list[Event] = [e async for e in self.engine.run(request)]
            except (NotFoundError, ConflictError) as exc:
                # the engine checks the assistant first: ask which of the two was not found (only on
                # this path, so a normal turn reads nothing more)
                problem = await self.assistant_problem()
                if problem is not None:
                    raise LineAssistantUnavailableError(problem) from exc
                if conversation_id is None or isinstance(exc, ConflictError):
                    raise
                log.warning("line channel: the conversation of %s is gone; starting a new one", chat_key)
                conversation_id = None
                continue
            except ConversationBusyError:
                # another app process is still answering this chat's previous message (this process's
                # own turns are already queued one at a time): wait for it, then answer after it
                if waited >= self.engine.limits.turn_deadline:
                    return BUSY[0] if zh else BUSY[1]
                await asyncio.sleep(BUSY_POLL_SECONDS)
                waited += BUSY_POLL_SECONDS
                continue
            except RateLimitedError:
                return OVER_BUDGET[0] if zh else OVER_BUDGET[1]
            except UserInputError:
                limit = self.engine.limits.max_message_chars
                return (TOO_LONG[0] if zh else TOO_LONG[1]).format(limit=limit)
            reply = TurnReply.from_events(events)
            if reply.conversation_id and reply.conversation_id != conversation_id:
                await self._link(chat_key, reply.conversation_id)
            return reply

    async def _conversation_of(self, chat_key: str) -> str | None:
        async with self.db.session() as s:
            return await s.scalar(select(LineUser.conversation_id).where(LineUser.line_user_id == chat_key))

    async def _link(self, chat_key: str, conversation_id: str) -> None:
        async with self.db.session() as s, s.begin():
            row = await s.get(LineUser, chat_key)
            if row is None:
                s.add(LineUser(line_user_id=chat_key, conversation_id=conversation_id))
            else:
                row.conversation_id = conversation_id
                row.updated_at = datetime.now(UTC)

    # ---- start-up recovery

    async def recover(self) -> tuple[int, int]:
        """At start-up: take over the events that dead processes left 'received' (store/recovery.py)
        and queue them: answered again when younger than ``reanswer_within``, else (or when the stored
        event cannot be read back) an apology asks the chat to send the message again. Returns how many
        were re-queued and how many get the apology; logged and counted. A failure to read them is
        logged and counted, and start-up goes on: a redelivery of such an event is still answered."""
        process = self.engine.process
        if process is None or process.owner is None:
            log.error("line channel: this process is not registered; received events are not recovered")
            background.count_failure(background.STARTUP_RECOVERY)
            return 0, 0
        try:
            claimed = await claim_line_events(self.db, process, unowned_before=self.engine.unowned_cutoff())
        except Exception:
            self.failures += 1
            log.exception("line channel: the events left unanswered by dead processes could not be read")
            background.count_failure(background.STARTUP_RECOVERY)
            return 0, 0
        now = datetime.now(UTC)
        requeued = apologised = 0
        for found in claimed:
            job = self._recovered_job(found, fresh=as_utc(found.received_at) >= now - self.reanswer_within)
            if job is None:
                continue
            self._enqueue(job)
            if job.kind == "apology":
                apologised += 1
            else:
                requeued += 1
        recovered = self.engine.telemetry.metrics.recovered
        recovered.labels("line_requeued").inc(requeued)
        recovered.labels("line_apologised").inc(apologised)
        if claimed:
            log.warning(
                "line channel: %d event(s) left unanswered by dead processes: %d answered again, "
                "%d get an apology",
                len(claimed),
                requeued,
                apologised,
            )
        return requeued, apologised

    def _recovered_job(self, found: ClaimedEvent, *, fresh: bool) -> _Job | None:
        """The job for an event taken over at start-up: the event's own when it is fresh, else the
        apology (to the event's chat); None when there is no chat to send anything to."""
        event: WebhookEvent | None = None
        if found.payload is not None:
            try:
                event = WebhookEvent.model_validate(found.payload)
            except ValidationError as exc:
                log.warning(
                    "line channel: stored event %s does not parse (%s); apologising instead",
                    found.webhook_event_id,
                    exc.errors(include_input=False),
                )
        job = _job_for(event) if event is not None else None
        if job is not None and fresh:
            return job
        chat_key = job.chat_key if job is not None else found.chat_key
        if chat_key is None:
            self.failures += 1
            log.error("line channel: event %s has no chat to apologise to", found.webhook_event_id)
            return None
        # a stale event's reply token has expired: the apology is pushed
        apology = WebhookEvent(
            type="message",
            webhookEventId=found.webhook_event_id,
            source=WebhookSource(type="user", userId=chat_key),
        )
        return _Job(apology, "apology", chat_key)

    # ---- shutdown

    async def aclose(self) -> None:
        """Let queued turns finish (up to ``shutdown_timeout``), then close the HTTP client."""
        try:
            workers = set(self._workers.values())
            if workers:
                log.info("line channel: waiting for %d chat(s) to be answered before stopping", len(workers))
                _done, pending = await asyncio.wait(workers, timeout=self.shutdown_timeout)
                for task in pending:
                    task.cancel()
                if pending:
                    log.error(
                        "line channel: %d chat(s) still unanswered at shutdown were cancelled", len(pending)
                    )
                    await asyncio.wait(pending)
        finally:
            await self._client.close()


def channel_problem(secret: str | None, token: str | None) -> str | None:
    """Why LINE cannot run with these settings, or None when it can."""
    missing = [
        name
        for name, value in (
            ("CAREERWISE_LINE_CHANNEL_SECRET", secret),
            ("CAREERWISE_LINE_CHANNEL_ACCESS_TOKEN", token),
        )
        if not value
    ]
    if missing:
        return "LINE is not configured: set " + " and ".join(missing)
    return None
