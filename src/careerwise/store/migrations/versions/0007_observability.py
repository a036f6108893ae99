"""observability: feedback on answers, LLM call spans

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30 01:00:00

``trace_spans``: every part of a turn on one timeline (routing, LLM calls, tool calls, degradations,
errors). ``feedback``: thumbs up/down on an answer, one per message. ``assistant_id`` on traces and
conversations: every turn belongs to an assistant; existing rows get "summer", the one that ships.
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "trace_spans",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("trace_id", sa.String(length=32), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=160), nullable=False),
        sa.Column("start_ms", sa.Float(), nullable=False),
        sa.Column("duration_ms", sa.Float(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attributes", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["trace_id"], ["traces.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_trace_spans_trace_id", "trace_spans", ["trace_id"])
    op.create_table(
        "feedback",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("message_id", sa.String(length=32), nullable=False),
        sa.Column("conversation_id", sa.String(length=32), nullable=False),
        sa.Column("trace_id", sa.String(length=32), nullable=True),
        sa.Column("assistant_id", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=True),
        sa.Column("rating", sa.String(length=8), nullable=False),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["message_id"], ["messages.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversations.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("message_id", name="uq_feedback_message_id"),
    )
    for column in ("conversation_id", "trace_id", "assistant_id", "user_id", "created_at"):
        op.create_index(f"ix_feedback_{column}", "feedback", [column])
    # ADD COLUMN with a constant default works in place on SQLite and PostgreSQL (no table rebuild);
    # every existing row is Summer's
    for table in ("traces", "conversations"):
        op.add_column(
            table,
            sa.Column("assistant_id", sa.String(length=64), nullable=False, server_default="summer"),
        )
        op.create_index(f"ix_{table}_assistant_id", table, ["assistant_id"])


def downgrade() -> None:
    for table in ("conversations", "traces"):
        op.drop_index(f"ix_{table}_assistant_id", table_name=table)
        with op.batch_alter_table(table) as batch:  # SQLite: DROP COLUMN through a table copy if needed
            batch.drop_column("assistant_id")
    for column in ("created_at", "user_id", "assistant_id", "trace_id", "conversation_id"):
        op.drop_index(f"ix_feedback_{column}", table_name="feedback")
    op.drop_table("feedback")
    op.drop_index("ix_trace_spans_trace_id", table_name="trace_spans")
    op.drop_table("trace_spans")
