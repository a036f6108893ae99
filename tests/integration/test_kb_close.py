"""The knowledge base's BM25 worker threads end at the app's shutdown (``KnowledgeBase.close``, called by
``Services.aclose``; the audit of 2026-11-30 found the pool was never shut down). A search running at
that moment still gets its scores, and one after it still works, with BM25 on its own thread.

Threads are told apart by name (``careerwise-bm25``) and by what was alive before the test: other
tests' knowledge bases, never closed, may still hold theirs."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pytest

from careerwise.knowledge.embeddings import Embedder
from careerwise.knowledge.index import SearchResult
from careerwise.knowledge.service import KnowledgeBase
from careerwise.services import Services
from careerwise.store import Database
from tests.conftest import ready
from tests.integration.test_search_overlap import record_lexical_threads

POOL = "careerwise-bm25"
JOIN_SECONDS = 30.0  # how long an ended pool's threads get to exit; they normally take microseconds


def _bm25_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith(POOL)}


def _still_alive(threads: set[threading.Thread]) -> list[str]:
    for t in threads:
        t.join(JOIN_SECONDS)
    return sorted(t.name for t in threads if t.is_alive())


def _hits(result: SearchResult) -> list[tuple[int, float, float, float]]:
    return [(h.chunk.id, h.score, h.dense, h.lexical) for h in result.hits]


async def _loaded(db: Database, embedder: Embedder, *, overlap: bool = True) -> KnowledgeBase:
    kb = KnowledgeBase(db, embedder=embedder, overlap_lexical=overlap, retrieval_cache_size=0)
    await kb.load()
    assert kb.status().state == "ready"
    return kb


async def test_closing_the_services_ends_the_bm25_threads(
    make_server_services: Callable[..., Services],
) -> None:
    services = await ready(make_server_services())
    closed = False
    try:
        before = _bm25_threads()
        # a cold query: its BM25 runs on the pool beside the embedding, which starts the pool's threads
        await services.kb.search("how do I prepare for a panel interview", top_k=3, candidates=12)
        started = _bm25_threads() - before
        assert started, "the cold search did not use the BM25 worker pool"
        await services.aclose()
        closed = True
        assert _still_alive(started) == []
    finally:
        if not closed:
            await services.aclose()


async def test_a_search_after_close_works_without_the_pool(
    make_services: Callable[..., Services], embedder: Embedder
) -> None:
    database = make_services().db  # the bundled corpus, ingested
    kb = await _loaded(database, embedder)
    sequential = await _loaded(database, embedder, overlap=False)
    await kb.search("怎麼談薪水", top_k=3, candidates=12)  # the pool exists and has run
    kb.close()
    kb.close()  # twice: the app may close what a failed start-up already closed
    before = _bm25_threads()
    where = record_lexical_threads(kb)
    query = "what should I ask at the end of an interview"  # cold: not in the embedding cache
    after = await kb.search(query, top_k=3, candidates=12)
    assert len(where) == 1 and not where[0].startswith(POOL)  # BM25 ran after the embedding, in place
    assert kb._lexical_pool is None and _bm25_threads() - before == set()  # no pool made again
    assert after.hits and _hits(after) == _hits(await sequential.search(query, top_k=3, candidates=12))


@pytest.mark.timeout(60)  # a close that waited for the search below would never return: fail, not hang
async def test_a_search_running_at_close_still_gets_its_scores(
    make_services: Callable[..., Services], embedder: Embedder
) -> None:
    database = make_services().db
    kb = await _loaded(database, embedder)
    sequential = await _loaded(database, embedder, overlap=False)
    query = "how do I negotiate a remote job offer"
    before = _bm25_threads()
    index = kb.index
    assert index is not None
    entered, release = threading.Event(), threading.Event()
    scores = index.lexical_scores

    def held(query: str) -> npt.NDArray[np.float32]:
        entered.set()
        release.wait()
        return scores(query)

    index.lexical_scores = held  # type: ignore[method-assign]
    search = asyncio.create_task(kb.search(query, top_k=3, candidates=12))
    try:
        assert await asyncio.to_thread(entered.wait, JOIN_SECONDS)  # its BM25 is running on the pool
        pool_threads = _bm25_threads() - before
        assert pool_threads
        kb.close()  # returns while that BM25 is still held: it does not wait for it
        assert not search.done()
    finally:
        release.set()
    result = await search  # the scores, not a CancelledError: queued work is not cancelled by close
    assert result.hits and _hits(result) == _hits(await sequential.search(query, top_k=3, candidates=12))
    assert _still_alive(pool_threads) == []
