"""The booking service: free slots, book / cancel / reschedule / list, tokens, calendars; the
availability it reads (weekly hours, default hours, exceptions) is :mod:`careerwise.booking._availability`,
the calendar files :mod:`careerwise.booking._calendars`.

Every rule that protects a booking is enforced in one transaction with the database as the judge:
the partial unique index ``uq_bookings_active_slot`` refuses a second active booking of a slot, and
the unique ``idempotency_key`` makes a retried request find the booking the first one made. Code
checks before the write are for clear messages, never for correctness.

The per-client limits (:mod:`careerwise.booking.limits`) are counted in the same transaction as the
insert, the new row included, so concurrent requests from one client cannot pass them together. What
callers get back is a detached :class:`~careerwise.booking.views.BookingView`; anonymous callers prove
a booking is theirs with a token (:mod:`careerwise.booking.tokens`).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from careerwise.booking._availability import (
    MAX_START_OFFSET_DAYS,
    AvailabilityMixin,
    _midnight,
    _rowcount,
)
from careerwise.booking._calendars import CalendarMixin
from careerwise.booking.contact import Contact, parse_contact, parse_name
from careerwise.booking.errors import (
    BookingNotActiveError,
    BookingNotFoundError,
    IdempotencyKeyReusedError,
    InvalidBookingError,
    SlotTakenError,
    SlotUnavailableError,
)
from careerwise.booking.hours import Weekly
from careerwise.booking.limits import BookingLimits, lock_client, refuse_over_limits
from careerwise.booking.slots import (
    DEFAULT_COACH,
    Availability,
    Slot,
    find_slot,
    free_slots,
    local_today,
)
from careerwise.booking.timefmt import slot_label
from careerwise.booking.tokens import BookingTokens
from careerwise.booking.views import BookingView, BookResult
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


class BookingService(CalendarMixin, AvailabilityMixin):
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
        self._tokens = BookingTokens(token_key)
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
        busy = await self._busy(
            s, _midnight(start_day - timedelta(days=1)), _midnight(start_day + timedelta(days=days + 1))
        )
        slots = free_slots(av, now=self.now(), start_day=start_day, days=days, busy=busy)
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
                await lock_client(s, self.limits, client_key, postgresql=self.db.is_postgresql)
                s.add(row)
                await s.flush()
                await self._refuse_overlap(s, row)
                await refuse_over_limits(s, self.limits, client_key, now=now, counting_new=True)
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
            await refuse_over_limits(s, self.limits, client_key, now=self.now(), counting_new=False)

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

    # --- tokens ------------------------------------------------------------------------------

    def token_for(self, view: BookingView) -> str:
        """A bearer token for anonymous callers, naming the booking's reschedule chain."""
        return self._tokens.token_for(view.origin_id)

    def origin_of(self, token: str) -> str | None:
        return self._tokens.origin_of(token)


class _Stale(Exception):
    """The row changed between the read and the write (raised and caught inside reschedule)."""


def _request_hash(*parts: object) -> str:
    def plain(p: object) -> object:
        if isinstance(p, datetime):
            return p.isoformat()
        if isinstance(p, Contact):
            return [p.kind, p.value]
        return p

    return hashlib.sha256(json.dumps([plain(p) for p in parts], ensure_ascii=False).encode()).hexdigest()


def _slot_start_utc(slot_start: datetime, now: datetime) -> datetime:
    """``slot_start`` in UTC (naive means UTC). A time more than :data:`MAX_START_OFFSET_DAYS` from now
    is no slot, and one near the ends of the calendar would overflow the conversion: refused (400)."""
    aware = slot_start if slot_start.tzinfo is not None else slot_start.replace(tzinfo=UTC)
    if abs(aware - now) > timedelta(days=MAX_START_OFFSET_DAYS):
        raise InvalidBookingError(f"slot_start must be within {MAX_START_OFFSET_DAYS} days of now")
    return as_utc(aware)
