"""What every sink of a turn receives, and the fan-out the engine talks to.

The engine hands each event to :meth:`TurnObserver.observe` right before the caller gets it, each LLM
call record to :meth:`TurnObserver.llm_call` when the call ends, and :meth:`TurnObserver.finish` once
when the turn is over (also when the client went away). The sinks (the trace recorder, the metrics,
OpenTelemetry) read those objects and nothing else.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from careerwise.events import Event
from careerwise.tracing.llm_calls import LLMCall

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TurnStart:
    trace_id: str
    conversation_id: str
    channel: str
    assistant_id: str
    model: str
    started: float = field(default_factory=time.perf_counter)  # perf_counter, the spans' zero
    started_ns: int = field(default_factory=time.time_ns)  # wall clock, for exporters


@dataclass(frozen=True)
class TurnEnd:
    status: str  # ok | error | cancelled
    flow: str
    path: str


class TurnSink(Protocol):
    def observe(self, event: Event) -> None: ...

    def llm_call(self, call: LLMCall) -> None: ...

    def finish(self, end: TurnEnd) -> None: ...


class TurnObserver:
    """Fans each object out to every sink. A sink that raises is logged and reported to ``on_failure``
    (counted in /metrics); the other sinks and the user's stream carry on."""

    def __init__(
        self, start: TurnStart, sinks: Sequence[TurnSink], on_failure: Callable[[str], None]
    ) -> None:
        self.start = start
        self._sinks = list(sinks)
        self._on_failure = on_failure
        self._finished = False

    def _each(self, what: str, call: Callable[[TurnSink], None]) -> None:
        for sink in self._sinks:
            try:
                call(sink)
            except Exception:
                log.exception("turn %s: the %s sink failed on %s", self.start.trace_id, _name(sink), what)
                self._on_failure(_name(sink))

    def observe(self, event: Event) -> None:
        # called for every streamed chunk: a plain loop, no closure per event
        for sink in self._sinks:
            try:
                sink.observe(event)
            except Exception:
                log.exception(
                    "turn %s: the %s sink failed on %s", self.start.trace_id, _name(sink), event.type
                )
                self._on_failure(_name(sink))

    def llm_call(self, call: LLMCall) -> None:
        self._each("llm_call", lambda s: s.llm_call(call))

    def finish(self, end: TurnEnd) -> None:
        if self._finished:
            return
        self._finished = True
        self._each("finish", lambda s: s.finish(end))


def _name(sink: TurnSink) -> str:
    return type(sink).__name__
