"""token usage per owner per day (the daily token budget)

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-30 02:30:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "token_usage",
        sa.Column("owner", sa.String(length=80), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("tokens", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("owner", "day"),
    )


def downgrade() -> None:
    op.drop_table("token_usage")
