"""Admin: figures for the dashboard's charts over a date range, computed from the stored turns.

Every figure is read from the trace rows and the stored event payloads (what the user's stream carried);
the definitions match /metrics where both exist (a top_k override is a tool call whose effective top_k
differs from a top_k the model gave, as ``careerwise_tool_topk_overrides`` counts it).

Percentiles are computed here rather than in SQL so that SQLite and PostgreSQL give the same numbers
(linear interpolation, admin_common.percentile); the range is capped at a year of days.
"""

from __future__ import annotations

from collections import Counter
from datetime import date
from typing import Annotated, Any

from fastapi import Query

from careerwise.api.admin_common import DateRangeDep, admin_router, percentiles
from careerwise.api.deps import StatsDep
from careerwise.api.error_models import errors
from careerwise.store import as_utc

router = admin_router("admin: stats")


def _share(count: int, total: int) -> float:
    return round(count / total, 4) if total else 0.0


@router.get("/stats", responses=errors(400))
async def stats(
    stats_store: StatsDep,
    period: DateRangeDep,
    assistant_id: Annotated[str | None, Query(max_length=64)] = None,
) -> dict[str, Any]:
    rows = await stats_store.period(start=period.start, end=period.end, assistant_id=assistant_id)
    turns = rows.turns
    total = len(turns)
    layers: Counter[str] = Counter()
    turns_with_tools: set[str] = set()
    tool_calls = 0
    topk_calls = topk_overridden = topk_not_given = 0
    degraded_by_day: Counter[tuple[date, str]] = Counter()
    for event in rows.events:
        trace_id, kind, payload, started_at = event.trace_id, event.type, event.payload, event.started_at
        if kind == "route":
            layers[str(payload.get("layer"))] += 1
        elif kind == "tool_call":
            tool_calls += 1
            turns_with_tools.add(trace_id)
            effective = (payload.get("effective_arguments") or {}).get("top_k")
            requested = (payload.get("requested_arguments") or {}).get("top_k")
            if effective is not None:
                topk_calls += 1
                if requested is None:
                    topk_not_given += 1
                elif requested != effective:
                    topk_overridden += 1
        else:
            degraded_by_day[(as_utc(started_at).date(), str(payload.get("reason")))] += 1

    by_path: dict[str, tuple[list[float], list[float]]] = {}
    for turn in turns:
        path, status, first_text, duration = turn.path, turn.status, turn.first_text_ms, turn.duration_ms
        if status == "running":
            continue  # not finished: no total yet
        firsts, totals = by_path.setdefault(path or "none", ([], []))
        if first_text is not None:
            firsts.append(first_text)
        if duration is not None:
            totals.append(duration)

    reasons = sorted({reason for _day, reason in degraded_by_day})
    counts = rows.ratings
    up, down = int(counts.get("up", 0)), int(counts.get("down", 0))
    return {
        "range": {"date_from": period.first.isoformat(), "date_to": period.last.isoformat()},
        "assistant_id": assistant_id,
        "turns": total,
        "routing_layers": [
            {"layer": layer, "count": n, "share": _share(n, total)} for layer, n in layers.most_common()
        ],
        "latency": [
            {
                "path": path,
                "count": len(totals),
                "first_text_ms": percentiles(firsts),
                "total_ms": percentiles(totals),
            }
            for path, (firsts, totals) in sorted(by_path.items())
        ],
        "tool_calls": {
            "calls": tool_calls,
            "turns_with_tool_call": len(turns_with_tools),
            "rate": _share(len(turns_with_tools), total),
        },
        "top_k": {
            "calls": topk_calls,
            "overridden": topk_overridden,
            "not_given_by_model": topk_not_given,
            "override_rate": _share(topk_overridden, topk_calls),
        },
        "degradations": {
            "reasons": reasons,
            "total": sum(degraded_by_day.values()),
            "days": [
                {
                    "date": day.isoformat(),
                    "counts": {reason: degraded_by_day.get((day, reason), 0) for reason in reasons},
                }
                for day in period.days()
            ],
        },
        "feedback": {"up": up, "down": down, "total": up + down, "up_share": _share(up, up + down)},
    }
