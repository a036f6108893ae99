"""PostgreSQL: language-centred chunk vectors in their own column and HNSW index, and the means used

The ranking scores a chunk by the cosine between its language-centred vector (``p - m_L``, ``m_L`` the
mean passage vector of its language) and the centred query (``careerwise.knowledge.embeddings.
LanguageCentering``). Before this migration the HNSW index held the raw vectors, so above
``exact_up_to`` chunks its nearest neighbours were taken by another order than the score's
(docs/benchmarks.md, "PostgreSQL HNSW depth at 100k"). Now:

* ``chunks.centred_vec`` holds ``embedding_vec - m_L`` (not normalised: ``vector_cosine_ops`` and
  ``<=>`` normalise), inline like ``embedding_vec`` (0013), with its own HNSW index (cosine);
* ``chunks.centring_lang`` is the language whose mean was subtracted (``detect_lang`` of title and text,
  as the index computes it), so the column can be recomputed in SQL;
* ``knowledge_centring`` keeps the means: one row per (embedding model, language) with the mean, the
  chunks it was computed from and when. The index scores with these, so column, query and score agree.

Nothing is filled here (the language comes from application code, which a migration must not import):
rows without a centred vector are filled when the knowledge base loads or at the next ingest
(``careerwise.knowledge.pg_index.sync_centring``; decision 0011). On SQLite this does nothing: the
in-process index centres its vectors in memory.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-30 13:20:00
"""

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

# fixed here, not imported: a migration must keep meaning what it meant when it was written
DIM = 384
COLUMN = "centred_vec"
LANG = "centring_lang"
INDEX = "ix_chunks_centred_vec_hnsw"
TABLE = "knowledge_centring"


def _postgresql() -> bool:
    return op.get_bind().dialect.name == "postgresql"


def upgrade() -> None:
    if not _postgresql():
        return
    op.execute(f"ALTER TABLE chunks ADD COLUMN IF NOT EXISTS {COLUMN} vector({DIM})")
    op.execute(f"ALTER TABLE chunks ALTER COLUMN {COLUMN} SET STORAGE PLAIN")
    op.execute(f"ALTER TABLE chunks ADD COLUMN IF NOT EXISTS {LANG} varchar(8)")
    op.execute(
        f"CREATE TABLE IF NOT EXISTS {TABLE} ("
        " embedding_model varchar(64) NOT NULL,"
        " lang varchar(8) NOT NULL,"
        f" mean vector({DIM}) NOT NULL,"
        " chunks integer NOT NULL,"
        " computed_at timestamptz NOT NULL,"
        " PRIMARY KEY (embedding_model, lang))"
    )
    op.execute(f"CREATE INDEX IF NOT EXISTS {INDEX} ON chunks USING hnsw ({COLUMN} vector_cosine_ops)")


def downgrade() -> None:
    if not _postgresql():
        return
    op.execute(f"DROP INDEX IF EXISTS {INDEX}")
    op.execute(f"DROP TABLE IF EXISTS {TABLE}")
    op.execute(f"ALTER TABLE chunks DROP COLUMN IF EXISTS {LANG}")
    op.execute(f"ALTER TABLE chunks DROP COLUMN IF EXISTS {COLUMN}")
