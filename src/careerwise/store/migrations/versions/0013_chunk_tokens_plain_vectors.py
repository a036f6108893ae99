"""knowledge storage: BM25 tokens stored with each chunk; PostgreSQL keeps vectors inline

``chunks.lexical_tokens`` holds the chunk's BM25 tokens (``careerwise.knowledge.lexical.token_string``:
jieba over the Simplified conversion, space separated). Ingest writes them; rows from before this
migration have NULL and are tokenized once, at the next load, and written back. Loading 100k chunks
then no longer runs jieba over all of them (about 80 s at 100k chunks, docs/retrieval.md).

PostgreSQL only: ``embedding_vec`` gets ``STORAGE PLAIN``. A vector(384) is 1.5 kB, under the page
size, but with the text and the float32 copy in ``embedding`` a row passes TOAST's 2 kB threshold and
PostgreSQL moved the vector out of line: every exact scan paid a TOAST lookup per row, which
keeping it inline avoids. The other wide columns stay EXTENDED, so they are the ones moved out
and the heap row stays small. ``SET STORAGE`` only applies to values written afterwards, so the
existing vectors are rewritten once.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-30 04:10:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

# fixed here, not imported: a migration must keep meaning what it meant when it was written
COLUMN = "lexical_tokens"
VECTOR = "embedding_vec"


def _postgresql() -> bool:
    return op.get_bind().dialect.name == "postgresql"


def upgrade() -> None:
    op.add_column("chunks", sa.Column(COLUMN, sa.Text(), nullable=True))
    if _postgresql():
        # EXTENDED -> PLAIN: a bytea/vector of 1.5 kB fits a page; the text column stays compressible
        op.execute(f"ALTER TABLE chunks ALTER COLUMN {VECTOR} SET STORAGE PLAIN")
        # an unchanged value keeps its TOAST pointer on UPDATE: rebuild it (float4[] round-trips exactly)
        op.execute(
            f"UPDATE chunks SET {VECTOR} = CAST(CAST({VECTOR} AS real[]) AS vector) WHERE {VECTOR} IS NOT NULL"
        )


def downgrade() -> None:
    if _postgresql():
        op.execute(f"ALTER TABLE chunks ALTER COLUMN {VECTOR} SET STORAGE EXTENDED")
    with op.batch_alter_table("chunks") as batch:
        batch.drop_column(COLUMN)
