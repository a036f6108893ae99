"""PostgreSQL for the integration tests: one throwaway server per session (tests/pg.py), the bundled
corpus ingested into a template database once, and a fresh copy of it for each test.

A test runs on both backends by taking the ``db_overrides`` fixture (parametrized sqlite/postgresql)
*before* ``make_services`` or ``live_server`` and passing it on: ``make_services(**db_overrides)``.
If PostgreSQL cannot start, the PostgreSQL tests fail; they are never skipped.
``CAREERWISE_TEST_POSTGRES_URL`` (a superuser URL on a server with pgvector) replaces the started
server, e.g. to run the tests against another PostgreSQL version.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from sqlalchemy.engine import make_url

from careerwise.knowledge.chunking import embedding_text
from careerwise.knowledge.embeddings import Embedder, Matrix
from careerwise.knowledge.ingest import ingest_paths
from careerwise.knowledge.service import BUNDLED_CORPUS
from careerwise.store import Database
from tests.pg import server_for, start_postgres, stop_postgres

PG_TIMINGS: dict[str, float] = {}  # shown at the end of the run


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if PG_TIMINGS:
        shown = ", ".join(f"{k} {v:.2f} s" for k, v in PG_TIMINGS.items())
        terminalreporter.write_line(f"PostgreSQL for tests: {shown}")


def with_database(url: str, name: str) -> str:
    return make_url(url).set(database=name).render_as_string(hide_password=False)


def admin_connection(url: str) -> psycopg.Connection[Any]:
    """An autocommit psycopg connection to the server's ``postgres`` database (CREATE/DROP DATABASE)."""
    u = make_url(url)
    return psycopg.connect(
        host=u.host,
        port=u.port,
        user=u.username,
        password=u.password,
        dbname="postgres",
        autocommit=True,
    )


@pytest.fixture(scope="session")
def pg_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The server's URL (``postgresql+asyncpg://…/postgres``): started for this session."""
    external = os.environ.get("CAREERWISE_TEST_POSTGRES_URL")
    if external:
        yield Database(external).url
        return
    url = start_postgres(tmp_path_factory.mktemp("postgres"))
    PG_TIMINGS.update({f"server {k.removesuffix('_s')}": v for k, v in server_for(url).timings.items()})
    yield url
    stop_postgres(url)


class ReusingEmbedder:
    """The real embedder, except that passages embedded already (for the SQLite corpus) are not
    embedded twice: the model is deterministic, and on a 2-core machine the corpus takes a minute or two."""

    def __init__(self, inner: Embedder, known: dict[str, Matrix]) -> None:
        self.inner, self.known = inner, known
        self.name, self.dim = inner.name, inner.dim
        self.reused = 0

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        missing = [t for t in texts if t not in self.known]
        if missing:
            self.known.update(zip(missing, self.inner.embed_passages(missing), strict=True))
        self.reused += len(texts) - len(missing)
        return np.vstack([self.known[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)


def _known_passages(corpus_db: Path) -> dict[str, Matrix]:
    with closing(sqlite3.connect(corpus_db)) as conn:
        rows = conn.execute("SELECT title, section, text, embedding FROM chunks").fetchall()
    return {embedding_text(t, s, x): np.frombuffer(e, dtype=np.float32) for t, s, x, e in rows}


@pytest.fixture(scope="session")
def pg_corpus_template(pg_url: str, embedder: Embedder, corpus_db: Path) -> Iterator[str]:
    """A database migrated and holding the bundled corpus (ingested through ``ingest_paths``, as on
    SQLite), built once; tests get copies of it."""
    started = time.perf_counter()
    name = f"corpus_{uuid.uuid4().hex[:12]}"
    with admin_connection(pg_url) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    db = Database(with_database(pg_url, name))
    db.migrate()
    reusing = ReusingEmbedder(embedder, _known_passages(corpus_db))

    async def run() -> None:
        try:
            report = await ingest_paths(db, reusing, [BUNDLED_CORPUS])
            assert not report.failed and report.chunks_written > 100, report
        finally:
            await db.dispose()

    asyncio.run(run())
    PG_TIMINGS["corpus template (migrate + ingest)"] = time.perf_counter() - started
    yield name
    with admin_connection(pg_url) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _create_database(pg_url: str, template: str | None) -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex[:16]}"
    started = time.perf_counter()
    with admin_connection(pg_url) as conn:
        conn.execute(f"CREATE DATABASE {name}" + (f" TEMPLATE {template}" if template else ""))
    if template:
        PG_TIMINGS["copy of the corpus database (last)"] = time.perf_counter() - started
    yield with_database(pg_url, name)
    with admin_connection(pg_url) as conn:
        # everything that used it has been closed by now (fixtures close in reverse order)
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def pg_database(pg_url: str, pg_corpus_template: str) -> Iterator[str]:
    """A fresh database with the bundled corpus ingested (a copy of the template)."""
    yield from _create_database(pg_url, pg_corpus_template)


@pytest.fixture
def pg_empty_database(pg_url: str) -> Iterator[str]:
    """A fresh, empty database (not migrated)."""
    yield from _create_database(pg_url, None)


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A migrated, empty database on each backend: a file in the test's folder for SQLite, a fresh
    database for PostgreSQL."""
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}"
    else:
        url = request.getfixturevalue("pg_empty_database")
    Database(url).migrate()
    return url


@pytest.fixture(params=["sqlite", "postgresql"])
def db_overrides(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Settings overrides for the backend under test: nothing for SQLite (the default), a fresh
    PostgreSQL database with the corpus for PostgreSQL."""
    if request.param == "sqlite":
        return {}
    return {"database_url": request.getfixturevalue("pg_database")}
