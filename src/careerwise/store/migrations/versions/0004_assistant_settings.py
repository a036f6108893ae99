"""assistants, per-assistant settings overrides and their audit log

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29 23:00:00
"""

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "assistants",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "assistant_settings",
        sa.Column("assistant_id", sa.String(length=64), nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("value", sa.JSON(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_by", sa.String(length=120), nullable=False),
        sa.ForeignKeyConstraint(["assistant_id"], ["assistants.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("assistant_id", "key"),
    )
    op.create_table(
        "settings_audit",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("assistant_id", sa.String(length=64), nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("old_value", sa.JSON(), nullable=True),
        sa.Column("new_value", sa.JSON(), nullable=True),
        sa.Column("changed_by", sa.String(length=120), nullable=False),
        sa.Column("changed_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_settings_audit_assistant_id", "settings_audit", ["assistant_id"])
    assistants = sa.table(
        "assistants",
        sa.column("id", sa.String),
        sa.column("name", sa.String),
        sa.column("created_at", sa.DateTime(timezone=True)),
    )
    op.bulk_insert(assistants, [{"id": "summer", "name": "Summer", "created_at": datetime.now(UTC)}])


def downgrade() -> None:
    op.drop_index("ix_settings_audit_assistant_id", table_name="settings_audit")
    op.drop_table("settings_audit")
    op.drop_table("assistant_settings")
    op.drop_table("assistants")
