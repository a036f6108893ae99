"""OpenTelemetry export with the GenAI semantic conventions, read back from the SDK's in-memory exporter;
the same turn's stored spans; masking on every stored and exported copy, not on the user's history."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from sqlalchemy import select

from careerwise.cli.admin import load_trace
from careerwise.engine import TurnRequest
from careerwise.events import DoneEvent, Event
from careerwise.knowledge.embeddings import Embedder
from careerwise.llm.types import LLMProvider
from careerwise.routing.llm_classifier import LLMIntentClassifier, Verdict
from careerwise.routing.router import RouteDecision
from careerwise.services import Services, build_services, make_provider
from careerwise.store import Message, TraceEvent, TraceSpan
from careerwise.tracing.llm_calls import ObservedProvider
from careerwise.tracing.otel import OTelExporter, traces_url
from careerwise.tracing.telemetry import Telemetry
from tests.conftest import SettingsFactory
from tests.fakes.fake_llm import Call, FakeLLM, error, text, tool_calls

QUESTION = "怎麼談薪水？ 信箱 mei@gmail.com"  # short: the simple tier (tool use)


class AskingRouter:
    """Layer 3 only: the real LLM classifier on the process's (observed) provider, as the cascade
    holds it; everything it does not call a resume is a simple career question."""

    def __init__(self, provider: LLMProvider) -> None:
        self.classifier = LLMIntentClassifier(ObservedProvider(provider))

    async def route(self, message: str) -> RouteDecision:
        verdict = await self.classifier.classify(message)
        assert isinstance(verdict, Verdict)
        tier = "simple" if verdict.intent == "career" else None
        return RouteDecision(intent=verdict.intent, tier=tier, layer="llm", llm_intent=verdict.intent)


@pytest.fixture
async def otel_services(
    make_settings: SettingsFactory, embedder: Embedder
) -> AsyncIterator[Callable[..., tuple[Services, InMemorySpanExporter]]]:
    built: list[Services] = []

    def factory(*, ask_llm_router: bool = False, **overrides: Any) -> tuple[Services, InMemorySpanExporter]:
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        settings = make_settings(**overrides)
        llm = make_provider(settings)
        services = build_services(
            settings,
            provider=llm,
            embedder=embedder,
            router=AskingRouter(llm) if ask_llm_router else None,
            telemetry=Telemetry(otel=OTelExporter(provider)),
        )
        built.append(services)
        return services, exporter

    yield factory
    for services in built:
        await services.aclose()


async def _turn(services: Services, message: str) -> list[Event]:
    await services.prepare_knowledge()
    return [e async for e in services.engine.run(TurnRequest(message=message))]


def _by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, list[ReadableSpan]]:
    out: dict[str, list[ReadableSpan]] = {}
    for s in spans:
        out.setdefault(s.name, []).append(s)
    return out


async def test_a_tool_turn_exports_genai_spans(
    fake_llm: FakeLLM, otel_services: Callable[..., tuple[Services, InMemorySpanExporter]]
) -> None:
    services, exporter = otel_services()
    await services.assistant_settings.set("use_full_retrieval_range", True, changed_by="test")
    await services.assistant_settings.set("configured_top_k", 6, changed_by="test")
    fake_llm.script(
        tool_calls(Call("searchKnowledge", {"query": "薪水談判 mei@gmail.com", "top_k": 2}, id="c1")),
        text("先做市場調查，再談數字。"),
    )
    events = await _turn(services, QUESTION)
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.status == "ok" and done.path == "A"

    spans = exporter.get_finished_spans()
    names = _by_name(spans)
    (root,) = names["invoke_agent Summer"]
    assert root.parent is None
    assert root.attributes is not None
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["gen_ai.agent.id"] == "summer"
    assert root.attributes["careerwise.trace_id"] == done.trace_id
    assert root.attributes["careerwise.path"] == "A" and root.attributes["careerwise.status"] == "ok"
    # every other span is a child of the turn, in the same trace
    assert all(
        s.parent is not None and s.parent.span_id == root.context.span_id for s in spans if s is not root
    )
    assert {s.context.trace_id for s in spans} == {root.context.trace_id}

    chats = names["chat fake-model"]
    assert len(chats) == 2
    phases = sorted(str((c.attributes or {})["careerwise.llm.purpose"]) for c in chats)
    assert phases == ["phase1", "phase3"]
    for chat in chats:
        a = chat.attributes or {}
        assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.request.model"] == "fake-model"
        assert int(str(a["gen_ai.usage.input_tokens"])) > 0 and int(str(a["gen_ai.usage.output_tokens"])) > 0
        assert chat.start_time is not None and chat.end_time is not None and chat.end_time >= chat.start_time
    finish = {str((c.attributes or {})["careerwise.llm.purpose"]): c.attributes for c in chats}
    assert tuple(finish["phase1"]["gen_ai.response.finish_reasons"]) == ("tool_calls",)  # type: ignore[index]
    assert tuple(finish["phase3"]["gen_ai.response.finish_reasons"]) == ("stop",)  # type: ignore[index]
    # the tokens exported are the tokens the turn reported
    total_in = sum(int(str((c.attributes or {})["gen_ai.usage.input_tokens"])) for c in chats)
    assert total_in == done.usage["prompt_tokens"]

    (tool,) = names["execute_tool searchKnowledge"]
    t = tool.attributes or {}
    assert t["gen_ai.operation.name"] == "execute_tool" and t["gen_ai.tool.name"] == "searchKnowledge"
    assert t["gen_ai.tool.call.id"] == "c1"
    effective = json.loads(str(t["gen_ai.tool.call.arguments"]))
    assert effective == {"query": "薪水談判 [email]", "top_k": 6}  # effective, masked
    assert json.loads(str(t["careerwise.tool.requested_arguments"]))["top_k"] == 2
    assert t["careerwise.tool.returned"] == 6
    assert names["route"][0].attributes is not None

    # nothing exported carries the e-mail or the phone number
    exported = json.dumps([dict(s.attributes or {}) for s in spans], ensure_ascii=False, default=str)
    assert "mei@gmail.com" not in exported and "0912" not in exported


async def test_the_stored_trace_is_masked_and_has_the_spans(
    fake_llm: FakeLLM, otel_services: Callable[..., tuple[Services, InMemorySpanExporter]]
) -> None:
    services, _ = otel_services()
    fake_llm.script(
        tool_calls(Call("searchKnowledge", {"query": "薪水 0912-345-678", "top_k": 3}, id="c9")),
        text("寄信到 mei@gmail.com 前先想好數字。"),
    )
    events = await _turn(services, QUESTION)
    done = events[-1]
    assert isinstance(done, DoneEvent)
    stored = await load_trace(services.db, done.trace_id)
    assert stored is not None and stored["assistant_id"] == "summer"
    kinds = [(s["kind"], s["name"]) for s in stored["spans"]]
    assert kinds == [
        ("route", "route"),
        ("llm", "chat fake-model"),
        ("tool", "execute_tool searchKnowledge"),
        ("llm", "chat fake-model"),
    ]
    starts = [s["start_ms"] for s in stored["spans"]]
    assert starts == sorted(starts) and [s["seq"] for s in stored["spans"]] == [1, 2, 3, 4]
    llm1, tool, llm3 = stored["spans"][1], stored["spans"][2], stored["spans"][3]
    assert llm1["attributes"]["purpose"] == "phase1" and llm3["attributes"]["purpose"] == "phase3"
    assert llm1["attributes"]["finish_reason"] == "tool_calls" and llm1["attributes"]["tool_calls"] == 1
    assert 0 <= llm1["attributes"]["ttft_ms"] <= llm1["duration_ms"]
    assert llm1["start_ms"] + llm1["duration_ms"] <= tool["start_ms"] + 1e-6 <= llm3["start_ms"]
    assert tool["attributes"]["effective_arguments"] == {"query": "薪水 [phone]", "top_k": 3}
    assert tool["attributes"]["returned"] == 3 and tool["status"] == "ok"
    assert stored["tool_calls"][0]["requested_arguments"]["query"] == "薪水 [phone]"

    async with services.db.session() as s:
        payloads = json.dumps(
            [e.payload for e in (await s.scalars(select(TraceEvent))).all()]
            + [sp.attributes for sp in (await s.scalars(select(TraceSpan))).all()],
            ensure_ascii=False,
        )
        messages = {m.role: m.content for m in (await s.scalars(select(Message))).all()}
    assert "0912-345-678" not in payloads and "mei@gmail.com" not in payloads
    # the user's own history is kept as typed, and so is the answer they read
    assert messages["user"] == QUESTION
    assert "mei@gmail.com" in messages["assistant"]


async def test_router_llm_calls_and_failures_are_spans(
    fake_llm: FakeLLM, otel_services: Callable[..., tuple[Services, InMemorySpanExporter]]
) -> None:
    services, exporter = otel_services(ask_llm_router=True, llm_retries=0)
    fake_llm.script(text('{"intent": "career", "confidence": 0.9}'), error(500))
    events = await _turn(services, "換工作前要準備什麼？")
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.status == "error"

    stored = await load_trace(services.db, done.trace_id)
    assert stored is not None
    llm = [s for s in stored["spans"] if s["kind"] == "llm"]
    assert [s["attributes"]["purpose"] for s in llm] == ["route", "phase1"]
    assert llm[0]["status"] == "ok" and llm[0]["attributes"]["finish_reason"] == "stop"
    assert llm[1]["status"] == "error" and llm[1]["attributes"]["error"] == "llm_unavailable"
    errors = [s for s in stored["spans"] if s["kind"] == "error"]
    assert [e["name"] for e in errors] == ["llm_unavailable"]

    names = _by_name(exporter.get_finished_spans())
    (root,) = names["invoke_agent Summer"]
    assert root.status.status_code is StatusCode.ERROR
    assert [e.name for e in root.events] == ["careerwise.error"]
    chats = names["chat fake-model"]
    purposes = {str((c.attributes or {})["careerwise.llm.purpose"]): c for c in chats}
    assert purposes["phase1"].status.status_code is StatusCode.ERROR
    assert (purposes["phase1"].attributes or {})["error.type"] == "llm_unavailable"
    assert purposes["route"].status.status_code is StatusCode.UNSET


def test_the_otlp_endpoint_gets_the_traces_path() -> None:
    assert traces_url("http://collector:4318") == "http://collector:4318/v1/traces"
    assert traces_url("http://collector:4318/") == "http://collector:4318/v1/traces"
    assert traces_url("https://otel.example.com/v1/traces") == "https://otel.example.com/v1/traces"
