"""bookings: whether the coach's hours were confirmed (else the shipped defaults apply), a booking's topic

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-02 08:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "booking_settings", sa.Column("hours_confirmed_at", sa.DateTime(timezone=True), nullable=True)
    )
    op.add_column("bookings", sa.Column("topic", sa.String(length=200), nullable=True))
    # a coach whose weekly hours were set before this migration has chosen them: they stay as they are
    op.execute(
        "UPDATE booking_settings SET hours_confirmed_at = updated_at WHERE EXISTS "
        "(SELECT 1 FROM availability_windows w WHERE w.coach_id = booking_settings.coach_id)"
    )


def downgrade() -> None:
    op.drop_column("bookings", "topic")
    op.drop_column("booking_settings", "hours_confirmed_at")
