"""resumes: stored resumes and their reviews

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-30 01:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "resumes",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("owner_key", sa.String(length=80), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=True),
        sa.Column("conversation_id", sa.String(length=32), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("filename", sa.String(length=255), nullable=True),
        sa.Column("kind", sa.String(length=10), nullable=False),
        sa.Column("pages", sa.Integer(), nullable=True),
        sa.Column("chars", sa.Integer(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("contact", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversations.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("owner_key", "version", name="uq_resumes_owner_version"),
    )
    op.create_index("ix_resumes_owner_key", "resumes", ["owner_key"])
    op.create_index("ix_resumes_user_id", "resumes", ["user_id"])
    op.create_index("ix_resumes_conversation_id", "resumes", ["conversation_id"])
    op.create_table(
        "resume_reviews",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("resume_id", sa.String(length=32), nullable=False),
        sa.Column("target_role", sa.String(length=200), nullable=True),
        sa.Column("scores", sa.JSON(), nullable=False),
        sa.Column("overall", sa.Float(), nullable=False),
        sa.Column("structure_source", sa.String(length=10), nullable=False),
        sa.Column("scoring_source", sa.String(length=10), nullable=False),
        sa.Column("degraded", sa.JSON(), nullable=False),
        sa.Column("report", sa.JSON(), nullable=False),
        sa.Column("trace_id", sa.String(length=32), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["resume_id"], ["resumes.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_resume_reviews_resume_id", "resume_reviews", ["resume_id"])
    op.create_index("ix_resume_reviews_trace_id", "resume_reviews", ["trace_id"])


def downgrade() -> None:
    op.drop_index("ix_resume_reviews_trace_id", table_name="resume_reviews")
    op.drop_index("ix_resume_reviews_resume_id", table_name="resume_reviews")
    op.drop_table("resume_reviews")
    op.drop_index("ix_resumes_conversation_id", table_name="resumes")
    op.drop_index("ix_resumes_user_id", table_name="resumes")
    op.drop_index("ix_resumes_owner_key", table_name="resumes")
    op.drop_table("resumes")
