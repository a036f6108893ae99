"""The booking service on SQLite and PostgreSQL: the database refuses a second active booking of a
slot, idempotency keys, and a Hypothesis state machine (book, cancel, reschedule, concurrent bursts,
across users) that checks after every step that no active bookings overlap and no booking was lost."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass
from datetime import datetime

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from sqlalchemy import delete, select, text
from sqlalchemy.exc import IntegrityError

from careerwise.booking import (
    BookingNotActiveError,
    BookingService,
    IdempotencyKeyReusedError,
    InvalidBookingError,
    SlotTakenError,
    SlotUnavailableError,
)
from careerwise.store import Booking, BookingDialogue, Database
from tests.booking_helpers import TOKEN_KEY, open_hours, slots_ahead


@pytest.fixture
def booking_db_url(empty_db_url: str) -> str:
    """A migrated, empty database on each backend."""
    return empty_db_url


async def _service(url: str) -> tuple[Database, BookingService]:
    db = Database(url)
    service = BookingService(db, token_key=TOKEN_KEY)
    await open_hours(service)
    return db, service


async def test_the_database_itself_refuses_a_second_active_booking(booking_db_url: str) -> None:
    db, service = await _service(booking_db_url)
    try:
        [slot] = await slots_ahead(service, 1)
        first = await service.book(slot_start=slot.start, name="王小明", contact="a@b.com")
        # around the service: a raw insert of another active row for the same slot fails in the database
        with pytest.raises(IntegrityError):
            async with db.session() as s, s.begin():
                s.add(_row("x" * 32, slot.start, slot.end, "active"))
        # cancelled and rescheduled rows do not hold the slot
        async with db.session() as s, s.begin():
            s.add(_row("y" * 32, slot.start, slot.end, "cancelled"))
            s.add(_row("z" * 32, slot.start, slot.end, "rescheduled"))
        await service.cancel(first.booking.id)
        again = await service.book(slot_start=slot.start, name="陳小華", contact="LINE: hua.chen")
        assert again.created and again.booking.status == "active"
        async with db.session() as s:
            index = await s.scalar(
                text(
                    "SELECT sql FROM sqlite_master WHERE name = 'uq_bookings_active_slot'"
                    if not db.is_postgresql
                    else "SELECT indexdef FROM pg_indexes WHERE indexname = 'uq_bookings_active_slot'"
                )
            )
        assert index is not None and "UNIQUE" in index.upper() and "status" in index and "active" in index
    finally:
        await db.dispose()


def _row(booking_id: str, start: datetime, end: datetime, status: str) -> Booking:
    return Booking(
        id=booking_id,
        coach_id="summer",
        slot_start=start,
        slot_end=end,
        name="x",
        contact="x@y.com",
        contact_kind="email",
        status=status,
        origin_id=booking_id,
    )


async def test_idempotency_keys_and_clear_refusals(booking_db_url: str) -> None:
    db, service = await _service(booking_db_url)
    try:
        a, b = await slots_ahead(service, 2)
        first = await service.book(
            slot_start=a.start, name="Mei", contact="mei@example.com", idempotency_key="k1"
        )
        replay = await service.book(
            slot_start=a.start, name="Mei", contact="mei@example.com", idempotency_key="k1"
        )
        assert first.created and not replay.created and replay.booking.id == first.booking.id
        assert service.token_for(replay.booking) == service.token_for(first.booking)
        with pytest.raises(IdempotencyKeyReusedError):
            await service.book(
                slot_start=b.start, name="Mei", contact="mei@example.com", idempotency_key="k1"
            )
        with pytest.raises(SlotTakenError) as taken:
            await service.book(slot_start=a.start, name="Other", contact="other@example.com")
        nxt = taken.value.details["next_free_slots"]
        assert nxt and nxt[0]["start"] == b.start.isoformat().replace("+00:00", "Z")
        assert nxt[0]["label"].endswith("台北時間")
        with pytest.raises(SlotUnavailableError):
            await service.book(slot_start=a.start.replace(minute=10), name="Mei", contact="mei@example.com")
        with pytest.raises(InvalidBookingError):
            await service.book(slot_start=b.start, name="Mei", contact="not a contact")
        moved = await service.reschedule(first.booking.id, slot_start=b.start, idempotency_key="m1")
        again = await service.reschedule(first.booking.id, slot_start=b.start, idempotency_key="m1")
        assert moved.created and not again.created and again.booking.id == moved.booking.id
        assert (await service.get(first.booking.id)).status == "rescheduled"
        assert (await service.current(first.booking.id)).id == moved.booking.id
        with pytest.raises(BookingNotActiveError) as stale:
            await service.cancel(first.booking.id)
        assert stale.value.details["moved_to"] == moved.booking.id
        assert service.origin_of(service.token_for(moved.booking)) == first.booking.id
        assert service.origin_of(service.token_for(moved.booking) + "x") is None
    finally:
        await db.dispose()


USERS = ("u1", "u2", "u3", None)


@dataclass
class Expected:
    slot: int
    status: str
    user: str | None


def _machine(url: str) -> type[RuleBasedStateMachine]:
    class Bookings(RuleBasedStateMachine):
        """The model: every booking ever made with its expected status and slot."""

        def __init__(self) -> None:
            super().__init__()
            self.loop = asyncio.new_event_loop()
            self.db = Database(url)
            self.service = BookingService(self.db, token_key=TOKEN_KEY)
            self.run(self._reset())
            self.slots = [s.start for s in self.run(slots_ahead(self.service, 4))]
            # in creation order, never sorted: ids are random, and a draw must pick the same booking
            # when Hypothesis replays the same choices
            self.model: dict[str, Expected] = {}
            self.keys: dict[str, str] = {}  # idempotency key -> booking id
            self.sent: dict[str, tuple[int, str | None]] = {}

        def run(self, aw):  # type: ignore[no-untyped-def]
            return self.loop.run_until_complete(aw)

        async def _reset(self) -> None:
            async with self.db.session() as s, s.begin():
                await s.execute(delete(BookingDialogue))
                await s.execute(delete(Booking))
            await open_hours(self.service)

        def teardown(self) -> None:
            self.run(self.db.dispose())
            self.loop.close()

        def _active_at(self, slot: int) -> str | None:
            return next((i for i, e in self.model.items() if e.slot == slot and e.status == "active"), None)

        @rule(user=st.sampled_from(USERS), slot=st.integers(0, 3), keyed=st.booleans())
        def book(self, user: str | None, slot: int, keyed: bool) -> None:
            key = f"k{len(self.sent)}" if keyed else None
            holder = self._active_at(slot)
            try:
                result = self.run(
                    self.service.book(
                        slot_start=self.slots[slot],
                        name=f"user {user}",
                        contact=f"{user or 'anon'}@example.com",
                        user_id=user,
                        idempotency_key=key,
                    )
                )
            except SlotTakenError:
                assert holder is not None, "refused a free slot"
                return
            assert holder is None, f"booked slot {slot} twice"
            assert result.created
            self.model[result.booking.id] = Expected(slot, "active", user)
            if key is not None:
                self.keys[key] = result.booking.id
                self.sent[key] = (slot, user)

        @precondition(lambda self: bool(self.keys))
        @rule(data=st.data())
        def replay(self, data: st.DataObject) -> None:
            key = data.draw(st.sampled_from(list(self.keys)))
            slot, user = self.sent[key]
            result = self.run(
                self.service.book(
                    slot_start=self.slots[slot],
                    name=f"user {user}",
                    contact=f"{user or 'anon'}@example.com",
                    user_id=user,
                    idempotency_key=key,
                )
            )
            assert not result.created and result.booking.id == self.keys[key]

        @rule(slot=st.integers(0, 3), n=st.integers(2, 6))
        def burst(self, slot: int, n: int) -> None:
            """n users at once for one slot: at most one wins, and only if it was free."""
            holder = self._active_at(slot)

            async def attempt(i: int) -> str | None:
                try:
                    r = await self.service.book(
                        slot_start=self.slots[slot], name=f"burst {i}", contact=f"b{i}@example.com"
                    )
                except SlotTakenError:
                    return None
                return r.booking.id

            won = [x for x in self.run(_gather(*(attempt(i) for i in range(n)))) if x is not None]
            assert len(won) == (0 if holder is not None else 1), won
            for booking_id in won:
                self.model[booking_id] = Expected(slot, "active", None)

        @precondition(lambda self: bool(self.model))
        @rule(data=st.data())
        def cancel(self, data: st.DataObject) -> None:
            booking_id = data.draw(st.sampled_from(list(self.model)))
            expected = self.model[booking_id]
            try:
                view = self.run(self.service.cancel(booking_id))
            except BookingNotActiveError:
                assert expected.status == "rescheduled"
                return
            assert expected.status in ("active", "cancelled") and view.status == "cancelled"
            expected.status = "cancelled"

        @precondition(lambda self: bool(self.model))
        @rule(data=st.data(), slot=st.integers(0, 3))
        def reschedule(self, data: st.DataObject, slot: int) -> None:
            booking_id = data.draw(st.sampled_from(list(self.model)))
            expected = self.model[booking_id]
            holder = self._active_at(slot)
            try:
                result = self.run(self.service.reschedule(booking_id, slot_start=self.slots[slot]))
            except BookingNotActiveError:
                assert expected.status != "active"
                return
            except InvalidBookingError:
                assert expected.status == "active" and expected.slot == slot
                return
            except SlotTakenError:
                assert expected.status == "active" and holder is not None and holder != booking_id
                return
            assert expected.status == "active" and holder is None
            expected.status = "rescheduled"
            self.model[result.booking.id] = Expected(slot, "active", expected.user)

        @invariant()
        def no_overlap_and_nothing_lost(self) -> None:
            rows = self.run(self._rows())
            active = sorted((r.slot_start, r.slot_end) for r in rows if r.status == "active")
            for (_, end), (start, _) in itertools.pairwise(active):
                assert end <= start, "two active bookings overlap"
            stored = {r.id: r for r in rows}
            for booking_id, expected in self.model.items():
                row = stored.get(booking_id)
                assert row is not None, f"booking {booking_id} was lost"
                assert row.status == expected.status, (booking_id, row.status, expected)
                assert row.user_id == expected.user
            assert set(stored) == set(self.model), "a booking appeared that nobody made"
            for r in rows:
                if r.status == "rescheduled":  # a moved booking has exactly one successor
                    assert sum(1 for x in rows if x.rescheduled_from == r.id) == 1

        async def _rows(self) -> list[Booking]:
            async with self.db.session() as s:
                return list((await s.scalars(select(Booking))).all())

    return Bookings


async def _gather(*aws):  # type: ignore[no-untyped-def]
    return await asyncio.gather(*aws)


def test_state_machine_no_overlap_no_lost_booking(booking_db_url: str) -> None:
    run_state_machine_as_test(
        _machine(booking_db_url),
        settings=settings(
            max_examples=12,
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        ),
    )
