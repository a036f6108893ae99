"""tool calls stored once: the tool_calls table goes, the turn's tool_call/tool_result events stay

Every turn stored a tool call three times: its event rows, a ``tool_calls`` row and its span's attributes.
The event rows are the copy every reader now reads (store/traces.py); each ``tool_calls`` row repeated
them, so dropping the table loses nothing a reader shows. The downgrade rebuilds the table from the
event rows, so the code before this migration reads the same tool calls.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-02 17:00:00
"""

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tool_calls", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_tool_calls_trace_id"))
    op.drop_table("tool_calls")


def downgrade() -> None:
    tool_calls = op.create_table(
        "tool_calls",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("trace_id", sa.String(length=32), nullable=False),
        sa.Column("call_id", sa.String(length=80), nullable=False),
        sa.Column("name", sa.String(length=80), nullable=False),
        sa.Column("requested_arguments", sa.JSON(), nullable=False),
        sa.Column("effective_arguments", sa.JSON(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("ok", sa.Boolean(), nullable=True),
        sa.Column("returned", sa.Integer(), nullable=True),
        sa.Column("duration_ms", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["trace_id"], ["traces.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("tool_calls", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_tool_calls_trace_id"), ["trace_id"], unique=False)
    events = sa.table(
        "trace_events",
        sa.column("trace_id", sa.String()),
        sa.column("seq", sa.Integer()),
        sa.column("type", sa.String()),
        sa.column("payload", sa.JSON()),
    )
    found = op.get_bind().execute(
        sa.select(events.c.trace_id, events.c.type, events.c.payload)
        .where(events.c.type.in_(("tool_call", "tool_result")))
        .order_by(events.c.trace_id, events.c.seq)
    )
    rows: list[dict[str, Any]] = []
    by_call: dict[tuple[str, str], dict[str, Any]] = {}
    for trace_id, kind, payload in found:
        call_id = str(payload.get("call_id"))
        if kind == "tool_call":
            row = {
                "trace_id": trace_id,
                "call_id": call_id[:80],
                "name": str(payload.get("name", ""))[:80],
                "requested_arguments": payload.get("requested_arguments") or {},
                "effective_arguments": payload.get("effective_arguments") or {},
                "reason": str(payload.get("reason", "")),
                "ok": None,
                "returned": None,
                "duration_ms": None,
            }
            rows.append(row)
            by_call[(trace_id, call_id)] = row
        elif (target := by_call.get((trace_id, call_id))) is not None:
            target.update(
                ok=payload.get("ok"), returned=payload.get("returned"), duration_ms=payload.get("duration_ms")
            )
    if rows:
        op.bulk_insert(tool_calls, rows)
