"""Pieces every admin route shares: the router factory (admin only), date ranges, percentiles."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated

from fastapi import APIRouter, Depends, Query

from careerwise.api.auth import get_admin_user
from careerwise.errors import UserInputError

MAX_RANGE_DAYS = 366
DEFAULT_RANGE_DAYS = 30


def admin_router(tag: str) -> APIRouter:
    """Every route under ``/api/admin`` needs an administrator: 401 anonymous, 403 for other users."""
    return APIRouter(prefix="/api/admin", tags=[tag], dependencies=[Depends(get_admin_user)])


@dataclass(frozen=True)
class DateRange:
    """Whole UTC days, both ends included. Bounds are half-open datetimes: ``start <= t < end``."""

    first: date
    last: date

    @property
    def start(self) -> datetime:
        return datetime.combine(self.first, time.min, tzinfo=UTC)

    @property
    def end(self) -> datetime:
        return datetime.combine(self.last + timedelta(days=1), time.min, tzinfo=UTC)

    def days(self) -> list[date]:
        return [self.first + timedelta(days=n) for n in range((self.last - self.first).days + 1)]


def date_range(
    date_from: Annotated[date | None, Query(description="First UTC day (YYYY-MM-DD), included.")] = None,
    date_to: Annotated[date | None, Query(description="Last UTC day (YYYY-MM-DD), included.")] = None,
) -> DateRange:
    """The range a request asks for; without ``date_from``, the ``DEFAULT_RANGE_DAYS`` days up to
    ``date_to`` (never before the first representable day). Every parameter of a dependency is a query
    parameter a caller can send: a fixed choice is a constant, not a keyword with a default."""
    today = datetime.now(UTC).date()
    last = date_to or today
    first = date_from or last - timedelta(days=min(DEFAULT_RANGE_DAYS - 1, (last - date.min).days))
    if first > last:
        raise UserInputError(f"date_from ({first}) is after date_to ({last})")
    if last >= date.max:  # the range ends at the start of the next day, which must exist
        raise UserInputError(f"date_to must be before {date.max}")
    if (last - first).days + 1 > MAX_RANGE_DAYS:
        raise UserInputError(f"a date range may cover at most {MAX_RANGE_DAYS} days")
    return DateRange(first, last)


DateRangeDep = Annotated[DateRange, Depends(date_range)]


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100) with linear interpolation between closest ranks (the method of
    numpy's default and of ``statistics.quantiles(method="inclusive")``); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    value = ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)
    return round(value, 2)


def percentiles(values: Sequence[float]) -> dict[str, float | None]:
    return {"p50": percentile(values, 50), "p90": percentile(values, 90), "p99": percentile(values, 99)}
