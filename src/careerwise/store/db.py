"""The async database handle and migrations on start."""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

log = logging.getLogger(__name__)
_MIGRATIONS = Path(__file__).parent / "migrations"


# PostgreSQL URLs without an async driver get asyncpg (``postgres://`` is what many hosts hand out)
_ASYNC_DRIVERS = {
    "postgres": "postgresql+asyncpg",
    "postgresql": "postgresql+asyncpg",
    "postgresql+psycopg2": "postgresql+asyncpg",
}
_SYNC_DRIVERS = {
    "sqlite+aiosqlite": "sqlite",
    "postgresql+asyncpg": "postgresql+psycopg",
    "postgresql+psycopg_async": "postgresql+psycopg",
}


def async_url(url: str) -> str:
    """The URL the app's async engine uses: PostgreSQL through asyncpg unless an async driver is named."""
    u = make_url(url)
    driver = _ASYNC_DRIVERS.get(u.drivername)
    return u.set(drivername=driver).render_as_string(hide_password=False) if driver else url


def sync_url(url: str) -> str:
    """The URL Alembic (and the pgvector index, from worker threads) uses: the same database through a
    synchronous driver (PostgreSQL: psycopg 3)."""
    u = make_url(async_url(url))
    driver = _SYNC_DRIVERS.get(u.drivername)
    return u.set(drivername=driver).render_as_string(hide_password=False) if driver else url


def _sqlite_pragmas(dbapi_connection: object, _record: object) -> None:
    cursor = dbapi_connection.cursor()  # type: ignore[attr-defined]
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=5000")
    # WAL + NORMAL: a commit is durable against a process crash; only an OS crash can lose the last one
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def upgrade(url: str) -> None:
    cfg = Config()
    cfg.set_main_option("script_location", str(_MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", sync_url(url).replace("%", "%%"))
    command.upgrade(cfg, "head")


class Database:
    def __init__(self, url: str) -> None:
        url = async_url(url)
        self.url = url
        if url.startswith("sqlite"):
            path = make_url(url).database
            if path and path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.engine = create_async_engine(url, pool_pre_ping=True)
        if url.startswith("sqlite"):
            sync_engine: Engine = self.engine.sync_engine
            event.listen(sync_engine, "connect", _sqlite_pragmas)
        self.sessions = async_sessionmaker(self.engine, expire_on_commit=False)
        self._blocking_engine: Engine | None = None
        self._blocking_lock = threading.Lock()

    @property
    def is_postgresql(self) -> bool:
        return self.engine.dialect.name == "postgresql"

    def blocking_engine(self) -> Engine:
        """A synchronous engine on the same database, for code that runs in worker threads (the
        pgvector search index); created on first use, disposed with the database."""
        with self._blocking_lock:
            if self._blocking_engine is None:
                self._blocking_engine = create_engine(sync_url(self.url), pool_pre_ping=True)
            return self._blocking_engine

    def migrate(self) -> None:
        upgrade(self.url)

    @asynccontextmanager
    async def session(self) -> AsyncIterator[AsyncSession]:
        async with self.sessions() as session:
            yield session

    async def dispose(self) -> None:
        await self.engine.dispose()
        with self._blocking_lock:
            blocking, self._blocking_engine = self._blocking_engine, None
        if blocking is not None:
            blocking.dispose()
