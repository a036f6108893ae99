"""messages: a report answer's structure (title, sections with their risk levels and sources) as JSON

The conversation view reads a report's sections from ``messages.report``. Reports stored before this
migration keep it NULL: their sections are still read from the message's Markdown text.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-02 16:10:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("messages") as batch:
        batch.add_column(sa.Column("report", sa.JSON(none_as_null=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("messages") as batch:
        batch.drop_column("report")
