"""PostgreSQL's search step as it was until session 7, kept as the reference for the one that replaced it
(``PgVectorIndex._fetch_scores``: one pipelined round trip): tests/integration/test_pg_search_path.py
checks that today's search gives its hits (exact scan and HNSW, with domain filters).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Self

from sqlalchemy import bindparam, text
from sqlalchemy.engine import Engine

from careerwise.knowledge.embeddings import Vector
from careerwise.knowledge.index import SearchResult
from careerwise.knowledge.pg_index import PgVectorIndex, vector_literal


class PgIndexView(PgVectorIndex):
    """A loaded ``PgVectorIndex`` whose dense step (``_similarities``) a subclass runs another way:
    ``of`` shares the loaded index's state rather than loading again (a 100k index takes minutes)."""

    @classmethod
    def of(cls, pg: PgVectorIndex) -> Self:
        view = cls.__new__(cls)
        view.__dict__.update(pg.__dict__)
        return view


def _no_lap(_: str) -> None:
    return None


class TwoStatementIndex(PgIndexView):
    """The search step until session 7: a SQLAlchemy transaction (``BEGIN``), the settings (HNSW path),
    the statement for the nearest chunks (or every chunk's score), then the BM25 extras that statement
    did not return, by id, then ``COMMIT``.

    ``pre_ping``: also the ``SELECT 1`` that SQLAlchemy's ``pool_pre_ping`` sent at every checkout of
    the blocking engine until then (the bench's baseline; off for the tests, which compare hits only)."""

    pre_ping = False

    def _similarities(
        self, q: Vector, domains: Sequence[str] | None, depth: int | None, extra_ids: list[int]
    ) -> dict[int, float]:
        with self._engine.begin() as conn:
            if self.pre_ping:
                ping(self._engine, conn)
            return self.two_statements(conn, vector_literal(q), domains, depth, extra_ids)

    def two_statements(
        self,
        conn: Any,
        lit: str,
        domains: Sequence[str] | None,
        depth: int | None,
        extra_ids: list[int],
        *,
        lap: Callable[[str], None] = _no_lap,
    ) -> dict[int, float]:
        """The statements, on ``conn`` (inside its transaction); ``lap`` is called after each step with
        the step's name, for a caller that times them."""
        if depth is not None:
            self._tune(conn, depth)  # psycopg sends BEGIN before it: two round trips
        lap("BEGIN + settings")
        params: dict[str, object] = {"q": lit, "model": self.embedding_model}
        if domains:
            params["domains"] = list(domains)
        if depth is not None:
            params["depth"] = depth
        stmt = text(self.nearest_sql(filtered=bool(domains), depth=depth))
        if domains:
            stmt = stmt.bindparams(bindparam("domains", expanding=True))
        scores = {int(r.id): float(r.s) for r in conn.execute(stmt, params)}
        lap("HNSW statement")
        missing = [i for i in extra_ids if i not in scores]
        if missing:
            rows = conn.execute(text(self.extras_sql()), {"q": lit, "ids": missing})
            scores.update((int(r.id), float(r.s)) for r in rows)
        lap("extras statement")
        return scores

    def nearest_sql(self, *, filtered: bool, depth: int | None) -> str:
        """The first statement, in SQLAlchemy's ``:name`` style: every chunk's score (``depth`` None) or
        the ``depth`` nearest by the HNSW index; ``filtered``: within ``:domains`` (an expanding list)."""
        col = self.column
        where = f"embedding_model = :model AND {col} IS NOT NULL"
        if filtered:
            where += " AND domain IN :domains"
        select = f"SELECT id, {self._score_sql()} AS s FROM chunks WHERE {where}"
        if depth is None:
            return select
        return f"{select} ORDER BY {col} <=> CAST(:q AS vector) LIMIT :depth"

    def extras_sql(self) -> str:
        """The second statement: the scores of the chunks listed in ``:ids`` (BM25's best)."""
        return f"SELECT id, {self._score_sql()} AS s FROM chunks WHERE id = ANY(:ids) AND {self.column} IS NOT NULL"


def ping(engine: Engine, conn: Any) -> None:
    """The ``SELECT 1`` SQLAlchemy's ``pool_pre_ping`` sent at every checkout of the blocking engine
    until session 7 (it now pings only connections idle for 5 s, as the async pool does)."""
    engine.dialect.do_ping(conn.connection.dbapi_connection)


def hit_rows(result: SearchResult) -> list[tuple[int, float, float, float]]:
    """What two searches must agree on: each hit's chunk and its fused, dense and BM25 scores."""
    return [(h.chunk.id, h.score, h.dense, h.lexical) for h in result.hits]
