"""The process's telemetry: the metrics registry and the optional OpenTelemetry exporter, and a fresh
:class:`TurnObserver` for each turn (the trace recorder + metrics + export)."""

from __future__ import annotations

from careerwise.config import Settings
from careerwise.tracing.metrics import Metrics
from careerwise.tracing.otel import OTelExporter
from careerwise.tracing.recorder import TraceRecorder
from careerwise.tracing.turn import TurnObserver, TurnSink, TurnStart


class Telemetry:
    def __init__(self, *, metrics: Metrics | None = None, otel: OTelExporter | None = None) -> None:
        self.metrics = metrics or Metrics()
        self.otel = otel

    @classmethod
    def from_settings(cls, settings: Settings) -> Telemetry:
        otel = None
        if settings.otel_endpoint:
            otel = OTelExporter.otlp(settings.otel_endpoint, service_name=settings.otel_service_name)
        return cls(otel=otel)

    def start_turn(self, recorder: TraceRecorder, start: TurnStart) -> TurnObserver:
        sinks: list[TurnSink] = [recorder, self.metrics.turn_sink(start)]
        if self.otel is not None:
            sinks.append(self.otel.turn_sink(start))
        return TurnObserver(
            start, sinks, on_failure=lambda name: self.metrics.sink_failures.labels(name).inc()
        )

    def shutdown(self) -> None:
        if self.otel is not None:
            self.otel.shutdown()
