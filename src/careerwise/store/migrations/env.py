"""Alembic environment: migrations run through a synchronous driver."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool

from careerwise.store.models import Base

config = context.config
target_metadata = Base.metadata


def run_migrations_online() -> None:
    url = config.get_main_option("sqlalchemy.url")
    assert url is not None
    engine = create_engine(url, poolclass=pool.NullPool)
    with engine.connect() as connection:
        context.configure(
            connection=connection, target_metadata=target_metadata, render_as_batch=url.startswith("sqlite")
        )
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


run_migrations_online()
