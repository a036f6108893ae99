"""The booking flow (預約諮詢): no LLM, a short dialogue kept in the database per conversation.

    「我想預約」 → the next free slots, numbered → 「2」 → 「請問怎麼稱呼？」 → 「王小明」 → 「聯絡方式？」
    → 「a@b.com」 → a summary → 「確認」 → booked, with the .ics link

「我的預約」 lists, 「改期」 moves, 「取消預約」 cancels; 「取消」 / 「算了」 leaves the dialogue.

The dialogue's state (step, offered slots, name, contact) is a ``booking_dialogues`` row, so the next
message may reach another process or arrive after a restart. While a dialogue is open, ``claims`` tells
the engine (before routing) that a plausible answer — "2", a name, an address, "確認" — belongs here.
The booking made at 「確認」 carries an idempotency key derived from the dialogue (its nonce and the
exact request), so a repeated or redelivered 「確認」 books once.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from careerwise import prompts
from careerwise.booking import Availability, BookingService, BookingView, dialogue
from careerwise.booking.contact import parse_contact, parse_name
from careerwise.booking.errors import (
    BookingLimitError,
    BookingNotActiveError,
    InvalidBookingError,
    SlotTakenError,
    SlotUnavailableError,
)
from careerwise.booking.timefmt import day_label, slot_label
from careerwise.events import DeltaEvent, Event
from careerwise.flows.base import FlowContext, FlowRegistry
from careerwise.store import BookingDialogue, as_utc
from careerwise.store.models import new_id

log = logging.getLogger(__name__)
DIALOGUE_TTL = timedelta(minutes=30)
PAGE = 5
TOPIC_CHARS = 200

_T: dict[str, tuple[str, str]] = {
    "offer": ("以下是接下來可以預約的時段（台北時間）：", "The next free consultation slots (Taipei time):"),
    "offer_more": ("更多可以預約的時段（台北時間）：", "More free slots (Taipei time):"),
    "offer_hint": (
        "請回覆編號（例如「2」）或時間（例如「12/02 14:00」）；「更多」看其他時段，「取消」結束預約。",
        'Reply with a number (e.g. "2") or a time (e.g. "12/02 14:00"); "more" for other times, '
        '"cancel" to stop.',
    ),
    "full_until": (
        "目前開放預約的諮詢時段（到 {until} 為止）都已經約滿了。下一個有空檔的日子是 {day}，"
        "從 {opens} 起開放預約，到時候再跟我說「預約」。",
        "Every consultation slot open for booking (up to {until}) is taken. The next day with a free slot "
        'is {day}; it opens for booking on {opens}. Say "book" again then.',
    ),
    "none_free": (
        "目前一年內都沒有可以預約的諮詢時段。",
        "There are no free consultation slots in the coming year.",
    ),
    "no_hours": (
        "教練目前沒有開放諮詢預約時段，所以這裡暫時無法預約。",
        "The coach has no consultation hours open right now, so there is nothing to book here for now.",
    ),
    "contact": ("想直接聯絡教練：{contact}", "To reach the coach directly: {contact}"),
    "no_contact": (
        "教練還沒有留下其他聯絡方式；職涯問題可以先在這裡問我，我會盡力回答。",
        "The coach has not left another way to reach them yet; you can ask me career questions here "
        "meanwhile.",
    ),
    "no_more": ("沒有更多時段了。", "There are no more free slots."),
    "bad_pick": (
        "我沒有看懂是哪個時段，請回覆列表中的編號（例如「1」）。",
        'I could not tell which slot you mean; reply with its number from the list (e.g. "1").',
    ),
    "ask_name": ("好的，{slot}。請問怎麼稱呼您？", "{slot}: noted. What name should the booking be under?"),
    "ask_contact": (
        "謝謝 {name}！請留下聯絡方式：Email 或 LINE ID（例如「LINE: summer.coach」）。",
        'Thanks, {name}! How can Summer reach you: an email address or a LINE ID (e.g. "LINE: summer.coach")?',
    ),
    "confirm": (
        "請確認預約內容：\n時段：{slot}\n姓名：{name}\n聯絡方式：{contact}\n回覆「確認」完成預約，或「取消」放棄。",
        'Please check:\nSlot: {slot}\nName: {name}\nContact: {contact}\nReply "yes" to book, or "cancel" to stop.',
    ),
    "confirm_move": (
        "請確認改期：\n原時段：{old}\n新時段：{slot}\n回覆「確認」完成改期，或「取消」放棄。",
        'Please check the change:\nFrom: {old}\nTo: {slot}\nReply "yes" to move it, or "cancel" to stop.',
    ),
    "confirm_again": ("請回覆「確認」或「取消」。", 'Please reply "yes" or "cancel".'),
    "booked": (
        "預約完成！\n{slot}\n姓名：{name}\n聯絡方式：{contact}\n預約編號：{id}\n加入行事曆（.ics）：{ics}\n"
        "查看或更改預約：輸入「我的預約」、「改期」或「取消預約」。",
        "Booked!\n{slot}\nName: {name}\nContact: {contact}\nBooking: {id}\nAdd to calendar (.ics): {ics}\n"
        'To see or change it, say "my bookings", "reschedule" or "cancel my booking".',
    ),
    "moved": (
        "改期完成！新時段：{slot}\n預約編號：{id}\n加入行事曆（.ics）：{ics}",
        "Moved! New slot: {slot}\nBooking: {id}\nAdd to calendar (.ics): {ics}",
    ),
    "already_booked": (
        "這次預約已經完成了：{slot}（預約編號 {id}）。",
        "That booking is done: {slot} (booking {id}).",
    ),
    "taken": (
        "抱歉，{slot} 剛剛被預約走了。",
        "Sorry, {slot} was just booked by someone else.",
    ),
    "aborted": (
        "好的，已結束這次預約流程。需要時再跟我說「預約」。",
        'OK, I stopped. Say "book" whenever you like.',
    ),
    "list_none": (
        "您目前沒有即將到來的預約。想預約的話，跟我說「預約」。",
        'You have no upcoming bookings. Say "book" to make one.',
    ),
    "list": ("您的預約（台北時間）：", "Your bookings (Taipei time):"),
    "list_hint": (
        "要改期請說「改期」，要取消請說「取消預約」。",
        'Say "reschedule" or "cancel my booking" to change one.',
    ),
    "choose": (
        "要{action}哪一個預約？請回覆編號：",
        "Which booking do you want to {action}? Reply with its number:",
    ),
    "confirm_cancel": (
        "確定要取消 {slot} 的預約嗎？回覆「確認」取消，或「不要」保留。",
        'Cancel the booking on {slot}? Reply "yes" to cancel it, or "no" to keep it.',
    ),
    "cancelled": ("已取消 {slot} 的預約。", "Cancelled the booking on {slot}."),
    "kept": ("好的，預約保留不變。", "OK, the booking stays as it is."),
    "not_active": ("這個預約已經不是有效狀態（{status}）。", "That booking is no longer active ({status})."),
    "limit_held": (
        "您目前已有 {max} 個即將到來的預約，這是同時能保留的上限。請先取消其中一個（說「取消預約」），"
        "或等其中一次諮詢結束後再預約。",
        "You already hold {max} upcoming consultations, the most one person may hold at a time. Cancel "
        'one first (say "cancel my booking"), or book again after one has taken place.',
    ),
    "limit_per_day": (
        "24 小時內最多只能預約 {max} 次，這裡已經達到上限了。請大約 {hours} 小時後再試。",
        "At most {max} bookings can be made in 24 hours, and that many have been made from here. Please "
        "try again in about {hours} hour(s).",
    ),
}
_ACTION = {"cancel": ("取消", "cancel"), "reschedule": ("改期", "reschedule")}


def _t(key: str, zh: bool, **values: object) -> str:
    text = _T[key][0 if zh else 1]
    return text.format(**values) if values else text


@dataclass
class _State:
    step: str
    zh: bool
    data: dict[str, Any]
    nonce: str


class BookingFlow:
    """Registered for the ``booking`` intent (``services.default_flows``); ``claims`` is its
    continuation check."""

    def __init__(self, service: BookingService) -> None:
        self.service = service

    async def __call__(self, ctx: FlowContext) -> AsyncIterator[Event]:
        ctx.state.path = "booking"
        text = await self._respond(ctx)
        ctx.state.mark_text()
        yield DeltaEvent(text=text, phase=1)

    # --- the dialogue state -------------------------------------------------------------------

    async def _load(self, conversation_id: str) -> _State | None:
        async with self.service.db.session() as s:
            row = await s.get(BookingDialogue, conversation_id)
        if row is None:
            return None
        if self.service.now() - as_utc(row.updated_at) > DIALOGUE_TTL:
            return None
        return _State(row.step, row.lang == "zh", dict(row.data), row.nonce)

    async def _save(self, conversation_id: str, state: _State) -> None:
        async with self.service.db.session() as s, s.begin():
            row = await s.get(BookingDialogue, conversation_id)
            if row is None:
                row = BookingDialogue(conversation_id=conversation_id)
                s.add(row)
            row.step, row.lang, row.data, row.nonce = (
                state.step,
                "zh" if state.zh else "en",
                state.data,
                state.nonce,
            )
            row.updated_at = self.service.now()

    async def _clear(self, conversation_id: str) -> None:
        async with self.service.db.session() as s, s.begin():
            row = await s.get(BookingDialogue, conversation_id)
            if row is not None:
                await s.delete(row)

    async def claims(self, conversation_id: str, message: str) -> str | None:
        state = await self._load(conversation_id)
        if state is None or not dialogue.looks_like_answer(state.step, message):
            return None
        return f"a booking dialogue is open in this conversation (step: {state.step})"

    # --- one turn -----------------------------------------------------------------------------

    async def _respond(self, ctx: FlowContext) -> str:
        conv = ctx.conversation_id
        if conv is None:  # the engine always passes one; a direct caller without one gets a list only
            return await self._offer(None, _State("pick", ctx.zh, {}, new_id()), more=False)
        state = await self._load(conv)
        message = dialogue.normalise(ctx.message)
        zh = prompts.is_chinese(message) or (state.zh if state else ctx.zh)
        if state is not None:
            state.zh = zh
            if dialogue.is_abort(message) and state.step != "done":
                await self._clear(conv)
                return _t("aborted", zh)
        cmd = dialogue.command(message)
        if cmd == "list":
            return await self._list(ctx, zh)
        if cmd is not None:
            return await self._choose(ctx, conv, zh, cmd)
        if state is None or (state.step == "done" and not dialogue.is_yes(message)):
            try:  # said before any slot is offered: a client at its limit is not led through the dialogue
                await self.service.check_limits(_client(ctx))
            except BookingLimitError as exc:
                return _limit_text(exc, zh)
            # the coach sees what the person said when asking to book as the booking's topic
            data = {"mode": "book", "topic": " ".join(ctx.message.split())[:TOPIC_CHARS]}
            return await self._offer(conv, _State("pick", zh, data, new_id()), more=False)
        return await self._step(ctx, conv, state, message)

    async def _step(self, ctx: FlowContext, conv: str, state: _State, message: str) -> str:
        zh = state.zh
        av = await self.service.availability()
        if state.step == "done":
            return _t("already_booked", zh, slot=state.data.get("label", ""), id=state.data.get("booking_id"))
        if state.step == "pick":
            if dialogue.wants_more(message):
                return await self._offer(conv, state, more=True)
            offered = [datetime.fromisoformat(x) for x in state.data.get("offered", [])]
            chosen = dialogue.pick(message, offered, av.tz)
            if chosen is None:
                return _t("bad_pick", zh) + "\n" + self._numbered(offered, av, zh)
            state.data["slot"] = chosen.isoformat()
            if state.data.get("mode") == "reschedule" or (
                state.data.get("name") and state.data.get("contact")
            ):
                return await self._to_confirm(conv, state)
            state.step = "name"
            await self._save(conv, state)
            return _t("ask_name", zh, slot=self._label(chosen, av, zh))
        if state.step == "name":
            try:
                state.data["name"] = parse_name(message)
            except InvalidBookingError as exc:
                return f"{exc}. " + _t("ask_name", zh, slot=self._label(self._slot(state), av, zh))
            state.step = "contact"
            await self._save(conv, state)
            return _t("ask_contact", zh, name=state.data["name"])
        if state.step == "contact":
            try:
                state.data["contact"] = parse_contact(message).display()
            except InvalidBookingError as exc:
                return f"{exc}.\n" + _t("ask_contact", zh, name=state.data.get("name", ""))
            return await self._to_confirm(conv, state)
        if state.step == "confirm":
            if dialogue.is_no(message):
                await self._clear(conv)
                return _t("aborted", zh)
            if not dialogue.is_yes(message):
                return _t("confirm_again", zh)
            return await self._commit(ctx, conv, state)
        if state.step == "choose":
            return await self._chosen(conv, state, message)
        if state.step == "confirm_cancel":
            if dialogue.is_no(message):
                await self._clear(conv)
                return _t("kept", zh)
            if not dialogue.is_yes(message):
                return _t("confirm_again", zh)
            await self._clear(conv)
            try:
                view = await self.service.cancel(state.data["booking_id"])
            except BookingNotActiveError as exc:
                return _t("not_active", zh, status=exc.details["status"])
            return _t("cancelled", zh, slot=self._label(view.slot_start, av, zh, view.slot_end))
        log.warning("booking dialogue %s: unknown step %r; starting over", conv, state.step)
        return await self._offer(conv, _State("pick", zh, {"mode": "book"}, new_id()), more=False)

    # --- pieces -------------------------------------------------------------------------------

    async def _offer(self, conv: str | None, state: _State, *, more: bool) -> str:
        av = await self.service.availability()
        seen = [datetime.fromisoformat(x) for x in state.data.get("offered", [])] if more else []
        after = seen[-1] + timedelta(minutes=1) if seen else None
        slots = await self.service.next_free(after=after, limit=PAGE)
        if after is not None:
            slots = [s for s in slots if s.start >= after]
        if not slots:
            return _t("no_more", state.zh) if more else await self._no_slots(state.zh)
        state.step = "pick"
        state.data["offered"] = [s.start.isoformat() for s in slots]
        if conv is not None:
            await self._save(conv, state)
        head = _t("offer_more" if more else "offer", state.zh)
        starts = [s.start for s in slots]
        return f"{head}\n{self._numbered(starts, av, state.zh)}\n{_t('offer_hint', state.zh)}"

    async def _no_slots(self, zh: bool) -> str:
        """Nothing to offer: never a dead end. No hours at all says so; a full horizon says when the
        next slots open; both say how to reach the coach (the configured contact line)."""
        out = await self.service.outlook()
        if not out.has_hours:
            log.warning("booking: asked to book but no consultation hours are set")
            head = _t("no_hours", zh)
        elif out.opening is None:
            head = _t("none_free", zh)
        else:
            head = _t(
                "full_until",
                zh,
                until=day_label(out.bookable_until, zh),
                day=day_label(out.opening.day, zh),
                opens=day_label(out.opening.opens_on, zh),
            )
        contact = out.contact_line
        return head + "\n" + (_t("contact", zh, contact=contact) if contact else _t("no_contact", zh))

    def _numbered(self, starts: list[datetime], av: Availability, zh: bool) -> str:
        return "\n".join(f"{i}. {self._label(s, av, zh)}" for i, s in enumerate(starts, 1))

    def _label(self, start: datetime, av: Availability, zh: bool, end: datetime | None = None) -> str:
        return slot_label(start, end or start + timedelta(minutes=av.slot_minutes), av.tz, zh=zh)

    def _slot(self, state: _State) -> datetime:
        return datetime.fromisoformat(state.data["slot"])

    async def _to_confirm(self, conv: str, state: _State) -> str:
        av = await self.service.availability()
        state.step = "confirm"
        await self._save(conv, state)
        slot = self._label(self._slot(state), av, state.zh)
        if state.data.get("mode") == "reschedule":
            old = await self.service.get(state.data["booking_id"])
            return _t(
                "confirm_move",
                state.zh,
                old=self._label(old.slot_start, av, state.zh, old.slot_end),
                slot=slot,
            )
        return _t("confirm", state.zh, slot=slot, name=state.data["name"], contact=state.data["contact"])

    def _key(self, conv: str, state: _State) -> str:
        request = "|".join(
            str(state.data.get(k, "")) for k in ("mode", "booking_id", "slot", "name", "contact")
        )
        return f"chat:{conv}:{state.nonce}:{hashlib.sha256(request.encode()).hexdigest()[:16]}"

    async def _commit(self, ctx: FlowContext, conv: str, state: _State) -> str:
        av = await self.service.availability()
        zh, start = state.zh, self._slot(state)
        try:
            if state.data.get("mode") == "reschedule":
                result = await self.service.reschedule(
                    state.data["booking_id"], slot_start=start, idempotency_key=self._key(conv, state)
                )
            else:
                contact = state.data["contact"]
                result = await self.service.book(
                    slot_start=start,
                    name=state.data["name"],
                    contact=contact.removeprefix("LINE: "),
                    user_id=ctx.user_id,
                    conversation_id=conv,
                    channel=ctx.channel,
                    idempotency_key=self._key(conv, state),
                    client_key=_client(ctx),
                    topic=state.data.get("topic"),
                )
        except BookingLimitError as exc:
            await self._clear(conv)
            return _limit_text(exc, zh)
        except (SlotTakenError, SlotUnavailableError):
            taken = _t("taken", zh, slot=self._label(start, av, zh))
            state.data.pop("slot", None)
            return taken + "\n" + await self._offer(conv, state, more=False)
        except BookingNotActiveError as exc:
            await self._clear(conv)
            return _t("not_active", zh, status=exc.details["status"])
        view = result.booking
        label = self._label(view.slot_start, av, zh, view.slot_end)
        await self._save(conv, _State("done", zh, {"booking_id": view.id, "label": label}, state.nonce))
        ics = self.ics_link(view)
        if state.data.get("mode") == "reschedule":
            return _t("moved", zh, slot=label, id=view.id, ics=ics)
        return _t(
            "booked", zh, slot=label, name=view.name, contact=view.contact.display(), id=view.id, ics=ics
        )

    def ics_link(self, view: BookingView) -> str:
        return f"/api/bookings/{view.id}/ics?token={self.service.token_for(view)}"

    async def _mine(self, ctx: FlowContext) -> list[BookingView]:
        return await self.service.list_bookings(
            user_id=ctx.user_id, conversation_id=ctx.conversation_id, active_only=True
        )

    async def _list(self, ctx: FlowContext, zh: bool) -> str:
        mine = await self._mine(ctx)
        if not mine:
            return _t("list_none", zh)
        av = await self.service.availability()
        lines = [
            f"{i}. {self._label(b.slot_start, av, zh, b.slot_end)} — {b.name}（{b.id[:8]}）"
            for i, b in enumerate(mine, 1)
        ]
        return "\n".join([_t("list", zh), *lines, _t("list_hint", zh)])

    async def _choose(self, ctx: FlowContext, conv: str, zh: bool, action: str) -> str:
        mine = await self._mine(ctx)
        if not mine:
            await self._clear(conv)
            return _t("list_none", zh)
        if len(mine) == 1:
            return await self._act(conv, _State("choose", zh, {"action": action}, new_id()), mine[0])
        av = await self.service.availability()
        state = _State("choose", zh, {"action": action, "bookings": [b.id for b in mine]}, new_id())
        await self._save(conv, state)
        lines = [f"{i}. {self._label(b.slot_start, av, zh, b.slot_end)}" for i, b in enumerate(mine, 1)]
        verb = _ACTION[action][0 if zh else 1]
        return "\n".join([_t("choose", zh, action=verb), *lines])

    async def _chosen(self, conv: str, state: _State, message: str) -> str:
        ids: list[str] = state.data.get("bookings", [])
        n = dialogue.number(message)
        if n is None or not 1 <= n <= len(ids):
            return _t("bad_pick", state.zh)
        return await self._act(conv, state, await self.service.get(ids[n - 1]))

    async def _act(self, conv: str, state: _State, booking: BookingView) -> str:
        av = await self.service.availability()
        if state.data["action"] == "cancel":
            state.step, state.data = "confirm_cancel", {"booking_id": booking.id}
            await self._save(conv, state)
            return _t(
                "confirm_cancel",
                state.zh,
                slot=self._label(booking.slot_start, av, state.zh, booking.slot_end),
            )
        fresh = _State("pick", state.zh, {"mode": "reschedule", "booking_id": booking.id}, new_id())
        return await self._offer(conv, fresh, more=False)


def _client(ctx: FlowContext) -> str | None:
    """Who the booking limits count: the caller's IP on the web; on LINE the LINE user (LINE's servers
    send every user's messages, so their IP would be everyone at once), on the OpenAI-compatible API
    the key."""
    if ctx.client is not None:
        return ctx.client
    return ctx.user_id if ctx.channel != "web" else None


def _limit_text(exc: BookingLimitError, zh: bool) -> str:
    maximum = exc.details["max"]
    if exc.details["limit"] == "held":
        return _t("limit_held", zh, max=maximum)
    return _t("limit_per_day", zh, max=maximum, hours=max(1, round(exc.retry_after / 3600)))


def register_booking_flow(flows: FlowRegistry, service: BookingService) -> BookingFlow:
    """The flow for the ``booking`` intent, and its claim on the messages of an open dialogue."""
    flow = BookingFlow(service)
    flows.register("booking", None, "booking", flow)
    flows.register_continuation("booking", flow.claims)
    return flow
