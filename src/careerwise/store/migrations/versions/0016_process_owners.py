"""the app process that owns a pending reply or a received LINE event, for start-up recovery

``app_processes`` holds one row per start of an app process (its boot id, host, pid, a start token and a
heartbeat); ``messages.process_id`` and ``line_events.process_id`` name the process that wrote a pending
reply or is answering a received event, and ``line_events.payload`` keeps such an event as LINE sent it
so another process can answer it (careerwise.store.recovery). Rows written before this migration have
no owner and are judged by their age, as before.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-02 04:30:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "app_processes",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("host", sa.String(length=200), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("start_token", sa.String(length=80), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("stopped_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_app_processes_heartbeat_at", "app_processes", ["heartbeat_at"])
    with op.batch_alter_table("messages") as batch:
        batch.add_column(sa.Column("process_id", sa.String(length=32), nullable=True))
    with op.batch_alter_table("line_events") as batch:
        batch.add_column(sa.Column("process_id", sa.String(length=32), nullable=True))
        batch.add_column(sa.Column("payload", sa.JSON(), nullable=True))
    op.create_index(
        "ix_line_events_received",
        "line_events",
        ["process_id"],
        sqlite_where=sa.text("status = 'received'"),
        postgresql_where=sa.text("status = 'received'"),
    )


def downgrade() -> None:
    op.drop_index("ix_line_events_received", table_name="line_events")
    with op.batch_alter_table("line_events") as batch:
        batch.drop_column("payload")
        batch.drop_column("process_id")
    with op.batch_alter_table("messages") as batch:
        batch.drop_column("process_id")
    op.drop_index("ix_app_processes_heartbeat_at", table_name="app_processes")
    op.drop_table("app_processes")
