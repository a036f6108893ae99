"""OpenTelemetry export with the GenAI semantic conventions (off unless ``CAREERWISE_OTEL_ENDPOINT`` is set).

One trace per turn: an ``invoke_agent Summer`` span, and under it ``route``, a ``chat {model}`` span per
LLM call and an ``execute_tool {name}`` span per tool call; degradations and errors are span events on
the turn. Attribute values are masked like the stored trace. The tracer provider is injected (tests
pass one with the SDK's in-memory exporter); nothing here touches the global provider.
"""

from __future__ import annotations

import json
import time
from typing import Any, assert_never
from urllib.parse import urlsplit

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, set_span_in_context

from careerwise import __version__
from careerwise.events import (
    DegradedEvent,
    DeltaEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    ProgressEvent,
    ReportEvent,
    RouteEvent,
    SectionEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from careerwise.tracing.llm_calls import LLMCall
from careerwise.tracing.masking import mask_json, mask_text
from careerwise.tracing.turn import TurnEnd, TurnStart


def _json(value: Any) -> str:
    return json.dumps(mask_json(value), ensure_ascii=False, sort_keys=True)


def traces_url(endpoint: str) -> str:
    """OTLP/HTTP wants the signal's full URL: ``http://collector:4318`` becomes ``.../v1/traces``."""
    return endpoint if urlsplit(endpoint).path.strip("/") else endpoint.rstrip("/") + "/v1/traces"


class OTelExporter:
    def __init__(self, provider: TracerProvider, *, agent_name: str = "Summer") -> None:
        self.provider = provider
        self.tracer = provider.get_tracer("careerwise", __version__)
        self.agent_name = agent_name

    @classmethod
    def otlp(cls, endpoint: str, *, service_name: str) -> OTelExporter:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=traces_url(endpoint))))
        return cls(provider)

    def turn_sink(self, start: TurnStart) -> OTelTurn:
        return OTelTurn(self, start)

    def shutdown(self) -> None:
        self.provider.shutdown()  # flushes what the batch processor still holds


class OTelTurn:
    def __init__(self, exporter: OTelExporter, start: TurnStart) -> None:
        self.tracer = exporter.tracer
        self.start = start
        self.root: Span = self.tracer.start_span(
            f"invoke_agent {exporter.agent_name}",
            kind=SpanKind.INTERNAL,
            start_time=start.started_ns,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": exporter.agent_name,
                "gen_ai.agent.id": start.assistant_id,
                "gen_ai.conversation.id": start.conversation_id,
                "careerwise.trace_id": start.trace_id,
                "careerwise.channel": start.channel,
            },
        )
        self.context = set_span_in_context(self.root)
        self.tools: dict[str, Span] = {}

    def _ns(self, perf: float) -> int:
        """A ``perf_counter`` reading on the wall clock of the turn's start."""
        return self.start.started_ns + int((perf - self.start.started) * 1e9)

    def observe(self, event: Event) -> None:
        match event:
            case RouteEvent():
                now = time.time_ns()
                took = int((event.duration_ms or 0.0) * 1e6)
                route = self.tracer.start_span(
                    "route",
                    context=self.context,
                    start_time=now - took,
                    attributes={
                        "careerwise.route.intent": event.intent,
                        "careerwise.route.tier": event.tier or "",
                        "careerwise.route.layer": event.layer,
                        "careerwise.route.flow": event.flow,
                        "careerwise.route.record": _json(event.model_dump(mode="json", exclude={"type"})),
                    },
                )
                route.end(end_time=now)
            case ToolCallEvent():
                self.tools[event.call_id] = self.tracer.start_span(
                    f"execute_tool {event.name}",
                    context=self.context,
                    kind=SpanKind.INTERNAL,
                    attributes={
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": event.name,
                        "gen_ai.tool.type": "function",
                        "gen_ai.tool.call.id": event.call_id,
                        # the effective arguments: what the tool ran with, as the user's stream showed
                        "gen_ai.tool.call.arguments": _json(event.effective_arguments),
                        "careerwise.tool.requested_arguments": _json(event.requested_arguments),
                        "careerwise.tool.reason": mask_text(event.reason),
                    },
                )
            case ToolResultEvent():
                span: Span | None = self.tools.pop(event.call_id, None)
                if span is not None:
                    span.set_attribute("careerwise.tool.returned", event.returned)
                    span.set_attribute("careerwise.tool.ok", event.ok)
                    if not event.ok:
                        span.set_attribute("error.type", "tool_error")
                        span.set_status(Status(StatusCode.ERROR, mask_text(event.error or "")))
                    span.end()
            case DegradedEvent():
                self.root.add_event(
                    "careerwise.degraded", {"reason": event.reason, "message": mask_text(event.message)}
                )
            case ErrorEvent():
                self.root.add_event(
                    "careerwise.error", {"code": event.code, "message": mask_text(event.message)}
                )
                self.root.set_attribute("error.type", event.code)
                self.root.set_status(Status(StatusCode.ERROR, event.code))
            case DoneEvent():
                self.root.set_attribute("careerwise.path", event.path)
                for key, value in event.usage.items():
                    self.root.set_attribute(f"careerwise.usage.{key}", value)
            case DeltaEvent() | ReportEvent() | SectionEvent() | ProgressEvent():
                pass
            case _:
                assert_never(event)

    def llm_call(self, call: LLMCall) -> None:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": call.provider,
            "gen_ai.request.model": call.model,
            "careerwise.llm.purpose": call.purpose,
            "careerwise.llm.tool_calls": call.tool_calls,
        }
        if call.finish_reason:
            attributes["gen_ai.response.finish_reasons"] = [call.finish_reason]
        if call.prompt_tokens is not None:
            attributes["gen_ai.usage.input_tokens"] = call.prompt_tokens
        if call.completion_tokens is not None:
            attributes["gen_ai.usage.output_tokens"] = call.completion_tokens
        if call.ttft_ms is not None:
            attributes["careerwise.llm.time_to_first_token_ms"] = call.ttft_ms
        start = self._ns(call.started)
        span = self.tracer.start_span(
            f"chat {call.model}",
            context=self.context,
            kind=SpanKind.CLIENT,
            start_time=start,
            attributes=attributes,
        )
        if call.error is not None:
            span.set_attribute("error.type", call.error)
            span.set_status(Status(StatusCode.ERROR, call.error))
        span.end(end_time=start + int(call.duration_ms * 1e6))

    def finish(self, end: TurnEnd) -> None:
        for span in self.tools.values():  # the turn ended before the tool reported (cancelled)
            span.set_status(Status(StatusCode.ERROR, "cancelled"))
            span.end()
        self.tools.clear()
        self.root.set_attribute("careerwise.status", end.status)
        self.root.set_attribute("careerwise.flow", end.flow)
        self.root.set_attribute("careerwise.path", end.path)
        if end.status == "cancelled":
            self.root.set_status(Status(StatusCode.ERROR, "cancelled"))
        self.root.end()
