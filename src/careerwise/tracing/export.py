"""One stored turn's header as JSON: the same fields for `careerwise traces show --json` and the
dashboard's timeline, so the two can never disagree about a turn."""

from __future__ import annotations

from typing import Any

from careerwise.store import Trace, as_utc


def trace_header(trace: Trace) -> dict[str, Any]:
    return {
        "id": trace.id,
        "conversation_id": trace.conversation_id,
        "assistant_id": trace.assistant_id,
        "channel": trace.channel,
        "intent": trace.intent,
        "tier": trace.tier,
        "flow": trace.flow,
        "path": trace.path,
        "status": trace.status,
        "error_code": trace.error_code,
        "degraded": trace.degraded,
        "model": trace.model,
        "started_at": as_utc(trace.started_at).isoformat(),
        "duration_ms": trace.duration_ms,
        "first_text_ms": trace.first_text_ms,
        "timings": trace.timings,
        "usage": trace.usage,
    }
