"""Tables. Changes here need an Alembic migration (``store/migrations/versions``)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


def new_id() -> str:
    return uuid.uuid4().hex


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}  # noqa: RUF012 - SQLAlchemy API


class Conversation(Base):
    __tablename__ = "conversations"
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    title: Mapped[str] = mapped_column(String(200), default="")
    channel: Mapped[str] = mapped_column(String(20), default="web")
    user_id: Mapped[str | None] = mapped_column(String(64), index=True, default=None)
    assistant_id: Mapped[str] = mapped_column(String(64), index=True, default="summer")  # migration 0007
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Message(Base):
    __tablename__ = "messages"
    # one reply being written per conversation, across every app process: a second 'pending' row in the
    # same conversation is refused by the database (the engine turns that into 409 "still answering")
    __table_args__ = (
        Index(
            "uq_messages_one_pending",
            "conversation_id",
            unique=True,
            sqlite_where=text("status = 'pending'"),
            postgresql_where=text("status = 'pending'"),
        ),
    )
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    conversation_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), index=True
    )
    role: Mapped[str] = mapped_column(String(16))
    content: Mapped[str] = mapped_column(Text, default="")
    # a report answer's structure (careerwise.reports.StoredReport), beside its text; None for any other
    # message, and for report answers stored before migration 0019 (their sections are read from content)
    report: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True), default=None)
    # user messages: 'ok'; assistant messages: 'pending' until the turn ends, then ok / error / cancelled
    status: Mapped[str] = mapped_column(String(16), default="ok")
    trace_id: Mapped[str | None] = mapped_column(String(32), index=True, default=None)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # the app process writing a pending reply (app_processes.id; no foreign key: rows of long-gone
    # processes are pruned, and an owner not found is dead). None: written by a process that had not
    # registered (the CLI, or before migration 0016); such a reply is judged by its age
    process_id: Mapped[str | None] = mapped_column(String(32), default=None)


class Trace(Base):
    __tablename__ = "traces"
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    conversation_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), index=True
    )
    user_message_id: Mapped[str] = mapped_column(String(32))
    assistant_message_id: Mapped[str | None] = mapped_column(String(32), default=None)
    channel: Mapped[str] = mapped_column(String(20), default="web")
    assistant_id: Mapped[str] = mapped_column(String(64), index=True, default="summer")  # migration 0007
    intent: Mapped[str | None] = mapped_column(String(20), default=None)
    tier: Mapped[str | None] = mapped_column(String(20), default=None)
    flow: Mapped[str | None] = mapped_column(String(40), default=None)
    path: Mapped[str | None] = mapped_column(String(20), default=None)
    status: Mapped[str] = mapped_column(String(16), default="running")
    error_code: Mapped[str | None] = mapped_column(String(64), default=None)
    degraded: Mapped[bool] = mapped_column(default=False)
    model: Mapped[str | None] = mapped_column(String(120), default=None)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)
    duration_ms: Mapped[float | None] = mapped_column(Float, default=None)
    first_text_ms: Mapped[float | None] = mapped_column(Float, default=None)
    timings: Mapped[dict[str, Any]] = mapped_column(default=dict)
    usage: Mapped[dict[str, Any]] = mapped_column(default=dict)


class TraceEvent(Base):
    """Every event of a turn except text deltas, stored as the user's stream carried it."""

    __tablename__ = "trace_events"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    trace_id: Mapped[str] = mapped_column(ForeignKey("traces.id", ondelete="CASCADE"), index=True)
    seq: Mapped[int] = mapped_column(Integer)
    t_ms: Mapped[float] = mapped_column(Float)
    type: Mapped[str] = mapped_column(String(20))
    payload: Mapped[dict[str, Any]] = mapped_column()


class Document(Base):
    __tablename__ = "documents"
    id: Mapped[str] = mapped_column(String(200), primary_key=True)
    title: Mapped[str] = mapped_column(String(300))
    source_path: Mapped[str] = mapped_column(Text)
    domain: Mapped[str] = mapped_column(String(40), default="other")
    lang: Mapped[str] = mapped_column(String(10), default="zh-TW")
    sha256: Mapped[str] = mapped_column(String(64))
    chars: Mapped[int] = mapped_column(Integer, default=0)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # the title in the other language (front matter ``alt_title``; empty when none) and both titles'
    # vectors (knowledge/titles.py: float32 rows, the title's first), with the model that made them (0021).
    # Deferred: only the index's load reads the vectors, with a select of its own
    alt_title: Mapped[str] = mapped_column(String(300), default="", server_default="")
    title_vectors: Mapped[bytes | None] = mapped_column(
        LargeBinary, nullable=True, default=None, deferred=True
    )
    title_model: Mapped[str | None] = mapped_column(String(40), nullable=True, default=None)


class Chunk(Base):
    __tablename__ = "chunks"
    __table_args__ = (UniqueConstraint("document_id", "ord"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    document_id: Mapped[str] = mapped_column(ForeignKey("documents.id", ondelete="CASCADE"), index=True)
    ord: Mapped[int] = mapped_column(Integer)
    title: Mapped[str] = mapped_column(String(300))
    section: Mapped[str] = mapped_column(String(300), default="")
    domain: Mapped[str] = mapped_column(String(40), default="other")
    text: Mapped[str] = mapped_column(Text)
    embedding: Mapped[bytes] = mapped_column(LargeBinary)
    embedding_model: Mapped[str] = mapped_column(String(40))
    # BM25 tokens (lexical.token_string), stored at ingest so a restart does not re-run jieba (0013)
    lexical_tokens: Mapped[str | None] = mapped_column(Text, nullable=True, default=None)


class KnowledgeMeta(Base):
    __tablename__ = "knowledge_meta"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class Assistant(Base):
    """An assistant (persona, knowledge base, settings). Summer is the one that ships.

    ``system_prompt`` empty = the built-in prompts of careerwise.prompts (Summer's); ``knowledge_domains``
    empty = the whole knowledge base, else only chunks of those domains (knowledge/documents.py DOMAINS).
    Changes are audited in ``settings_audit`` under ``profile.*`` keys (careerwise.assistant_settings).
    """

    __tablename__ = "assistants"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    description: Mapped[str] = mapped_column(Text, default="", server_default="")
    system_prompt: Mapped[str] = mapped_column(Text, default="", server_default="")
    knowledge_domains: Mapped[list[Any]] = mapped_column(JSON, default=list, server_default="[]")
    enabled: Mapped[bool] = mapped_column(Boolean, default=True, server_default=text("true"))
    updated_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)
    updated_by: Mapped[str | None] = mapped_column(String(120), default=None)


class AssistantSetting(Base):
    """A per-assistant override of a configuration default (see careerwise.assistant_settings)."""

    __tablename__ = "assistant_settings"
    assistant_id: Mapped[str] = mapped_column(
        ForeignKey("assistants.id", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[Any] = mapped_column(JSON)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_by: Mapped[str] = mapped_column(String(120), default="")


class SettingsAudit(Base):
    """Who changed which setting, when, from what to what."""

    __tablename__ = "settings_audit"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    assistant_id: Mapped[str] = mapped_column(String(64), index=True)
    key: Mapped[str] = mapped_column(String(64))
    old_value: Mapped[Any] = mapped_column(JSON, nullable=True)
    new_value: Mapped[Any] = mapped_column(JSON, nullable=True)
    changed_by: Mapped[str] = mapped_column(String(120), default="")
    changed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class LineEventRecord(Base):
    """One LINE webhook event, stored once by its ``webhookEventId``: a redelivery finds it here and is
    not answered a second time, unless it is still 'received' by a process that died
    (careerwise.store.recovery): then the redelivery is answered."""

    __tablename__ = "line_events"
    __table_args__ = (
        UniqueConstraint("webhook_event_id", name="uq_line_events_webhook_event_id"),
        # the events still waiting for an answer, found at start-up without reading the whole table
        Index(
            "ix_line_events_received",
            "process_id",
            sqlite_where=text("status = 'received'"),
            postgresql_where=text("status = 'received'"),
        ),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    webhook_event_id: Mapped[str] = mapped_column(String(64))
    event_type: Mapped[str] = mapped_column(String(40))
    chat_key: Mapped[str | None] = mapped_column(String(80), index=True, default=None)
    redelivery: Mapped[bool] = mapped_column(default=False)
    # received -> answered / failed / ignored / apologised (a final state; only those stop a redelivery)
    status: Mapped[str] = mapped_column(String(16), default="received")
    delivery: Mapped[str | None] = mapped_column(String(16), default=None)  # reply / push
    trace_id: Mapped[str | None] = mapped_column(String(32), default=None)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    received_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    processed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)
    # while 'received': the process answering it (app_processes.id) and the event as LINE sent it, so
    # another process can answer it when that one died; the payload is cleared with the outcome
    process_id: Mapped[str | None] = mapped_column(String(32), default=None)
    payload: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)


class LineUser(Base):
    """A LINE chat (a user, or a group or room) and the conversation its history lives in."""

    __tablename__ = "line_users"
    line_user_id: Mapped[str] = mapped_column(String(80), primary_key=True)
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id", ondelete="CASCADE"))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ApiKey(Base):
    """A key for the OpenAI-compatible endpoint. Only the SHA-256 of the token is stored."""

    __tablename__ = "api_keys"
    __table_args__ = (UniqueConstraint("key_hash", name="uq_api_keys_key_hash"),)
    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(120), default="")
    prefix: Mapped[str] = mapped_column(String(16))
    key_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)
