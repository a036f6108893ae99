"""The coach's side of booking, for administrators: weekly hours (shipped defaults until confirmed),
dated exceptions, slot settings, every booking, and one day's bookings as an .ics calendar. The
dashboard's Bookings view and ``careerwise slots`` use these; moving and cancelling a booking go
through the booking routes themselves (``/api/bookings/{id}/reschedule`` and ``/cancel``), which
admit an administrator. Reference: docs/bookings.md.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request, Response
from fastapi import Path as PathParam
from pydantic import BaseModel, Field, StringConstraints

from careerwise.api._strict import REQUEST_MODEL, JsonDate
from careerwise.api.auth import AdminUser
from careerwise.api.bookings import BookingsOut, booking_out
from careerwise.api.deps import BookingsDep
from careerwise.api.error_models import errors
from careerwise.booking import Availability, BookingService
from careerwise.booking.hours import describe
from careerwise.booking.slots import has_hours, local_today
from careerwise.booking.timefmt import hhmm

router = APIRouter(tags=["bookings"])
HHMM = Annotated[str, StringConstraints(pattern=r"^([01]\d|2[0-3]):[0-5]\d$|^24:00$")]
Weekday = Literal["0", "1", "2", "3", "4", "5", "6"]


class RangeIn(BaseModel):
    model_config = REQUEST_MODEL
    start: HHMM
    end: HHMM


class WeeklyIn(BaseModel):
    model_config = REQUEST_MODEL
    ranges: Annotated[list[RangeIn], Field(max_length=12)]


class WeekIn(BaseModel):
    model_config = REQUEST_MODEL
    days: dict[Weekday, Annotated[list[RangeIn], Field(max_length=12)]] = Field(
        description='Every weekday\'s hours, "0" = Monday; a weekday left out or given [] is closed.'
    )


class ExceptionIn(BaseModel):
    model_config = REQUEST_MODEL
    day: JsonDate
    kind: Literal["closed", "extra"]
    start: HHMM | None = None
    end: HHMM | None = None
    note: Annotated[str, StringConstraints(max_length=200)] = ""


class AvailabilitySettingsIn(BaseModel):
    model_config = REQUEST_MODEL
    slot_minutes: int | None = Field(default=None, ge=10, le=240)
    horizon_days: int | None = Field(default=None, ge=1, le=365)
    min_notice_minutes: int | None = Field(default=None, ge=0, le=10080)


def _minute(value: str) -> int:
    h, m = value.split(":")
    return int(h) * 60 + int(m)


def _availability_json(service: BookingService, av: Availability) -> dict[str, Any]:
    """``hours_source``: ``default`` while the shipped default hours apply (not yet confirmed by an
    administrator), else ``set``; ``has_hours``: false when nothing at all can be booked."""
    return {
        "coach_id": av.coach_id,
        "timezone": av.timezone,
        "slot_minutes": av.slot_minutes,
        "horizon_days": av.horizon_days,
        "min_notice_minutes": av.min_notice_minutes,
        "hours_source": "default" if av.hours_default else "set",
        "has_hours": has_hours(av, local_today(av, service.now())),
        "default_hours": describe(service.default_hours),
        "contact_line": service.contact_line,
        "weekly": {
            str(d): [{"start": hhmm(a), "end": hhmm(b)} for a, b in av.weekly.get(d, ())] for d in range(7)
        },
        "exceptions": [
            {
                "id": e.id,
                "day": e.day.isoformat(),
                "kind": e.kind,
                "start": hhmm(e.start_minute) if e.start_minute is not None else None,
                "end": hhmm(e.end_minute) if e.end_minute is not None else None,
                "note": e.note,
            }
            for e in av.exceptions
        ],
    }


@router.get("/api/admin/availability", summary="Weekly hours, exceptions and slot settings")
async def get_availability(service: BookingsDep, _admin: AdminUser) -> dict[str, Any]:
    return _availability_json(service, await service.availability())


@router.put(
    "/api/admin/availability/weekly",
    summary="Replace the whole week's hours (confirms them)",
    responses=errors(400),
)
async def put_week(body: WeekIn, service: BookingsDep, admin: AdminUser) -> dict[str, Any]:
    weekly = {
        int(d): tuple((_minute(r.start), _minute(r.end)) for r in ranges)
        for d, ranges in body.days.items()
        if ranges
    }
    return _availability_json(service, await service.set_week(weekly, by=admin.email))


@router.put(
    "/api/admin/availability/weekly/{weekday}", summary="Replace one weekday's hours", responses=errors(400)
)
async def put_weekly(
    weekday: Annotated[int, PathParam(ge=0, le=6, description="0 = Monday")],
    body: WeeklyIn,
    service: BookingsDep,
    admin: AdminUser,
) -> dict[str, Any]:
    ranges = [(_minute(r.start), _minute(r.end)) for r in body.ranges]
    return _availability_json(service, await service.set_weekly(weekday, ranges, by=admin.email))


@router.post(
    "/api/admin/availability/confirm",
    summary="Keep the hours shown (the shipped defaults) as the coach's own",
)
async def confirm_hours(service: BookingsDep, admin: AdminUser) -> dict[str, Any]:
    return _availability_json(service, await service.confirm_hours(by=admin.email))


@router.patch(
    "/api/admin/availability/settings", summary="Slot length, horizon, minimum notice", responses=errors(400)
)
async def patch_settings(
    body: AvailabilitySettingsIn, service: BookingsDep, admin: AdminUser
) -> dict[str, Any]:
    av = await service.update_settings(
        slot_minutes=body.slot_minutes,
        horizon_days=body.horizon_days,
        min_notice_minutes=body.min_notice_minutes,
        by=admin.email,
    )
    return _availability_json(service, av)


@router.post(
    "/api/admin/availability/exceptions",
    status_code=201,
    summary="Close a day or add hours",
    responses=errors(400),
)
async def add_exception(body: ExceptionIn, service: BookingsDep, admin: AdminUser) -> dict[str, Any]:
    e = await service.add_exception(
        day=body.day,
        kind=body.kind,
        start_minute=_minute(body.start) if body.start else None,
        end_minute=_minute(body.end) if body.end else None,
        note=body.note,
        by=admin.email,
    )
    return {"id": e.id, "day": e.day.isoformat(), "kind": e.kind, "start": body.start, "end": body.end}


@router.delete("/api/admin/availability/exceptions/{exception_id}", status_code=204, responses=errors(404))
async def delete_exception(
    exception_id: Annotated[int, PathParam(ge=1, le=2**63 - 1)], service: BookingsDep, admin: AdminUser
) -> Response:
    await service.remove_exception(exception_id, by=admin.email)
    return Response(status_code=204)


@router.get("/api/admin/bookings", summary="Every booking (admin)")
async def all_bookings(
    request: Request,
    service: BookingsDep,
    _admin: AdminUser,
    scope: Literal["upcoming", "past", "all"] = "upcoming",
) -> BookingsOut:
    """``upcoming``: not yet ended, soonest first; ``past``: ended, most recent first; ``all``: both,
    oldest first. Every status (active, cancelled, rescheduled) is included."""
    views = await service.list_bookings(
        everyone=True, upcoming_only=scope == "upcoming", past_only=scope == "past"
    )
    if scope == "past":
        views.reverse()
    av = await service.availability()
    return BookingsOut(bookings=[booking_out(service, v, av, request) for v in views])


@router.get(
    "/api/admin/bookings/ics",
    summary="One day's active bookings as an iCalendar file",
    response_class=Response,
    responses={200: {"content": {"text/calendar": {}}}, **errors(400, 404)},
)
async def day_ics(
    request: Request,
    service: BookingsDep,
    _admin: AdminUser,
    day: Annotated[date, Query(description="A day in the coach's time zone (YYYY-MM-DD).")],
) -> Response:
    body = await service.day_calendar(day, url=str(request.base_url).rstrip("/") + "/admin#bookings")
    return Response(
        body,
        media_type="text/calendar; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="careerwise-{day.isoformat()}.ics"'},
    )
