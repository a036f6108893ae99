"""assistant profiles: description, system prompt (persona), knowledge domains, enabled flag, who updated

Summer's row keeps an empty system prompt (the built-in prompts) and every domain, so she ships as before.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-30 04:10:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # plain ADD COLUMN with constant defaults, no batch mode: on SQLite a batch rebuild drops and recreates
    # the table, and with foreign keys on, dropping it would cascade-delete every assistant's settings
    op.add_column("assistants", sa.Column("description", sa.Text(), nullable=False, server_default=""))
    op.add_column("assistants", sa.Column("system_prompt", sa.Text(), nullable=False, server_default=""))
    op.add_column(
        "assistants", sa.Column("knowledge_domains", sa.JSON(), nullable=False, server_default="[]")
    )
    op.add_column("assistants", sa.Column("enabled", sa.Boolean(), nullable=False, server_default=sa.true()))
    op.add_column("assistants", sa.Column("updated_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("assistants", sa.Column("updated_by", sa.String(length=120), nullable=True))


def downgrade() -> None:
    for column in (
        "updated_by",
        "updated_at",
        "enabled",
        "knowledge_domains",
        "system_prompt",
        "description",
    ):
        op.drop_column("assistants", column)
