"""Layer 2 in two stages with the real embedder: the lexical stage decides what it is sure of without
running the model, passes the rest on, and the routing record (route event, trace, ``--json``) names the
stage that decided with its scores, margin and bars."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from careerwise.events import RouteEvent
from careerwise.knowledge.embeddings import Embedder, Matrix
from careerwise.routing import INTENTS, CascadeRouter, load_thresholds
from careerwise.routing.lexical import NAME
from careerwise.routing.thresholds import NEVER, Thresholds, thresholds_path
from tests.auth_helpers import login_sync
from tests.conftest import LiveServer, client, parse_sse
from tests.fakes.fake_llm import FakeLLM, text
from tests.integration.test_admin_api import ADMIN, make_user
from tests.integration.test_routing_cascade import CACHE

PLAIN = "how do I prepare for a job interview"  # no rule matches it; its words are career examples' words


class Counting:
    """The real embedder, counting the texts it is asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.texts: list[str] = []
        self._lock = threading.Lock()

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        with self._lock:
            self.texts.extend(texts)
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        return self.inner.embed_passages(texts)


def lexical_bars(**change: Any) -> Thresholds:
    packaged = load_thresholds(thresholds_path(NAME))
    fields = {
        "thresholds": packaged.thresholds,
        "margin": packaged.margin,
        "model": packaged.model,
        "examples_digest": packaged.examples_digest,
        "k": packaged.k,
    }
    return Thresholds(**(fields | change))


@pytest.fixture
def counting(embedder: Embedder) -> Callable[..., tuple[CascadeRouter, Counting]]:
    def make(**kw: Any) -> tuple[CascadeRouter, Counting]:
        wrapped = Counting(embedder)
        router = CascadeRouter(wrapped, None, no_llm=True, cache_dir=CACHE, **kw)
        return router, wrapped

    return make


async def test_the_lexical_stage_decides_without_the_model(counting: Callable[..., Any]) -> None:
    router, wrapped = counting()
    await router.prepare()
    wrapped.texts.clear()  # the examples, embedded once; only messages count from here
    decision = await router.route(PLAIN)
    assert (decision.intent, decision.layer, decision.rule_id) == ("career", "lexical", None)
    assert wrapped.texts == [] and router.counts["lexical"] == 1
    # the record: the stage's scores, the best two, the margin and both bars, also under stages
    assert decision.scores is not None and set(decision.scores) == set(INTENTS)
    assert decision.top is not None and decision.top[0][0] == "career"
    bars = load_thresholds(thresholds_path(NAME))
    assert decision.threshold == bars.thresholds["career"] and decision.required_margin == bars.margin
    assert decision.top[0][1] >= decision.threshold and decision.margin is not None
    assert decision.margin >= decision.required_margin
    (stage,) = decision.stages or []
    assert stage["stage"] == "lexical" and stage["model"] == NAME and stage["accepted"] is True
    assert stage["scores"] == decision.scores and stage["top"] == decision.top
    assert decision.reasons[0].startswith("lexical: career") and decision.tier == "simple"


async def test_an_unsure_lexical_stage_passes_the_message_on(counting: Callable[..., Any]) -> None:
    never = lexical_bars(thresholds=dict.fromkeys(INTENTS, NEVER))
    router, wrapped = counting(lexical=never)
    decision = await router.route(PLAIN)
    assert decision.layer == "embedding" and decision.intent == "career" and PLAIN in wrapped.texts
    lexical, embedding = decision.stages or []
    assert (lexical["stage"], lexical["accepted"], lexical["threshold"]) == ("lexical", False, NEVER)
    assert (embedding["stage"], embedding["accepted"]) == ("embedding", True)
    # the top-level layer-2 fields are the stage that decided (as before the lexical stage existed)
    assert decision.scores == embedding["scores"] and decision.threshold == embedding["threshold"]
    assert [r.split(":")[0] for r in decision.reasons[:2]] == ["lexical", "embedding"]


async def test_lexical_thresholds_for_other_examples_turn_the_stage_off(
    counting: Callable[..., Any],
) -> None:
    router, wrapped = counting(lexical=lexical_bars(examples_digest="0000"))
    assert router.lexical is None
    decision = await router.route(PLAIN)
    assert decision.layer == "embedding" and PLAIN in wrapped.texts
    assert [s["stage"] for s in decision.stages or []] == ["embedding"]
    off, _ = counting(lexical=False)
    assert off.lexical is None


async def test_a_batch_embeds_only_what_the_lexical_stage_left(counting: Callable[..., Any]) -> None:
    router, wrapped = counting()
    await router.prepare()
    wrapped.texts.clear()
    unsure = "最近有點迷惘"  # a feeling, not the examples' words
    decisions = await router.route_many([PLAIN, "你好", unsure])
    assert [d.layer for d in decisions][:2] == ["lexical", "rules"]
    assert decisions[2].layer in ("embedding", "embedding-guess")
    assert wrapped.texts == [unsure]


async def test_the_record_validates_as_the_route_event(counting: Callable[..., Any]) -> None:
    router, _ = counting()
    decision = await router.route(PLAIN)
    event = RouteEvent.model_validate({**decision.to_json(), "flow": "career-simple"})
    assert event.layer == "lexical" and event.stages == decision.to_json()["stages"]
    assert event.stages is not None and event.stages[0]["accepted"] is True


def test_the_route_event_and_the_trace_carry_the_stages(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    server = live_server()
    fake_llm.script(text("先整理作品集，再練習自我介紹。"))
    with client(server) as c:
        r = c.post("/api/chat", json={"message": "how do I prepare for a job interview"})
        assert r.status_code == 200, r.text
        events = dict(parse_sse(r.text))
    route = events["route"]
    assert (route["intent"], route["layer"]) == ("career", "lexical")
    (stage,) = route["stages"]
    assert stage["stage"] == "lexical" and stage["accepted"] is True
    assert route["threshold"] == stage["threshold"] and route["margin"] == stage["margin"]
    make_user(server, ADMIN, admin=True)
    with client(server) as admin:
        login_sync(admin, ADMIN)
        timeline = admin.get(f"/api/admin/turns/{events['done']['trace_id']}")
        assert timeline.status_code == 200, timeline.text
        t = timeline.json()
    assert t["route"]["layer"] == "lexical" and t["route"]["stages"] == route["stages"]
    (span,) = [s for s in t["spans"] if s["kind"] == "route"]
    assert span["attributes"]["stages"] == route["stages"]


@pytest.mark.parametrize("on", [True, False])
async def test_the_served_router_follows_the_lexical_setting(make_services: Any, on: bool) -> None:
    services = make_services(routing_lexical=on)
    router = services.engine.router
    assert isinstance(router, CascadeRouter)
    assert (router.lexical is not None) is on
