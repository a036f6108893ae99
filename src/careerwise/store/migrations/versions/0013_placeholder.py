"""knowledge storage (vectors stored inline, cached tokens) — placeholder, filled in by the search work

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-30 04:10:00
"""

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
