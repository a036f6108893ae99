"""bookings: consultation availability and bookings

Availability (per coach: settings, weekly windows, dated exceptions), bookings and the chat's booking
dialogue state. ``uq_bookings_active_slot`` is a *partial* unique index (only rows with status
'active'): the same statement works on SQLite and PostgreSQL, and a cancelled slot can be booked
again. See docs/bookings.md for why not an exclusion constraint.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-30 01:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

ACTIVE_ONLY = sa.text("status = 'active'")


def upgrade() -> None:
    op.create_table(
        "booking_settings",
        sa.Column("coach_id", sa.String(length=64), nullable=False),
        sa.Column("slot_minutes", sa.Integer(), nullable=False),
        sa.Column("timezone", sa.String(length=64), nullable=False),
        sa.Column("horizon_days", sa.Integer(), nullable=False),
        sa.Column("min_notice_minutes", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_by", sa.String(length=120), nullable=False),
        sa.PrimaryKeyConstraint("coach_id"),
    )
    op.create_table(
        "availability_windows",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("coach_id", sa.String(length=64), nullable=False),
        sa.Column("weekday", sa.Integer(), nullable=False),
        sa.Column("start_minute", sa.Integer(), nullable=False),
        sa.Column("end_minute", sa.Integer(), nullable=False),
        sa.CheckConstraint("weekday BETWEEN 0 AND 6", name="ck_availability_windows_weekday"),
        sa.CheckConstraint(
            "start_minute >= 0 AND end_minute <= 1440 AND start_minute < end_minute",
            name="ck_availability_windows_range",
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_availability_windows_coach_id", "availability_windows", ["coach_id"])
    op.create_table(
        "availability_exceptions",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("coach_id", sa.String(length=64), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("start_minute", sa.Integer(), nullable=True),
        sa.Column("end_minute", sa.Integer(), nullable=True),
        sa.Column("note", sa.String(length=200), nullable=False),
        sa.CheckConstraint("kind IN ('closed', 'extra')", name="ck_availability_exceptions_kind"),
        sa.CheckConstraint(
            "(start_minute IS NULL AND end_minute IS NULL AND kind = 'closed') OR "
            "(start_minute >= 0 AND end_minute <= 1440 AND start_minute < end_minute)",
            name="ck_availability_exceptions_range",
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_availability_exceptions_coach_id", "availability_exceptions", ["coach_id"])
    op.create_table(
        "bookings",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("coach_id", sa.String(length=64), nullable=False),
        sa.Column("slot_start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("slot_end", sa.DateTime(timezone=True), nullable=False),
        sa.Column("user_id", sa.String(length=64), nullable=True),
        sa.Column("conversation_id", sa.String(length=32), nullable=True),
        sa.Column("name", sa.String(length=80), nullable=False),
        sa.Column("contact", sa.String(length=254), nullable=False),
        sa.Column("contact_kind", sa.String(length=8), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("channel", sa.String(length=20), nullable=False),
        sa.Column("idempotency_key", sa.String(length=200), nullable=True),
        sa.Column("request_hash", sa.String(length=64), nullable=True),
        sa.Column("origin_id", sa.String(length=32), nullable=False),
        sa.Column("rescheduled_from", sa.String(length=32), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("status IN ('active', 'cancelled', 'rescheduled')", name="ck_bookings_status"),
        sa.CheckConstraint("slot_end > slot_start", name="ck_bookings_slot_order"),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversations.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "uq_bookings_active_slot",
        "bookings",
        ["coach_id", "slot_start"],
        unique=True,
        sqlite_where=ACTIVE_ONLY,
        postgresql_where=ACTIVE_ONLY,
    )
    op.create_index("uq_bookings_idempotency_key", "bookings", ["idempotency_key"], unique=True)
    op.create_index("ix_bookings_user_id", "bookings", ["user_id"])
    op.create_index("ix_bookings_conversation_id", "bookings", ["conversation_id"])
    op.create_index("ix_bookings_origin_id", "bookings", ["origin_id"])
    op.create_table(
        "booking_dialogues",
        sa.Column("conversation_id", sa.String(length=32), nullable=False),
        sa.Column("step", sa.String(length=20), nullable=False),
        sa.Column("lang", sa.String(length=5), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("nonce", sa.String(length=32), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversations.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("conversation_id"),
    )


def downgrade() -> None:
    op.drop_table("booking_dialogues")
    for index in (
        "ix_bookings_origin_id",
        "ix_bookings_conversation_id",
        "ix_bookings_user_id",
        "uq_bookings_idempotency_key",
        "uq_bookings_active_slot",
    ):
        op.drop_index(index, table_name="bookings")
    op.drop_table("bookings")
    op.drop_index("ix_availability_exceptions_coach_id", table_name="availability_exceptions")
    op.drop_table("availability_exceptions")
    op.drop_index("ix_availability_windows_coach_id", table_name="availability_windows")
    op.drop_table("availability_windows")
    op.drop_table("booking_settings")
