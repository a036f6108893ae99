"""Request counters shared by every app process (the per-minute limits when they live in the database)."""

from __future__ import annotations

from sqlalchemy import Float, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from careerwise.store.models import Base


class RateLimitWindow(Base):
    """One row per limit and key: the current window's start (Unix seconds) and the requests in it.

    A fixed window anchored at the key's first request, not at the clock's minute: one atomic upsert
    counts a request and, when the old window has ended, starts a new one (careerwise/ratelimit.py).
    """

    __tablename__ = "rate_limit_windows"
    scope: Mapped[str] = mapped_column(String(40), primary_key=True)  # which limit: login, user_chat, ...
    key: Mapped[str] = mapped_column(String(200), primary_key=True)  # whose requests: an IP, a user id
    window_start: Mapped[float] = mapped_column(Float)
    hits: Mapped[int] = mapped_column(Integer)

    __table_args__ = (Index("ix_rate_limit_windows_window_start", "window_start"),)
