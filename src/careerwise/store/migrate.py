"""Migrations: the database is brought to the newest schema (Alembic's ``head``, store/migrations/)
before a process serves, through the synchronous driver of the same URL. Upgrading is idempotent, so
every process may run it at start-up; Alembic is imported only by a process that migrates."""

from __future__ import annotations

from pathlib import Path

from careerwise.store.engines import sync_url

_MIGRATIONS = Path(__file__).parent / "migrations"


def upgrade(url: str) -> None:
    """Brings the database at ``url`` to the newest migration (nothing to do when it is there)."""
    # imported here: Alembic's memory is needed only by a process that migrates
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(_MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", sync_url(url).replace("%", "%%"))
    command.upgrade(cfg, "head")
