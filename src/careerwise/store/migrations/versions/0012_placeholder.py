"""assistants (per-assistant persona, prompts and settings) — placeholder, filled in by the assistants work

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-30 04:10:00
"""

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
