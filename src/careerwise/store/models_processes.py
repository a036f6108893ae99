"""The app processes that own work in flight: who wrote a pending reply or took a LINE event, and how
to tell, after a crash, whether that owner is still alive (careerwise.store.recovery)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from careerwise.store.models import Base, utcnow


class AppProcess(Base):
    """One row per start of an app process (a boot id, never reused), written before the process stamps
    any row with its id, refreshed by a heartbeat while it runs, marked stopped when it shuts down."""

    __tablename__ = "app_processes"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)  # the boot id: new at every start
    # the machine and PID namespace the pid means something in (recovery.host_key)
    host: Mapped[str] = mapped_column(String(200))
    pid: Mapped[int] = mapped_column(Integer)
    # the kernel's boot id and the process's start time: a reused pid has another one (None: unknown)
    start_token: Mapped[str | None] = mapped_column(String(80), default=None)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    heartbeat_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    stopped_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)

    __table_args__ = (Index("ix_app_processes_heartbeat_at", "heartbeat_at"),)
