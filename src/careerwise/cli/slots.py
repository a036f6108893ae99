"""``careerwise slots``: consultation availability and bookings from the command line.

careerwise slots show [--days 7]              free slots (Taipei time) and the weekly hours
careerwise slots hours 2 14:00-17:00 19:00-21:00   Wednesday's hours (no ranges: closed)
careerwise slots confirm                      keep the shipped default hours as the coach's own
careerwise slots close 2026-12-25 [--from 14:00 --to 16:00] [--note 聖誕節]
careerwise slots open 2026-12-26 10:00-12:00  extra hours that day
careerwise slots remove-exception ID
careerwise slots length 45                    slot length in minutes
careerwise slots bookings [--all] [--json]
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import date
from typing import Annotated, TypeVar

import typer

from careerwise.booking import Availability, BookingService, BookingView, slot_label
from careerwise.booking import token_key as booking_token_key
from careerwise.booking.hours import parse_hours
from careerwise.booking.timefmt import hhmm
from careerwise.config import get_settings
from careerwise.errors import CareerWiseError
from careerwise.services import session_secret
from careerwise.store import Database

slots_app = typer.Typer(
    help="Consultation availability (weekly hours, exceptions, slot length) and bookings."
)
T = TypeVar("T")
WEEKDAYS = ("Mon 一", "Tue 二", "Wed 三", "Thu 四", "Fri 五", "Sat 六", "Sun 日")


def _run(work: Callable[[BookingService], Awaitable[T]]) -> T:
    async def main() -> T:
        settings = get_settings()
        db = Database(settings.resolved_database_url)
        await asyncio.to_thread(db.migrate)
        try:
            service = BookingService(
                db,
                token_key=booking_token_key(session_secret(settings)),
                default_hours=parse_hours(settings.default_hours),
                contact_line=settings.booking_contact,
            )
            return await work(service)
        finally:
            await db.dispose()

    try:
        return asyncio.run(main())
    except CareerWiseError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc


def _range(text: str) -> tuple[int, int]:
    try:
        a, b = text.split("-")
        (ah, am), (bh, bm) = (int(x) for x in a.split(":")), (int(x) for x in b.split(":"))
    except ValueError as exc:
        raise typer.BadParameter(f"{text!r}: write hours as HH:MM-HH:MM, e.g. 14:00-17:30") from exc
    return ah * 60 + am, bh * 60 + bm


def _minute(text: str) -> int:
    return _range(f"{text}-00:00")[0]


def _print_availability(av: Availability) -> None:
    typer.echo(
        f"time zone {av.timezone}; slots of {av.slot_minutes} min; bookable {av.horizon_days} days ahead, "
        f"{av.min_notice_minutes} min notice"
    )
    if av.hours_default:
        typer.echo(
            "weekly hours: the shipped defaults (CAREERWISE_DEFAULT_HOURS); `slots confirm` keeps them"
        )
    for d in range(7):
        ranges = ", ".join(f"{hhmm(a)}-{hhmm(b)}" for a, b in av.weekly.get(d, ())) or "closed 休息"
        typer.echo(f"  {d} {WEEKDAYS[d]}  {ranges}")
    for e in av.exceptions:
        span = (
            f" {hhmm(e.start_minute)}-{hhmm(e.end_minute)}"
            if e.start_minute is not None and e.end_minute is not None
            else " all day"
        )
        typer.echo(f"  exception #{e.id}: {e.day} {e.kind}{span} {e.note}".rstrip())


@slots_app.command("show")
def show(
    days: Annotated[int, typer.Option(min=1, max=90, help="How many days of free slots.")] = 7,
    start: Annotated[
        str | None, typer.Option("--from", help="First day, YYYY-MM-DD (default today).")
    ] = None,
) -> None:
    """The weekly hours, exceptions and the free slots (Taipei time)."""

    async def work(service: BookingService) -> tuple[Availability, list[str]]:
        av = await service.availability()
        first = date.fromisoformat(start) if start else None
        return av, [s.label(av.tz, zh=True) for s in await service.free_slots(start_day=first, days=days)]

    av, labels = _run(work)
    _print_availability(av)
    typer.echo(f"free slots ({len(labels)}):")
    for label in labels:
        typer.echo(f"  {label}")


@slots_app.command("hours")
def hours(
    weekday: Annotated[int, typer.Argument(min=0, max=6, help="0 = Monday ... 6 = Sunday.")],
    ranges: Annotated[
        list[str] | None, typer.Argument(help="HH:MM-HH:MM ...; none: closed that weekday.")
    ] = None,
) -> None:
    """Set one weekday's hours (replaces what was there)."""
    parsed = [_range(r) for r in ranges or []]
    _print_availability(_run(lambda s: s.set_weekly(weekday, parsed, by="cli")))


@slots_app.command("confirm")
def confirm() -> None:
    """Keep the weekly hours shown (the shipped defaults) as the coach's own."""
    _print_availability(_run(lambda s: s.confirm_hours(by="cli")))


@slots_app.command("close")
def close(
    day: Annotated[str, typer.Argument(help="YYYY-MM-DD")],
    start: Annotated[
        str | None, typer.Option("--from", help="HH:MM (with --to: close only that range)")
    ] = None,
    end: Annotated[str | None, typer.Option("--to", help="HH:MM")] = None,
    note: Annotated[str, typer.Option(help="Why, e.g. 國定假日.")] = "",
) -> None:
    """Close a date (all day, or --from/--to)."""
    e = _run(
        lambda s: s.add_exception(
            day=_day(day),
            kind="closed",
            start_minute=_minute(start) if start else None,
            end_minute=_minute(end) if end else None,
            note=note,
            by="cli",
        )
    )
    typer.echo(f"exception #{e.id}: {e.day} closed")


@slots_app.command("open")
def open_extra(
    day: Annotated[str, typer.Argument(help="YYYY-MM-DD")],
    span: Annotated[str, typer.Argument(help="HH:MM-HH:MM")],
    note: Annotated[str, typer.Option()] = "",
) -> None:
    """Add extra hours on a date."""
    a, b = _range(span)
    e = _run(
        lambda s: s.add_exception(
            day=_day(day), kind="extra", start_minute=a, end_minute=b, note=note, by="cli"
        )
    )
    typer.echo(f"exception #{e.id}: {e.day} extra {hhmm(a)}-{hhmm(b)}")


@slots_app.command("remove-exception")
def remove_exception(exception_id: Annotated[int, typer.Argument()]) -> None:
    """Remove a closed date or extra hours."""
    _run(lambda s: s.remove_exception(exception_id, by="cli"))
    typer.echo(f"removed exception #{exception_id}")


@slots_app.command("length")
def length(
    minutes: Annotated[int, typer.Argument(help="Slot length in minutes (10-240, divides a day).")],
) -> None:
    """Set the slot length."""
    _print_availability(_run(lambda s: s.update_settings(slot_minutes=minutes, by="cli")))


@slots_app.command("bookings")
def bookings(
    everything: Annotated[bool, typer.Option("--all", help="Past, cancelled and moved ones too.")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """List bookings (upcoming active ones by default)."""

    async def work(service: BookingService) -> tuple[Availability, list[BookingView]]:
        views = await service.list_bookings(
            everyone=True, upcoming_only=not everything, active_only=not everything
        )
        return await service.availability(), views

    av, views = _run(work)
    rows = [
        {
            "id": v.id,
            "status": v.status,
            "slot_start": v.slot_start.isoformat(),
            "label": slot_label(v.slot_start, v.slot_end, av.tz, zh=True),
            "name": v.name,
            "contact": v.contact.display(),
            "channel": v.channel,
        }
        for v in views
    ]
    if as_json:
        typer.echo(json.dumps(rows, ensure_ascii=False, indent=2))
        return
    if not rows:
        typer.echo("no bookings")
    for r in rows:
        typer.echo(
            f"{r['id']}  {r['status']:<11} {r['label']}  {r['name']}  {r['contact']}  ({r['channel']})"
        )


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError as exc:
        raise typer.BadParameter(f"{text!r} is not a date (YYYY-MM-DD)") from exc
