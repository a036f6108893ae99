"""Alembic environment: migrations run through a synchronous driver."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool

from careerwise.store.models import Base

config = context.config
target_metadata = Base.metadata

# Made by migrations 0003 and 0015 on PostgreSQL only and not in the models: autogenerate must not
# drop them.
_PGVECTOR_OBJECTS = frozenset(
    {
        "embedding_vec",
        "ix_chunks_embedding_vec_hnsw",
        "centred_vec",
        "centring_lang",
        "ix_chunks_centred_vec_hnsw",
        "knowledge_centring",
    }
)


def _include_object(obj: object, name: str | None, type_: str, reflected: bool, compare_to: object) -> bool:
    return not (reflected and compare_to is None and name in _PGVECTOR_OBJECTS)


def run_migrations_online() -> None:
    url = config.get_main_option("sqlalchemy.url")
    assert url is not None
    engine = create_engine(url, poolclass=pool.NullPool)
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            render_as_batch=url.startswith("sqlite"),
            include_object=_include_object,
        )
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


run_migrations_online()
