"""Issue #26: the admin date range takes only ``date_from`` and ``date_to`` from the query. A fixed
default was a keyword parameter of the dependency, which FastAPI exposed as ``?default_days=`` (unbounded:
``100000000`` was a 500); and a range near the ends of the calendar overflowed into a 500."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi.testclient import TestClient

from careerwise.api.admin_common import DEFAULT_RANGE_DAYS, DateRangeDep
from careerwise.api.admin_stats import router as stats_router
from careerwise.api.admin_turns import TurnFilters
from careerwise.errors import UserInputError


def _app() -> FastAPI:
    app = FastAPI()

    @app.get("/range")
    def period(period: DateRangeDep) -> dict[str, Any]:
        return {
            "first": period.first.isoformat(),
            "last": period.last.isoformat(),
            "end": period.end.isoformat(),
        }

    async def refused(_request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=400)

    app.add_exception_handler(UserInputError, refused)
    return app


def test_the_stats_route_takes_no_default_days_parameter() -> None:
    app = FastAPI()
    app.include_router(stats_router)
    params = {p["name"] for p in app.openapi()["paths"]["/api/admin/stats"]["get"]["parameters"]}
    assert params == {"date_from", "date_to", "assistant_id"}


def test_default_days_in_the_query_is_ignored() -> None:
    with TestClient(_app()) as c:
        r = c.get("/range", params={"default_days": 100000000})
    assert r.status_code == 200
    body = r.json()
    today = datetime.now(UTC).date()
    assert body["last"] == today.isoformat()
    assert body["first"] == (today - timedelta(days=DEFAULT_RANGE_DAYS - 1)).isoformat()


def test_ranges_at_the_ends_of_the_calendar_are_answered_not_crashed() -> None:
    with TestClient(_app(), raise_server_exceptions=True) as c:
        early = c.get("/range", params={"date_to": "0001-01-05"})
        last = c.get("/range", params={"date_to": date.max.isoformat()})
        before_last = c.get("/range", params={"date_to": (date.max - timedelta(days=1)).isoformat()})
    assert early.status_code == 200 and early.json()["first"] == "0001-01-01"
    assert last.status_code == 400 and "date_to" in last.json()["detail"]
    assert before_last.status_code == 200


def test_the_turn_filters_take_the_calendars_last_day_without_overflowing() -> None:
    # /api/admin/turns?date_to=9999-12-31 was a 500: the day after the last one overflowed
    assert len(TurnFilters(date_from=date.min, date_to=date.max).conditions()) == 1
    assert len(TurnFilters(date_to=date(2026, 12, 1)).conditions()) == 1
