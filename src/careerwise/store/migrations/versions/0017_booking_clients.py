"""bookings: the client (IP or LINE user) that made each booking, for the per-client booking limits

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-02 04:40:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # NULL for bookings made before: they count against nobody's limit
    op.add_column("bookings", sa.Column("client_key", sa.String(length=80), nullable=True))
    op.create_index("ix_bookings_client_key", "bookings", ["client_key"])


def downgrade() -> None:
    op.drop_index("ix_bookings_client_key", table_name="bookings")
    op.drop_column("bookings", "client_key")
