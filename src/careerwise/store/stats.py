"""The rows the dashboard's charts are computed from: the turns of a period, the events that say how
they were routed, what they searched for and how they degraded, and the feedback given in it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, text

from careerwise.store.db import Database
from careerwise.store.models import Trace, TraceEvent
from careerwise.store.models_observability import Feedback

__all__ = ["PeriodEvent", "PeriodRows", "StatsStore", "TurnFigures"]


@dataclass(frozen=True, slots=True)
class TurnFigures:
    id: str
    path: str | None
    status: str
    first_text_ms: float | None
    duration_ms: float | None


@dataclass(frozen=True, slots=True)
class PeriodEvent:
    """A ``route``, ``tool_call`` or ``degraded`` event of a turn in the period, as stored."""

    trace_id: str
    type: str
    payload: dict[str, Any]
    started_at: datetime  # the turn's


@dataclass(frozen=True)
class PeriodRows:
    turns: list[TurnFigures]
    events: list[PeriodEvent]
    ratings: dict[str, int]  # up / down -> how many


class StatsStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def period(self, *, start: datetime, end: datetime, assistant_id: str | None) -> PeriodRows:
        """The turns started in [start, end), their events and the feedback given in it; of one
        assistant when ``assistant_id`` is given."""
        in_range = [Trace.started_at >= start, Trace.started_at < end]
        fb_filter = [Feedback.created_at >= start, Feedback.created_at < end]
        if assistant_id is not None:
            in_range.append(Trace.assistant_id == assistant_id)
            fb_filter.append(Feedback.assistant_id == assistant_id)
        async with self.db.session() as s:
            turns = (
                await s.execute(
                    select(Trace.id, Trace.path, Trace.status, Trace.first_text_ms, Trace.duration_ms).where(
                        *in_range
                    )
                )
            ).all()
            events = (
                await s.execute(
                    select(TraceEvent.trace_id, TraceEvent.type, TraceEvent.payload, Trace.started_at)
                    .join(Trace, Trace.id == TraceEvent.trace_id)
                    .where(*in_range, TraceEvent.type.in_(("route", "tool_call", "degraded")))
                )
            ).all()
            feedback = (
                await s.execute(
                    select(Feedback.rating, func.count()).where(*fb_filter).group_by(Feedback.rating)
                )
            ).all()
        return PeriodRows(
            turns=[TurnFigures(*row) for row in turns],
            events=[PeriodEvent(*row) for row in events],
            ratings={rating: int(n) for rating, n in feedback},
        )

    async def since(self, since: datetime, *, degraded_reasons: Sequence[str]) -> tuple[int, int]:
        """The turns started since ``since`` and how many of them degraded for one of
        ``degraded_reasons``; the database is checked to answer first (its failure is raised)."""
        async with self.db.session() as s:
            await s.execute(text("SELECT 1"))
            turns = int(await s.scalar(select(func.count(Trace.id)).where(Trace.started_at >= since)) or 0)
            degraded = int(
                await s.scalar(
                    select(func.count(TraceEvent.id))
                    .join(Trace, Trace.id == TraceEvent.trace_id)
                    .where(
                        Trace.started_at >= since,
                        TraceEvent.type == "degraded",
                        TraceEvent.payload["reason"].as_string().in_(degraded_reasons),
                    )
                )
                or 0
            )
        return turns, degraded
