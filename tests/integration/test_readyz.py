"""``/readyz`` over real HTTP: real probes (an embedding, a search); a broken retriever, injected through
the services' constructor parameters, makes it 503 and shows in ``/metrics``."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence

import pytest

from careerwise.knowledge.embeddings import Embedder, Matrix
from careerwise.knowledge.rerank import Reranker
from careerwise.llm.local import LocalProvider
from careerwise.routing.router import RulesRouter
from careerwise.services import build_services
from tests.conftest import LiveServer, SettingsFactory, client
from tests.fakes.fake_llm import FakeLLM, text
from tests.integration.test_metrics import RaisingReranker, scrape, value


class ControlledEmbedder:
    """The real embedder, until a test breaks it (raises) or slows it down."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name, self.dim = inner.name, inner.dim
        self.broken = False
        self.delay = 0.0

    def _check(self) -> None:
        if self.delay:
            time.sleep(self.delay)
        if self.broken:
            raise OSError("the embedding model file could not be read")

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        self._check()
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        self._check()
        return self.inner.embed_passages(texts)


@pytest.fixture
def controlled_server(
    make_settings: SettingsFactory, embedder: Embedder
) -> Iterator[Callable[..., tuple[LiveServer, ControlledEmbedder]]]:
    servers: list[LiveServer] = []

    def factory(
        *, reranker: Reranker | None = None, **overrides: object
    ) -> tuple[LiveServer, ControlledEmbedder]:
        controlled = ControlledEmbedder(embedder)
        # rules-only routing: the cascade's start-up embeds its examples, which a test may break
        services = build_services(make_settings(**overrides), embedder=controlled, router=RulesRouter())
        services.kb.reranker = reranker  # the knowledge base's own constructor parameter
        server = LiveServer(services).start()
        servers.append(server)
        return server, controlled

    yield factory
    for s in servers:
        s.stop()


def test_ready_with_real_probes(live_server: Callable[..., LiveServer]) -> None:
    server = live_server()
    with client(server) as c:
        r = c.get("/readyz")
        assert c.get("/healthz").json() == {"status": "ok"}
    assert r.status_code == 200, r.text
    body = r.json()
    checks = body["checks"]
    assert body["status"] == "ok" and set(checks) == {"database", "knowledge", "embedding", "llm"}
    assert all(c["state"] == "ok" for c in checks.values())
    assert checks["database"]["backend"] == "sqlite"
    assert checks["embedding"]["model"] == server.services.kb.embedder.name
    assert checks["embedding"]["dim"] == server.services.kb.embedder.dim
    assert checks["knowledge"]["chunks"] > 100 and checks["knowledge"]["search"]["hits"] >= 1
    m = scrape(server)
    for name in checks:
        assert value(m, "careerwise_ready", check=name) == 1
    assert value(m, "careerwise_readiness_failures_total") == 0


def test_a_search_that_raises_fails_readiness_and_is_counted(live_server: Callable[..., LiveServer]) -> None:
    server = live_server()
    server.services.kb.reranker = RaisingReranker()
    with client(server) as c:
        r = c.get("/readyz")
    assert r.status_code == 503
    checks = r.json()["checks"]
    assert r.json()["status"] == "failed"
    assert checks["knowledge"]["state"] == "failed"
    assert checks["knowledge"]["error"] == "RuntimeError: the reranker's model file is gone"
    assert checks["embedding"]["state"] == "ok" and checks["database"]["state"] == "ok"
    m = scrape(server)
    assert value(m, "careerwise_ready", check="knowledge") == 0
    assert value(m, "careerwise_ready", check="embedding") == 1
    assert value(m, "careerwise_readiness_failures_total", check="knowledge") == 1
    assert value(m, "careerwise_retrieval_failures_total", kind="readiness") == 1


class UnloadableReranker:
    """A reranker whose start-up step fails: the knowledge index does not load."""

    def prepare(self, chunks: object) -> None:
        raise OSError("the reranker's sentence vectors could not be read")

    def rerank(self, *args: object) -> list[object]:
        raise AssertionError("never reached: the index did not load")


def test_an_index_that_failed_to_load_fails_readiness_and_turns_say_so(
    fake_llm: FakeLLM, controlled_server: Callable[..., tuple[LiveServer, ControlledEmbedder]]
) -> None:
    server, _ = controlled_server(reranker=UnloadableReranker())
    fake_llm.script(text("我先用一般知識回答。"))
    with client(server) as c:
        r = c.get("/readyz")
        turn = c.post("/api/chat", json={"message": "怎麼談薪水？", "mode": "full"}).json()
    assert r.status_code == 503
    checks = r.json()["checks"]
    assert checks["knowledge"] == {
        "state": "failed",
        "chunks": 0,
        "version": "unknown",
        "error": "OSError: the reranker's sentence vectors could not be read",
    }  # and no search probe on an index that is not there
    assert checks["embedding"]["state"] == "ok"
    assert [d["reason"] for d in turn["degraded"]] == ["knowledge_unavailable"]
    m = scrape(server)
    assert value(m, "careerwise_readiness_failures_total", check="knowledge") == 1
    assert value(m, "careerwise_readiness_failures_total", check="embedding") == 0
    assert value(m, "careerwise_retrieval_failures_total", kind="unavailable") == 1
    assert value(m, "careerwise_degradations_total", reason="knowledge_unavailable") == 1


def test_a_broken_embedding_model_fails_both_checks(
    controlled_server: Callable[..., tuple[LiveServer, ControlledEmbedder]],
) -> None:
    server, controlled = controlled_server()
    controlled.broken = True
    with client(server) as c:
        r = c.get("/readyz")
    assert r.status_code == 503
    checks = r.json()["checks"]
    assert checks["embedding"] == {
        "state": "failed",
        "error": "OSError: the embedding model file could not be read",
    }
    assert checks["knowledge"]["state"] == "failed"
    assert checks["knowledge"]["search"]["error"] == "OSError: the embedding model file could not be read"
    m = scrape(server)
    assert value(m, "careerwise_readiness_failures_total", check="embedding") == 1
    assert value(m, "careerwise_retrieval_failures_total", kind="readiness") == 2


def test_a_slow_embedding_model_times_out(
    controlled_server: Callable[..., tuple[LiveServer, ControlledEmbedder]],
) -> None:
    server, controlled = controlled_server(readyz_timeout=0.5)
    controlled.delay = 3.0  # far past the deadline: the probe must give up, not wait
    with client(server) as c:
        r = c.get("/readyz")
    controlled.delay = 0.0
    assert r.status_code == 503
    checks = r.json()["checks"]
    assert checks["embedding"] == {"state": "failed", "error": "no answer within 0.5 s"}
    assert checks["knowledge"]["search"] == {"state": "failed", "error": "no answer within 0.5 s"}


def test_readyz_probes_the_provider_and_fails_only_without_a_fallback(
    live_server: Callable[..., LiveServer],
) -> None:
    """A real ``GET /models`` of the provider: up -> ok with its latency; down -> 503 (counted), unless
    the configured fallback answers; every answer names the process that gave it."""
    with FakeLLM() as primary, FakeLLM() as fallback:
        alone = live_server(llm_base_url=primary.base_url, readyz_llm_cache_seconds=0)
        backed = live_server(
            llm_base_url=primary.base_url, llm_fallback_base_url=fallback.base_url, readyz_llm_cache_seconds=0
        )
        with client(alone) as c:
            r = c.get("/readyz")
        assert r.status_code == 200, r.text
        assert r.json()["pid"] == os.getpid()  # an in-process server: this test's own process
        llm = r.json()["checks"]["llm"]
        assert (llm["state"], llm["provider"], llm["probe"]["state"], llm["probe"]["status"]) == (
            "ok",
            "primary",
            "ok",
            200,
        )
        assert llm["probe"]["ms"] >= 0 and llm["probe"]["cached"] is False

        primary.stop()  # the provider is down: connections are refused
        with client(alone) as c:
            r = c.get("/readyz")
        assert r.status_code == 503
        llm = r.json()["checks"]["llm"]
        assert llm["state"] == "failed" and llm["probe"]["state"] == "failed"
        assert "does not answer" in llm["error"] and "ConnectError" in llm["probe"]["error"]
        m = scrape(alone)
        assert value(m, "careerwise_ready", check="llm") == 0
        assert value(m, "careerwise_readiness_failures_total", check="llm") == 1

        with client(backed) as c:
            r = c.get("/readyz")
        assert r.status_code == 200, r.text  # down, but the fallback answers in its place
        llm = r.json()["checks"]["llm"]
        assert llm["probe"]["state"] == "failed" and llm["fallback_probe"]["state"] == "ok"
        assert (llm["state"], llm["answering"]) == ("ok", "fallback")


def test_the_llm_probe_is_cached_so_pollers_cannot_hammer_the_provider(
    live_server: Callable[..., LiveServer],
) -> None:
    with FakeLLM() as provider:
        server = live_server(llm_base_url=provider.base_url, readyz_llm_cache_seconds=3600)
        with client(server) as c:
            first = c.get("/readyz").json()["checks"]["llm"]["probe"]
            provider.stop()  # within the cache window the last answer stands; no new request is made
            second = c.get("/readyz")
    assert first["state"] == "ok" and first["cached"] is False
    probe = second.json()["checks"]["llm"]["probe"]
    assert second.status_code == 200 and probe["cached"] is True and probe["state"] == "ok"


def test_readyz_shows_the_provider_profile_and_the_deep_design_it_picks(
    live_server: Callable[..., LiveServer],
) -> None:
    """Issue #24: what the flows size their work to, on /readyz. Declared figures show as declared, and
    a provider declared slow and serving one request at a time gets the compact design."""
    server = live_server(llm_concurrency=1, llm_gen_tps=8.0, llm_prompt_tps=100.0, llm_context_tokens=4096)
    with client(server) as c:
        llm = c.get("/readyz").json()["checks"]["llm"]
    assert llm["profile"] | {"stream_cuts": 0} == {
        "tool_calling": "native",
        "passage_budget_tokens": None,
        "slow": False,
        "answer_quotes": False,
        "coverage_hint": False,
        "prompt_tokens_per_s": 100.0,
        "gen_tokens_per_s": 8.0,
        "concurrency": 1,
        "context_tokens": 4096,
        "source": "declared",
        "stream_cuts": 0,
        "route_labels": None,
        "design": "compact",
    }
    assert llm["deep_design"]["design"] == "compact" and "8 tokens/s" in llm["deep_design"]["why"]


def test_readyz_says_loading_until_the_embedded_model_is_in_memory(
    live_server: Callable[..., LiveServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #23: start-up loads the embedded model in the background; until it is in memory /readyz
    answers 503 with the llm check "loading", then 200 once the load is done."""
    release = threading.Event()

    def load_when_released(self: LocalProvider) -> object:
        assert release.wait(60), "the test never released the load"
        return object()  # stands for the weights: /readyz asks only whether they are in memory

    monkeypatch.setattr(LocalProvider, "_load_blocking", load_when_released)
    server = live_server(llm_base_url=None, readyz_llm_cache_seconds=0)
    with client(server) as c:
        loading = c.get("/readyz")
        release.set()
        for _ in range(600):  # the load finishes on the provider's own thread
            ready = c.get("/readyz")
            if ready.status_code == 200:
                break
            time.sleep(0.05)
    assert loading.status_code == 503, loading.text
    llm = loading.json()["checks"]["llm"]
    assert llm["state"] == "loading" and llm["probe"]["loaded"] is False
    assert ready.status_code == 200, ready.text
    assert ready.json()["checks"]["llm"]["probe"] == {
        "state": "ok",
        "loaded": True,
        "cached": False,
        "age_s": 0.0,
    }
