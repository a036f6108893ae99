"""Consultation booking over HTTP: free slots, book / list / reschedule / cancel, the .ics file, the
admin's availability, and the page at ``/bookings``. Reference: docs/bookings.md.

Who may see or change a booking: the logged-in user who made it, an admin, or whoever holds the
booking token returned when it was made (anonymous callers: ``X-Booking-Token`` header or ``?token=``).
Anyone else gets 404, as if it did not exist. The administrator's routes (hours, every booking, a
day's calendar) are in ``admin_bookings.py``.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.responses import FileResponse, JSONResponse
from pydantic import BaseModel, Field, StringConstraints

from careerwise.api._strict import REQUEST_MODEL, JsonAwareDatetime
from careerwise.api.auth import OptionalUser, client_ip
from careerwise.api.deps import BookingsDep
from careerwise.api.error_models import errors
from careerwise.booking import Availability, BookingService, BookingView, Opening, slot_label
from careerwise.booking.errors import BookingNotFoundError, InvalidBookingError
from careerwise.booking.slots import local_today
from careerwise.booking.timefmt import day_label
from careerwise.errors import AuthenticationError
from careerwise.store import User

router = APIRouter(tags=["bookings"])
STATIC = Path(__file__).resolve().parent.parent / "web" / "static"
TOKEN_HEADER = "X-Booking-Token"
MAX_TOKENS = 20
Key = Annotated[str, StringConstraints(min_length=1, max_length=150, pattern=r"^[\x21-\x7e]+$")]


class SlotOut(BaseModel):
    start: str = Field(description="UTC, ISO 8601 with Z.")
    end: str
    start_local: str = Field(description="The same instant in the coach's time zone (+08:00).")
    label: str = Field(description="e.g. 2026-12-02 (三) 14:00–14:30 台北時間")
    label_en: str


class OpeningOut(BaseModel):
    day: date = Field(description="The first day (coach's zone) beyond the booking horizon with a free slot.")
    opens_on: date = Field(description="The day `day` opens for booking: horizon_days before it.")
    label: str = Field(description="`day` as the slot labels write it, e.g. 2026-12-10 (四)")
    label_en: str = Field(description="e.g. Thu 2026-12-10")
    opens_label: str = Field(description="`opens_on`, e.g. 2026-12-08 (二)")
    opens_label_en: str = Field(description="e.g. Tue 2026-12-08")


class SlotsOut(BaseModel):
    """Free slots in the range; when there are none, what to do next (never a dead end)."""

    timezone: str
    slot_minutes: int
    start_day: date
    days: int
    slots: list[SlotOut]
    has_hours: bool = Field(
        description="Whether the coach has any consultation hours (weekly, or extra hours ahead). False: "
        "nothing can be booked until the coach opens hours."
    )
    next_free_slot: SlotOut | None = Field(
        default=None,
        description="When `slots` is empty: the first free slot on a later day within the booking horizon "
        "(its week can be shown next). Null otherwise, or when there is none.",
    )
    next_opening: OpeningOut | None = Field(
        default=None,
        description="When `slots` is empty and no later day within the booking horizon has a free slot: the "
        "first day beyond the horizon with one (looked for up to a year ahead) and the day it opens for "
        "booking. Null otherwise, or when no such day exists.",
    )
    contact_line: str | None = Field(
        default=None,
        description="When `slots` is empty: how to reach the coach directly (CAREERWISE_BOOKING_CONTACT). "
        "Null otherwise, or when none is configured.",
    )


class BookIn(BaseModel):
    model_config = REQUEST_MODEL
    slot_start: JsonAwareDatetime = Field(description="A free slot's start, with its offset (Z or +08:00).")
    name: Annotated[str, StringConstraints(min_length=1, max_length=80)]
    contact: Annotated[str, StringConstraints(min_length=1, max_length=254)] = Field(
        description="An email address or a LINE ID (e.g. 'LINE: summer.coach')."
    )
    idempotency_key: Key | None = Field(default=None, description="Or the Idempotency-Key header.")
    topic: Annotated[str, StringConstraints(max_length=200)] | None = Field(
        default=None, description="What the consultation is about (optional)."
    )


class RescheduleIn(BaseModel):
    model_config = REQUEST_MODEL
    slot_start: JsonAwareDatetime
    idempotency_key: Key | None = None


class BookingOut(BaseModel):
    id: str
    status: str
    slot_start: datetime
    slot_end: datetime
    label: str
    label_en: str
    timezone: str
    name: str
    contact: str
    contact_kind: str
    channel: str
    rescheduled_from: str | None
    topic: str | None = Field(description="What the consultation is about, when given.")
    created_at: datetime
    updated_at: datetime
    token: str = Field(description="Lets an anonymous caller list, move and cancel this booking.")
    ics_url: str


class BookingsOut(BaseModel):
    bookings: list[BookingOut]


def _opening_out(opening: Opening) -> OpeningOut:
    return OpeningOut(
        day=opening.day,
        opens_on=opening.opens_on,
        label=day_label(opening.day, zh=True),
        label_en=day_label(opening.day, zh=False),
        opens_label=day_label(opening.opens_on, zh=True),
        opens_label_en=day_label(opening.opens_on, zh=False),
    )


def booking_out(service: BookingService, view: BookingView, av: Availability, request: Request) -> BookingOut:
    """The booking as the API shows it (the caller may see it: the token is included)."""
    token = service.token_for(view)
    return BookingOut(
        id=view.id,
        status=view.status,
        slot_start=view.slot_start,
        slot_end=view.slot_end,
        label=slot_label(view.slot_start, view.slot_end, av.tz, zh=True),
        label_en=slot_label(view.slot_start, view.slot_end, av.tz, zh=False),
        timezone=av.timezone,
        name=view.name,
        contact=view.contact.value,
        contact_kind=view.contact.kind,
        channel=view.channel,
        rescheduled_from=view.rescheduled_from,
        topic=view.topic,
        created_at=view.created_at,
        updated_at=view.updated_at,
        token=token,
        ics_url=str(request.url_for("booking_ics", booking_id=view.id).include_query_params(token=token)),
    )


def _origins(service: BookingService, header: str | None, query: str | None) -> set[str]:
    raw = [t for t in [*(header or "").split(","), query or ""] if t.strip()]
    if len(raw) > MAX_TOKENS:
        raise InvalidBookingError(f"send at most {MAX_TOKENS} booking tokens")
    return {o for o in (service.origin_of(t) for t in raw) if o is not None}


async def _authorized(
    service: BookingService, booking_id: str, user: User | None, origins: set[str]
) -> BookingView:
    view = await service.get(booking_id)
    if user is not None and (user.is_admin or view.user_id == user.id):
        return view
    if view.origin_id in origins:
        return view
    raise BookingNotFoundError(f"booking {booking_id} does not exist")


def _key(header: str | None, body: str | None) -> str | None:
    if header is not None and body is not None and header != body:
        raise InvalidBookingError("the Idempotency-Key header and the body's idempotency_key differ")
    key = header if header is not None else body
    if key is not None and not (0 < len(key) <= 150 and key.isascii() and key.isprintable()):
        raise InvalidBookingError("Idempotency-Key must be 1 to 150 printable ASCII characters")
    return f"api:{key}" if key is not None else None


TokenHeader = Annotated[str | None, Header(alias=TOKEN_HEADER)]
TokenQuery = Annotated[str | None, Query(alias="token", max_length=200)]
IdempotencyHeader = Annotated[str | None, Header(alias="Idempotency-Key")]


async def _authorized_booking(
    booking_id: str,
    service: BookingsDep,
    user: OptionalUser,
    token_header: TokenHeader = None,
    token: TokenQuery = None,
) -> BookingView:
    """The booking named in the path, if the caller may see it: its user, an admin, or a holder of its
    booking token (header or ``?token=``); anybody else gets 404, as for a booking that does not exist."""
    return await _authorized(service, booking_id, user, _origins(service, token_header, token))


AuthorizedBooking = Annotated[BookingView, Depends(_authorized_booking)]


@router.get("/api/slots", summary="Free consultation slots", responses=errors(400))
async def slots(
    service: BookingsDep,
    start_day: Annotated[
        date | None, Query(alias="from", description="First day (Taipei); default today.")
    ] = None,
    days: Annotated[int, Query(ge=1, le=90)] = 7,
) -> SlotsOut:
    """Free slots from ``from`` for ``days`` days. With none, the response says what to do next: a later
    free slot within the booking horizon, else when the next slots open, and how to reach the coach."""
    av = await service.availability()
    found = await service.free_slots(start_day=start_day, days=days)
    first = start_day or local_today(av, service.now())
    out = SlotsOut(
        timezone=av.timezone,
        slot_minutes=av.slot_minutes,
        start_day=first,
        days=days,
        slots=[SlotOut(**service.slot_json(s, av)) for s in found],
        has_hours=True,  # a free slot means there are hours
    )
    if found:
        return out
    ahead = await service.outlook(after=first + timedelta(days=days - 1))
    return out.model_copy(
        update={
            "has_hours": ahead.has_hours,
            "next_free_slot": SlotOut(**service.slot_json(ahead.next_free, av)) if ahead.next_free else None,
            "next_opening": _opening_out(ahead.opening) if ahead.opening else None,
            "contact_line": ahead.contact_line or None,
        }
    )


@router.post(
    "/api/bookings",
    status_code=201,
    summary="Book a slot",
    responses={
        200: {"description": "An idempotent replay: the booking the first request made."},
        409: {"description": "The slot is taken; details.next_free_slots lists others."},
        429: {
            "description": "This IP made or holds too many bookings (code booking_limit; details.limit "
            "is held or per_day), with Retry-After."
        },
    },
)
async def book(
    body: BookIn,
    request: Request,
    service: BookingsDep,
    user: OptionalUser,
    idempotency_key: IdempotencyHeader = None,
) -> JSONResponse:
    result = await service.book(
        slot_start=body.slot_start,
        name=body.name,
        contact=body.contact,
        user_id=user.id if user else None,
        channel="web",
        idempotency_key=_key(idempotency_key, body.idempotency_key),
        client_key=f"ip:{client_ip(request)}",
        topic=body.topic,
    )
    out = booking_out(service, result.booking, await service.availability(), request)
    headers = {"Location": f"/api/bookings/{out.id}"}
    if not result.created:
        headers["Idempotent-Replayed"] = "true"
    return JSONResponse(
        out.model_dump(mode="json"), status_code=201 if result.created else 200, headers=headers
    )


@router.get("/api/bookings", summary="The caller's bookings", responses=errors(400, 401))
async def my_bookings(
    request: Request,
    service: BookingsDep,
    user: OptionalUser,
    token_header: TokenHeader = None,
    token: TokenQuery = None,
    scope: Literal["upcoming", "all"] = "upcoming",
) -> BookingsOut:
    origins = _origins(service, token_header, token)
    if user is None and not origins:
        raise AuthenticationError(f"log in, or send the booking token(s) in the {TOKEN_HEADER} header")
    views = await service.list_bookings(
        user_id=user.id if user else None, origin_ids=sorted(origins), upcoming_only=scope == "upcoming"
    )
    av = await service.availability()
    return BookingsOut(bookings=[booking_out(service, v, av, request) for v in views])


@router.get("/api/bookings/{booking_id}", summary="One booking", responses=errors(400, 404))
async def get_booking(view: AuthorizedBooking, request: Request, service: BookingsDep) -> BookingOut:
    return booking_out(service, view, await service.availability(), request)


@router.post(
    "/api/bookings/{booking_id}/reschedule",
    summary="Move a booking to another free slot",
    responses={
        **errors(404),
        409: {"description": "The new slot is taken, or the booking is no longer active."},
    },
)
async def reschedule(
    view: AuthorizedBooking,
    body: RescheduleIn,
    request: Request,
    service: BookingsDep,
    idempotency_key: IdempotencyHeader = None,
) -> BookingOut:
    result = await service.reschedule(
        view.id, slot_start=body.slot_start, idempotency_key=_key(idempotency_key, body.idempotency_key)
    )
    return booking_out(service, result.booking, await service.availability(), request)


@router.post("/api/bookings/{booking_id}/cancel", summary="Cancel a booking", responses=errors(400, 404, 409))
async def cancel(view: AuthorizedBooking, request: Request, service: BookingsDep) -> BookingOut:
    cancelled = await service.cancel(view.id)
    return booking_out(service, cancelled, await service.availability(), request)


@router.get(
    "/api/bookings/{booking_id}/ics",
    name="booking_ics",
    summary="The booking as an iCalendar file",
    response_class=Response,
    responses={200: {"content": {"text/calendar": {}}}, **errors(400, 404)},
)
async def booking_ics(view: AuthorizedBooking, request: Request, service: BookingsDep) -> Response:
    body = await service.calendar(view, url=str(request.base_url).rstrip("/") + "/bookings")
    return Response(
        body,
        media_type="text/calendar; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="careerwise-{view.id[:8]}.ics"'},
    )


@router.get("/bookings", include_in_schema=False)
async def bookings_page() -> FileResponse:
    return FileResponse(STATIC / "bookings.html", headers={"Cache-Control": "no-cache"})
