"""The booking service: free slots, book / cancel / reschedule / list, tokens, calendars; the
availability it reads (weekly hours, default hours, exceptions) is :mod:`careerwise.booking._availability`.

Every rule that protects a booking is enforced in one transaction with the database as the judge:
the partial unique index ``uq_bookings_active_slot`` refuses a second active booking of a slot, and
the unique ``idempotency_key`` makes a retried request find the booking the first one made. Code
checks before the write are for clear messages, never for correctness.

The per-client limits (:class:`BookingLimits`: bookings made in 24 hours, upcoming bookings held) are
counted in the same transaction as the insert, the new row included, so concurrent requests from one
client cannot pass them together: SQLite's write lock serialises the transactions, and on PostgreSQL
a transaction-scoped advisory lock on the client's key does.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from sqlalchemy import func, or_, select, text, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from careerwise.booking import ics
from careerwise.booking._availability import (
    MAX_START_OFFSET_DAYS,
    AvailabilityMixin,
    _rowcount,
)
from careerwise.booking.contact import Contact, parse_contact, parse_name
from careerwise.booking.errors import (
    BookingLimitError,
    BookingNotActiveError,
    BookingNotFoundError,
    IdempotencyKeyReusedError,
    InvalidBookingError,
    SlotTakenError,
    SlotUnavailableError,
)
from careerwise.booking.hours import Weekly
from careerwise.booking.slots import (
    DEFAULT_COACH,
    Availability,
    Slot,
    find_slot,
    free_slots,
    local_instant,
    local_today,
)
from careerwise.booking.timefmt import slot_label
from careerwise.store import (
    Booking,
    Database,
    as_utc,
)
from careerwise.store.models import new_id

log = logging.getLogger(__name__)
MAX_DAYS = 90
_REASONS = {
    "not_open": "is not an open consultation slot",
    "too_soon": "starts too soon to be booked",
    "past": "is in the past",
    "beyond_horizon": "is further ahead than bookings are open",
}


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class BookingView:
    id: str
    coach_id: str
    slot_start: datetime
    slot_end: datetime
    name: str
    contact: Contact
    status: str
    user_id: str | None
    conversation_id: str | None
    channel: str
    origin_id: str
    rescheduled_from: str | None
    created_at: datetime
    updated_at: datetime
    client_key: str | None = None
    topic: str | None = None

    @classmethod
    def of(cls, row: Booking) -> BookingView:
        return cls(
            id=row.id,
            coach_id=row.coach_id,
            slot_start=as_utc(row.slot_start),
            slot_end=as_utc(row.slot_end),
            name=row.name,
            contact=Contact("email" if row.contact_kind == "email" else "line", row.contact),
            status=row.status,
            user_id=row.user_id,
            conversation_id=row.conversation_id,
            channel=row.channel,
            origin_id=row.origin_id,
            rescheduled_from=row.rescheduled_from,
            created_at=as_utc(row.created_at),
            updated_at=as_utc(row.updated_at),
            client_key=row.client_key,
            topic=row.topic,
        )


@dataclass(frozen=True)
class BookingLimits:
    """What one client (``client_key``: an IP, a LINE user) may do; 0 = no limit. A booking made
    without a client key (the admin CLI, a direct caller) is not limited."""

    per_day: int = 0  # bookings made in any 24 hours, cancelled ones included (reschedules are not new)
    held: int = 0  # active bookings whose slot has not ended yet


_DAY = timedelta(hours=24)


@dataclass(frozen=True)
class BookResult:
    booking: BookingView
    created: bool  # False: an idempotent replay returned the booking made earlier


class BookingService(AvailabilityMixin):
    def __init__(
        self,
        db: Database,
        *,
        token_key: bytes,
        coach_id: str = DEFAULT_COACH,
        clock: Callable[[], datetime] = _now,
        limits: BookingLimits | None = None,
        default_hours: Weekly | None = None,
        contact_line: str = "",
    ) -> None:
        """``default_hours``: the weekly hours that apply until an administrator confirms or edits them
        (none by default here; the app passes CAREERWISE_DEFAULT_HOURS). ``contact_line``: how to reach
        the coach, told when no slot can be offered."""
        self.db = db
        self.limits = limits or BookingLimits()
        self.default_hours: Weekly = dict(default_hours or {})
        self.contact_line = contact_line.strip()
        self.coach_id = coach_id
        self._token_key = token_key
        self._clock = clock

    # --- slots --------------------------------------------------------------------------------

    async def free_slots(
        self, *, start_day: date | None = None, days: int = 7, limit: int | None = None
    ) -> list[Slot]:
        if not 1 <= days <= MAX_DAYS:
            raise InvalidBookingError(f"days must be 1 to {MAX_DAYS}")
        async with self.db.session() as s:
            av = await self._availability(s)
            today = local_today(av, self.now())
            first = start_day or today
            # no slot lies outside the horizon (at most a year ahead) or in the past, and a day near the
            # ends of the calendar would overflow the window's arithmetic: refused, not a 500
            if abs((first - today).days) > MAX_START_OFFSET_DAYS:
                raise InvalidBookingError(
                    f"the first day must be within {MAX_START_OFFSET_DAYS} days of today ({today})"
                )
            return await self._free(s, av, first, days, limit)

    async def _free(
        self, s: AsyncSession, av: Availability, start_day: date, days: int, limit: int | None
    ) -> list[Slot]:
        lo = datetime.combine(start_day - timedelta(days=1), datetime.min.time(), UTC)
        hi = datetime.combine(start_day + timedelta(days=days + 1), datetime.min.time(), UTC)
        busy = (
            await s.execute(
                select(Booking.slot_start, Booking.slot_end).where(
                    Booking.coach_id == self.coach_id,
                    Booking.status == "active",
                    Booking.slot_start < hi,
                    Booking.slot_end > lo,
                )
            )
        ).all()
        slots = free_slots(av, now=self.now(), start_day=start_day, days=days, busy=[(a, b) for a, b in busy])
        return slots[:limit] if limit is not None else slots

    async def next_free(self, *, after: datetime | None = None, limit: int = 5) -> list[Slot]:
        """The next free slots (from ``after`` when given, else from now) within the booking horizon."""
        async with self.db.session() as s:
            av = await self._availability(s)
            today = local_today(av, self.now())
            start = max(today, as_utc(after).astimezone(av.tz).date()) if after else today
            days = max(1, min(MAX_DAYS, (today + timedelta(days=av.horizon_days) - start).days + 1))
            slots = await self._free(s, av, start, days, None)
        if after is not None:
            later = [x for x in slots if x.start >= as_utc(after)]
            slots = later or slots
        return slots[:limit]

    def slot_json(self, slot: Slot, av: Availability) -> dict[str, Any]:
        return {
            "start": slot.start.isoformat().replace("+00:00", "Z"),
            "end": slot.end.isoformat().replace("+00:00", "Z"),
            "start_local": slot.start.astimezone(av.tz).isoformat(),
            "label": slot.label(av.tz, zh=True),
            "label_en": slot.label(av.tz, zh=False),
        }

    async def _next_free_json(self, after: datetime) -> list[dict[str, Any]]:
        av = await self.availability()
        return [self.slot_json(x, av) for x in await self.next_free(after=after)]

    async def _bookable(self, start: datetime) -> Slot:
        av = await self.availability()
        slot, reason = find_slot(av, start, now=self.now())
        if slot is None:
            label = slot_label(start, start + timedelta(minutes=av.slot_minutes), av.tz, zh=False)
            raise SlotUnavailableError(
                f"{label} {_REASONS[reason]}; pick one of the free slots",
                next_free=await self._next_free_json(start),
            )
        return slot

    # --- bookings -------------------------------------------------------------------------------

    async def book(
        self,
        *,
        slot_start: datetime,
        name: str,
        contact: str,
        user_id: str | None = None,
        conversation_id: str | None = None,
        channel: str = "web",
        idempotency_key: str | None = None,
        client_key: str | None = None,
        topic: str | None = None,
    ) -> BookResult:
        """``client_key`` names who asks ("ip:1.2.3.4", "line:U123") for :class:`BookingLimits`;
        ``topic``: what the consultation is about (at most 200 characters; blank = none)."""
        clean_name, clean_contact = parse_name(name), parse_contact(contact)
        clean_topic = " ".join((topic or "").split()) or None
        if clean_topic is not None and len(clean_topic) > 200:
            raise InvalidBookingError("the topic is longer than 200 characters")
        start = _slot_start_utc(slot_start, self.now())
        digest = _request_hash("book", self.coach_id, start, clean_name, clean_contact, user_id)
        if idempotency_key is not None:
            replay = await self._replay(idempotency_key, digest)
            if replay is not None:
                return BookResult(replay, created=False)
        slot = await self._bookable(start)
        now = self.now()
        row = Booking(
            coach_id=self.coach_id,
            slot_start=slot.start,
            slot_end=slot.end,
            user_id=user_id,
            conversation_id=conversation_id,
            name=clean_name,
            contact=clean_contact.value,
            contact_kind=clean_contact.kind,
            status="active",
            channel=channel,
            idempotency_key=idempotency_key,
            request_hash=digest if idempotency_key is not None else None,
            client_key=client_key,
            topic=clean_topic,
            created_at=now,
            updated_at=now,
        )
        row.origin_id = row.id = new_id()
        await self.check_limits(client_key)  # the clear refusal before the slot is looked at
        try:
            async with self.db.session() as s, s.begin():
                await self._lock_client(s, client_key)
                s.add(row)
                await s.flush()
                await self._refuse_overlap(s, row)
                await self._refuse_over_limits(s, client_key, now=now, counting_new=True)
        except IntegrityError as exc:
            return BookResult(await self._after_integrity_error(exc, idempotency_key, digest, start), False)
        log.info("booking %s: %s booked by %s", row.id, slot.start.isoformat(), channel)
        return BookResult(BookingView.of(row), created=True)

    async def check_limits(self, client_key: str | None) -> None:
        """BookingLimitError (429) when ``client_key`` may not make one more booking now; nothing when
        no limit applies. :meth:`book` checks again inside its transaction, which is the guarantee."""
        if client_key is None or not (self.limits.per_day or self.limits.held):
            return
        async with self.db.session() as s:
            await self._refuse_over_limits(s, client_key, now=self.now(), counting_new=False)

    async def _lock_client(self, s: AsyncSession, client_key: str | None) -> None:
        """PostgreSQL: one client's bookings are counted and inserted one transaction at a time (READ
        COMMITTED would let two concurrent transactions each miss the other's new row). SQLite's write
        lock already serialises every writing transaction."""
        if client_key is not None and self.db.is_postgresql and (self.limits.per_day or self.limits.held):
            await s.execute(
                text("SELECT pg_advisory_xact_lock(hashtext(:key))"), {"key": f"booking:{client_key}"}
            )

    async def _refuse_over_limits(
        self, s: AsyncSession, client_key: str | None, *, now: datetime, counting_new: bool
    ) -> None:
        """``counting_new``: the new booking is already flushed in ``s`` and counted; else one more is
        asked for. Held first: its message tells the client what to do (cancel one)."""
        if client_key is None:
            return
        extra = 0 if counting_new else 1
        mine = Booking.client_key == client_key
        if self.limits.held:
            held_ends = (
                await s.scalars(
                    select(Booking.slot_end)
                    .where(mine, Booking.status == "active", Booking.slot_end > now)
                    .order_by(Booking.slot_end)
                )
            ).all()
            if len(held_ends) + extra > self.limits.held:
                log.info("booking: %s holds %d upcoming bookings: refused", client_key, len(held_ends))
                first_end = as_utc(held_ends[0]) if held_ends else now
                raise BookingLimitError(
                    f"you already hold {self.limits.held} upcoming consultations, the most one person may "
                    "hold at a time; cancel one, or book again once one has taken place",
                    limit="held",
                    maximum=self.limits.held,
                    retry_after=_seconds(first_end - now),
                )
        if self.limits.per_day:
            made = (
                await s.scalars(
                    select(Booking.created_at)
                    .where(mine, Booking.rescheduled_from.is_(None), Booking.created_at > now - _DAY)
                    .order_by(Booking.created_at)
                )
            ).all()
            if len(made) + extra > self.limits.per_day:
                log.info("booking: %s made %d bookings in 24 hours: refused", client_key, len(made))
                wait = _seconds(as_utc(made[0]) + _DAY - now) if made else 1
                raise BookingLimitError(
                    f"{self.limits.per_day} bookings were already made from here in the last 24 hours, the "
                    f"most allowed; you can book again in about {max(1, round(wait / 3600))} hour(s)",
                    limit="per_day",
                    maximum=self.limits.per_day,
                    retry_after=wait,
                )

    async def _refuse_overlap(self, s: AsyncSession, row: Booking) -> None:
        """Slots start on the grid, so the unique index is the guarantee; this catches the one case it
        cannot: an active booking made under an earlier slot length that overlaps a new grid slot."""
        clash = await s.scalar(
            select(Booking.id).where(
                Booking.coach_id == row.coach_id,
                Booking.status == "active",
                Booking.id != row.id,
                Booking.slot_start < row.slot_end,
                Booking.slot_end > row.slot_start,
            )
        )
        if clash is not None:
            raise SlotTakenError(
                "that time overlaps another booking; pick one of the free slots",
                next_free=await self._next_free_json(as_utc(row.slot_start)),
            )

    async def _after_integrity_error(
        self, exc: IntegrityError, key: str | None, digest: str, start: datetime
    ) -> BookingView:
        """The insert lost a race. With an idempotency key, the winner may be our own earlier attempt
        (a double click, a redelivery): then it is the answer. Otherwise the slot is taken."""
        if key is not None:
            replay = await self._replay(key, digest)
            if replay is not None:
                return replay
        log.info("booking: slot %s taken (%s)", start.isoformat(), type(exc.orig).__name__)
        raise SlotTakenError(
            "that slot was just booked by someone else; pick one of the free slots",
            next_free=await self._next_free_json(start),
        ) from None

    async def _replay(self, key: str, digest: str) -> BookingView | None:
        async with self.db.session() as s:
            row = await s.scalar(select(Booking).where(Booking.idempotency_key == key))
        if row is None:
            return None
        if row.request_hash != digest:
            raise IdempotencyKeyReusedError(
                "this Idempotency-Key was already used for a different request; use a new key"
            )
        return BookingView.of(row)

    async def get(self, booking_id: str) -> BookingView:
        async with self.db.session() as s:
            row = await s.get(Booking, booking_id)
        if row is None or row.coach_id != self.coach_id:
            raise BookingNotFoundError(f"booking {booking_id} does not exist")
        return BookingView.of(row)

    async def current(self, booking_id: str) -> BookingView:
        """The booking, or where its reschedule chain ended up (the active one, or the last)."""
        view = await self.get(booking_id)
        if view.status != "rescheduled":
            return view
        chain = await self.list_bookings(origin_ids=[view.origin_id], upcoming_only=False)
        return next((b for b in chain if b.status == "active"), chain[-1] if chain else view)

    async def list_bookings(
        self,
        *,
        user_id: str | None = None,
        conversation_id: str | None = None,
        origin_ids: Sequence[str] = (),
        upcoming_only: bool = True,
        past_only: bool = False,
        active_only: bool = False,
        everyone: bool = False,
    ) -> list[BookingView]:
        """Bookings of a user, a conversation or token holders (any of them), oldest slot first;
        ``everyone`` for the admin view."""
        who = []
        if user_id is not None:
            who.append(Booking.user_id == user_id)
        if conversation_id is not None:
            who.append(Booking.conversation_id == conversation_id)
        if origin_ids:
            who.append(Booking.origin_id.in_(list(origin_ids)))
        if not who and not everyone:
            return []
        q = select(Booking).where(Booking.coach_id == self.coach_id)
        if who:
            q = q.where(or_(*who))
        if upcoming_only:
            q = q.where(Booking.slot_end > self.now())
        if past_only:
            q = q.where(Booking.slot_end <= self.now())
        if active_only:
            q = q.where(Booking.status == "active")
        async with self.db.session() as s:
            rows = (await s.scalars(q.order_by(Booking.slot_start, Booking.created_at))).all()
        return [BookingView.of(r) for r in rows]

    async def cancel(self, booking_id: str) -> BookingView:
        """Cancel an active booking; cancelling a cancelled one again returns it unchanged."""
        view = await self.get(booking_id)
        if view.status == "active" and view.slot_start <= self.now():
            raise InvalidBookingError("this consultation has already started; it cannot be cancelled")
        now = self.now()
        async with self.db.session() as s, s.begin():
            result = await s.execute(
                update(Booking)
                .where(Booking.id == booking_id, Booking.status == "active")
                .values(status="cancelled", updated_at=now)
            )
            changed = _rowcount(result) == 1
        if not changed:
            view = await self.get(booking_id)
            if view.status == "cancelled":
                return view
            raise await self._not_active(view)
        log.info("booking %s: cancelled", booking_id)
        return await self.get(booking_id)

    async def reschedule(
        self, booking_id: str, *, slot_start: datetime, idempotency_key: str | None = None
    ) -> BookResult:
        """Move an active booking: the old row becomes ``rescheduled``, a new active row takes the new
        slot, in one transaction. If the new slot is taken, nothing changes."""
        old = await self.get(booking_id)
        start = _slot_start_utc(slot_start, self.now())
        digest = _request_hash("reschedule", self.coach_id, start, booking_id)
        if idempotency_key is not None:
            replay = await self._replay(idempotency_key, digest)
            if replay is not None:
                return BookResult(replay, created=False)
        if old.status != "active":
            raise await self._not_active(old)
        if old.slot_start <= self.now():
            raise InvalidBookingError("this consultation has already started; it cannot be moved")
        if start == old.slot_start:
            raise InvalidBookingError("the booking is already at that time")
        slot = await self._bookable(start)
        now = self.now()
        new = Booking(
            id=new_id(),
            coach_id=self.coach_id,
            slot_start=slot.start,
            slot_end=slot.end,
            user_id=old.user_id,
            conversation_id=old.conversation_id,
            name=old.name,
            contact=old.contact.value,
            contact_kind=old.contact.kind,
            status="active",
            channel=old.channel,
            idempotency_key=idempotency_key,
            request_hash=digest if idempotency_key is not None else None,
            origin_id=old.origin_id,
            rescheduled_from=old.id,
            client_key=old.client_key,
            topic=old.topic,
            created_at=now,
            updated_at=now,
        )
        try:
            async with self.db.session() as s, s.begin():
                # the old row first: a concurrent move or cancel of the same booking waits here, then
                # finds it no longer active
                result = await s.execute(
                    update(Booking)
                    .where(Booking.id == old.id, Booking.status == "active")
                    .values(status="rescheduled", updated_at=now)
                )
                if _rowcount(result) == 0:
                    raise _Stale
                s.add(new)
                await s.flush()
                await self._refuse_overlap(s, new)
        except _Stale:
            raise await self._not_active(await self.get(old.id)) from None
        except IntegrityError as exc:
            return BookResult(await self._after_integrity_error(exc, idempotency_key, digest, start), False)
        log.info("booking %s: moved to %s as %s", old.id, slot.start.isoformat(), new.id)
        return BookResult(BookingView.of(new), created=True)

    async def _not_active(self, view: BookingView) -> BookingNotActiveError:
        moved_to = None
        if view.status == "rescheduled":
            async with self.db.session() as s:
                moved_to = await s.scalar(select(Booking.id).where(Booking.rescheduled_from == view.id))
        what = "was moved to another time" if view.status == "rescheduled" else f"is {view.status}"
        hint = f" (now booking {moved_to})" if moved_to else ""
        return BookingNotActiveError(f"booking {view.id} {what}{hint}", status=view.status, moved_to=moved_to)

    # --- tokens and calendar ----------------------------------------------------------------------

    def token_for(self, view: BookingView) -> str:
        """A bearer token for anonymous callers, naming the booking's reschedule chain. Derived (HMAC),
        not stored: an idempotent replay returns the same token the first response carried."""
        return f"{view.origin_id}.{self._mac(view.origin_id)}"

    def origin_of(self, token: str) -> str | None:
        origin, _, mac = token.strip().partition(".")
        if not origin or not mac or len(origin) > 32:
            return None
        return origin if hmac.compare_digest(mac, self._mac(origin)) else None

    def _mac(self, origin: str) -> str:
        digest = hmac.new(self._token_key, origin.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest[:24]).decode().rstrip("=")

    async def calendar(self, view: BookingView, *, url: str | None = None) -> bytes:
        av = await self.availability()
        return ics.render(await self._event(view, av, url=url))

    async def day_calendar(self, day: date, *, url: str | None = None) -> bytes:
        """The active bookings of one local day as one VCALENDAR (the coach's day in a calendar app);
        BookingNotFoundError when there are none, since a calendar must hold an event."""
        today = local_today(await self.availability(), self.now())
        if abs((day - today).days) > MAX_START_OFFSET_DAYS:
            raise InvalidBookingError(
                f"the day must be within {MAX_START_OFFSET_DAYS} days of today ({today})"
            )
        views = await self.day_bookings(day)
        if not views:
            raise BookingNotFoundError(f"there are no active bookings on {day.isoformat()}")
        av = await self.availability()
        events = [await self._event(v, av, url=url) for v in views]
        return ics.render_calendar(events, prodid="-//CareerWise//Coach day//ZH-TW")

    async def day_bookings(self, day: date) -> list[BookingView]:
        """Active bookings whose slot starts on ``day`` in the coach's time zone, in time order."""
        av = await self.availability()
        lo = local_instant(day, 0, av.tz)
        hi = local_instant(day + timedelta(days=1), 0, av.tz)
        async with self.db.session() as s:
            rows = (
                await s.scalars(
                    select(Booking)
                    .where(
                        Booking.coach_id == self.coach_id,
                        Booking.status == "active",
                        Booking.slot_start >= lo,
                        Booking.slot_start < hi,
                    )
                    .order_by(Booking.slot_start)
                )
            ).all()
        return [BookingView.of(r) for r in rows]

    async def _event(self, view: BookingView, av: Availability, *, url: str | None) -> ics.CalendarEvent:
        async with self.db.session() as s:
            sequence = await s.scalar(
                select(func.count())
                .select_from(Booking)
                .where(Booking.origin_id == view.origin_id, Booking.created_at < view.created_at)
            )
        label = slot_label(view.slot_start, view.slot_end, av.tz, zh=True)
        topic = f"\n主題 Topic: {view.topic}" if view.topic else ""
        return ics.CalendarEvent(
            uid=f"{view.origin_id}@careerwise",
            start=view.slot_start,
            end=view.slot_end,
            stamp=view.updated_at,
            summary="職涯諮詢 with Summer (CareerWise)",
            description=(
                f"{label}\n預約人 Name: {view.name}\n聯絡方式 Contact: {view.contact.display()}\n"
                f"預約編號 Booking: {view.id}{topic}"
            ),
            url=url,
            sequence=int(sequence or 0),
            cancelled=view.status == "cancelled",
        )


class _Stale(Exception):
    """The row changed between the read and the write (raised and caught inside reschedule)."""


def _seconds(span: timedelta) -> int:
    return max(1, math.ceil(span.total_seconds()))


def _request_hash(*parts: object) -> str:
    def plain(p: object) -> object:
        if isinstance(p, datetime):
            return p.isoformat()
        if isinstance(p, Contact):
            return [p.kind, p.value]
        return p

    return hashlib.sha256(json.dumps([plain(p) for p in parts], ensure_ascii=False).encode()).hexdigest()


def token_key(secret: str) -> bytes:
    """The booking-token key, derived from the session secret (one secret to configure, two uses)."""
    return hmac.new(secret.encode(), b"careerwise booking tokens v1", hashlib.sha256).digest()


def _slot_start_utc(slot_start: datetime, now: datetime) -> datetime:
    """``slot_start`` in UTC (naive means UTC). A time more than :data:`MAX_START_OFFSET_DAYS` from now
    is no slot, and one near the ends of the calendar would overflow the conversion: refused (400)."""
    aware = slot_start if slot_start.tzinfo is not None else slot_start.replace(tzinfo=UTC)
    if abs(aware - now) > timedelta(days=MAX_START_OFFSET_DAYS):
        raise InvalidBookingError(f"slot_start must be within {MAX_START_OFFSET_DAYS} days of now")
    return as_utc(aware)
