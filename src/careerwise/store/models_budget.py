"""Tokens used per owner (``user:<id>`` or ``ip:<address>``) per day, for the daily budget."""

from __future__ import annotations

from datetime import date

from sqlalchemy import BigInteger, Date, String
from sqlalchemy.orm import Mapped, mapped_column

from careerwise.store.models import Base


class TokenUsage(Base):
    __tablename__ = "token_usage"
    owner: Mapped[str] = mapped_column(String(80), primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    tokens: Mapped[int] = mapped_column(BigInteger, default=0)
