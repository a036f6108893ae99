"""knowledge: each document's titles embedded on their own, for the ranking

``documents.alt_title`` is the title in the knowledge base's other language (front matter ``alt_title``,
empty when the document has none); ``documents.title_vectors`` holds the vectors of the title and the
alt title (float32 rows, the title's first: ``careerwise.knowledge.titles``) and ``title_model`` the
embedding model that made them. The search ranks a document written in one language higher for a
question in the other when its title in the question's language matches; the chunks' vectors and the
relevance gate do not use them.

Nothing is filled here (the vectors come from the embedding model, which a migration must not load):
the bundled articles are re-ingested at the next start (their content hash includes ``alt_title``), and
the knowledge base's load embeds the titles of every other document that has no vectors from its model
and writes them back.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-03 08:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("documents") as batch:
        batch.add_column(sa.Column("alt_title", sa.String(length=300), nullable=False, server_default=""))
        batch.add_column(sa.Column("title_vectors", sa.LargeBinary(), nullable=True))
        batch.add_column(sa.Column("title_model", sa.String(length=40), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("documents") as batch:
        batch.drop_column("title_model")
        batch.drop_column("title_vectors")
        batch.drop_column("alt_title")
