"""one reply being written per conversation, enforced by a partial unique index

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-30 02:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # migrations run before any process serves: a reply still 'pending' now was interrupted by a stop
    op.execute("UPDATE messages SET status = 'error' WHERE status = 'pending'")
    op.create_index(
        "uq_messages_one_pending",
        "messages",
        ["conversation_id"],
        unique=True,
        sqlite_where=sa.text("status = 'pending'"),
        postgresql_where=sa.text("status = 'pending'"),
    )


def downgrade() -> None:
    op.drop_index("uq_messages_one_pending", table_name="messages")
