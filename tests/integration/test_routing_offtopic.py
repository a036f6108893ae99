"""Issue #25, routing: the off-topic route (decision 0017), the greeting in front of a question, and
booking words used about something else in layer 2 — with the real embedder and the fake LLM."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from careerwise.engine import TurnRequest
from careerwise.events import DeltaEvent, DoneEvent, RouteEvent
from careerwise.flows.offtopic import REPLY_EN, REPLY_ZH
from careerwise.knowledge.embeddings import Embedder, Matrix
from careerwise.llm.openai_provider import OpenAIProvider
from careerwise.routing import INTENTS, CascadeRouter, load_thresholds
from careerwise.routing.thresholds import NEVER, Thresholds
from careerwise.services import Services
from careerwise.store import Trace
from tests.conftest import ready
from tests.fakes.fake_llm import FakeLLM, text

CACHE = Path(__file__).resolve().parents[2] / ".cache"


class Recording:
    """The real embedder, recording the texts it was asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.texts: list[str] = []
        self.lock = threading.Lock()

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        with self.lock:
            self.texts.extend(texts)
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        return self.inner.embed_passages(texts)


@pytest.fixture
async def provider(fake_llm: FakeLLM) -> AsyncIterator[OpenAIProvider]:
    p = OpenAIProvider(
        base_url=fake_llm.base_url, api_key="x", model="fake-model", connect_timeout=2, read_timeout=5
    )
    yield p
    await p.aclose()


def always_ask() -> Thresholds:
    packaged = load_thresholds()
    return Thresholds(
        {name: NEVER for name in INTENTS}, 0.0, packaged.model, packaged.examples_digest, k=packaged.k
    )


async def run_turn(services: Services, message: str) -> list[Any]:
    await ready(services)
    return [e async for e in services.engine.run(TurnRequest(message=message))]


@pytest.mark.parametrize(
    ("message", "reply"), [("幫我寫一首關於海的詩", REPLY_ZH), ("tell me a joke", REPLY_EN)]
)
async def test_an_offtopic_request_gets_the_localised_reply_without_the_llm(
    fake_llm: FakeLLM, make_services: Callable[..., Services], message: str, reply: str
) -> None:
    services = make_services()
    events = await run_turn(services, message)
    route = next(e for e in events if isinstance(e, RouteEvent))
    assert (route.intent, route.layer, route.flow) == ("offtopic", "rules", "offtopic")
    assert "".join(e.text for e in events if isinstance(e, DeltaEvent)) == reply
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.status == "ok" and done.path == "offtopic"
    assert fake_llm.requests == []  # no tool flow, no model at all
    async with services.db.session() as session:
        trace = (await session.execute(select(Trace).where(Trace.id == done.trace_id))).scalar_one()
    assert trace.intent == "offtopic"


def test_the_reply_names_what_summer_helps_with() -> None:
    for words in (("轉職", "面試", "薪資", "履歷", "預約"), ("job", "interview", "salary", "resume", "book")):
        reply = REPLY_ZH if words[0] == "轉職" else REPLY_EN
        assert all(w in reply for w in words), reply


async def test_the_llm_may_answer_offtopic_with_one_label(
    fake_llm: FakeLLM, provider: OpenAIProvider, embedder: Embedder
) -> None:
    fake_llm.script(text("offtopic"))
    router = CascadeRouter(embedder, provider, always_ask(), cache_dir=CACHE, lexical=False)
    decision = await router.route("幫我想三個烤肉的點子")
    assert (decision.intent, decision.layer, decision.llm_intent) == ("offtopic", "llm", "offtopic")
    assert decision.llm_confidence is None and decision.tier is None
    assert "a label" in decision.reasons[-1]
    request = fake_llm.requests[0]
    assert request["max_tokens"] <= 16 and '"offtopic"' in request["messages"][0]["content"]


async def test_layer_two_scores_the_question_after_a_greeting(embedder: Embedder) -> None:
    recording = Recording(embedder)
    router = CascadeRouter(recording, None, cache_dir=CACHE, lexical=False)
    await router.prepare()
    recording.texts.clear()
    decision = await router.route("嗨 Summer～想問一下面試要穿什麼比較好")
    assert recording.texts == ["面試要穿什麼比較好"]  # the greeting and 想問一下 are not scored
    assert decision.intent == "career"
    recording.texts.clear()
    await router.route("thanks Summer 妳很可愛耶")  # nothing left to ask: the whole message is scored
    assert recording.texts == ["thanks Summer 妳很可愛耶"]


async def test_a_booking_verdict_on_an_interview_is_not_sure(embedder: Embedder) -> None:
    """「面試時段可以改嗎」 scores booking above its bar; the booking rules' vetoes (a job interview) make
    layer 2 unsure, so the guess (no LLM) is career."""
    router = CascadeRouter(embedder, None, cache_dir=CACHE, lexical=False)
    decision = await router.route("面試時段可以改嗎")
    assert decision.top is not None and decision.top[0][0] == "booking"
    assert decision.threshold is not None and decision.top[0][1] >= decision.threshold  # it would be sure
    assert (decision.intent, decision.layer) == ("career", "embedding-guess")
    assert any("«面試»" in r for r in decision.reasons)
