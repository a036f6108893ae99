"""Who may use the service and how much: the LINE channel, sessions, rate and abuse limits, bookings.

Each field is declared here once, with its bounds; :class:`careerwise.config.Settings` reads them from
the environment (``CAREERWISE_*``) and refuses unsafe values outside development (a missing session
secret) and unreadable default booking hours. Limits are per client; 0 means no limit where a field
says so (docs/security.md, "Limits").
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, SecretStr


class AccessSettings(BaseModel):
    """No model configuration of its own: :class:`careerwise.config.Settings` sets it."""

    max_message_chars: int = 4000
    max_history_messages: int = 40

    # --- channels ------------------------------------------------------------------------------
    line_channel_secret: SecretStr | None = Field(
        default=None, description="The LINE channel secret (webhook signatures); unset = LINE off (503)."
    )
    line_channel_access_token: SecretStr | None = Field(
        default=None, description="The LINE channel access token (reply, push, loading animation)."
    )
    line_api_base_url: str = Field(default="https://api.line.me", description="The LINE Messaging API.")
    line_assistant: str = Field(
        default="summer",
        pattern=r"^[a-z][a-z0-9_-]{1,31}$",  # assistants.ID_PATTERN (not imported: config stays leaf)
        description="The assistant (its id) that answers the LINE channel; checked at start-up and every turn.",
    )

    # --- accounts and limits -------------------------------------------------------------------
    session_secret: SecretStr | None = Field(
        default=None,
        description="Signs session cookies (32+ characters). Unset outside production: generated once and "
        "kept in data_dir/session_secret.",
    )
    session_days: int = Field(default=14, ge=1, le=365, description="How long a login lasts.")
    trusted_origins: list[str] = Field(
        default_factory=list,
        description="Extra origins (scheme://host[:port]) allowed to make state-changing requests, e.g. the "
        "public URL behind a reverse proxy that rewrites Host.",
    )
    anonymous_chat_per_minute: int = Field(
        default=10, ge=0, description="Chat turns per minute for one IP without an account (0 = no limit)."
    )
    user_chat_per_minute: int = Field(
        default=30, ge=0, description="Chat turns per minute for one logged-in user (0 = no limit)."
    )
    daily_token_budget: int = Field(
        default=200_000,
        ge=0,
        description="LLM tokens (prompt + completion) per user per day (per IP without an account); 0 = none.",
    )
    login_per_minute: int = Field(
        default=10, ge=0, description="Log-in and sign-up attempts per minute for one IP (0 = no limit)."
    )
    # --- abuse limits and exposure (docs/security.md, "Limits") ---------------------------------
    login_per_account_per_minute: int = Field(
        default=5,
        ge=0,
        description="Log-in attempts per minute for one account (email), from any IP (0 = no limit).",
    )
    young_account_hours: float = Field(
        default=24.0,
        ge=0,
        description="Accounts younger than this share their IP's ceilings below (0 = off).",
    )
    young_accounts_chat_per_minute: int = Field(
        default=30,
        ge=0,
        description="Chat turns per minute from one IP across all its young accounts (0 = none).",
    )
    young_accounts_daily_tokens: int = Field(
        default=200_000,
        ge=0,
        description="LLM tokens per day from one IP across all its young accounts (0 = none).",
    )
    bookings_per_day: int = Field(
        default=10, ge=0, description="Bookings one IP (or LINE user) may make in 24 hours (0 = no limit)."
    )
    bookings_held: int = Field(
        default=3,
        ge=0,
        description="Upcoming active bookings one IP (or LINE user) may hold at once (0 = no limit).",
    )
    default_hours: str = Field(
        default="mon-fri 10:00-18:00",
        description="Consultation hours used until an administrator confirms or edits them, in the coach's "
        "time zone: 'mon-fri 10:00-18:00', 'mon-fri 10:00-12:00,14:00-18:00; sat 10:00-12:00', or 'none'.",
    )
    booking_contact: str = Field(
        default="",
        max_length=300,
        description="How to reach the coach, told in the chat when no slot is free or no hours are set "
        "(e.g. 'summer@example.com or LINE @summercoach'); empty = the dashboard warns.",
    )
    rate_limit_store: Literal["auto", "memory", "database"] = Field(
        default="auto",
        description="Where the per-minute limits count: auto = the database on PostgreSQL or with "
        "several workers, else in the process.",
    )
