"""shared rate limits — placeholder, filled in by the rate-limit work

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-30 04:10:00
"""

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
