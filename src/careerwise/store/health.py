"""Whether the database answers, and what a failure of it means to a caller: the API answers a busy
database with 503 and ``Retry-After`` (api/errors.py) and a broken one with 500."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from careerwise.store.db import Database

__all__ = ["DatabaseOperationalError", "is_database_locked", "ping"]

# the driver's operational failures (locked, gone, refused), as SQLAlchemy raises them
DatabaseOperationalError = OperationalError

_LOCKED = ("database is locked", "database table is locked", "the database is busy")


def is_database_locked(exc: OperationalError) -> bool:
    """SQLite's "database is locked" past ``busy_timeout``, or this process's write lock given up on
    (store/serial.py ``_WriteLock``): the database is busy, not broken."""
    message = f"{exc.orig} {exc}".lower()
    return any(marker in message for marker in _LOCKED)


async def ping(db: Database) -> str:
    """Runs ``SELECT 1``; returns the database's dialect name (``sqlite``, ``postgresql``)."""
    async with db.session() as s:
        await s.execute(text("SELECT 1"))
    return db.engine.dialect.name
