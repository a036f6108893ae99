"""Storage: SQLAlchemy 2 models, the async database handle and Alembic migrations."""

from careerwise.store.db import Database
from careerwise.store.models import (
    ApiKey,
    Assistant,
    AssistantSetting,
    Base,
    Chunk,
    Conversation,
    Document,
    KnowledgeMeta,
    LineEventRecord,
    LineUser,
    Message,
    SettingsAudit,
    ToolCallRecord,
    Trace,
    TraceEvent,
)

__all__ = [
    "ApiKey",
    "Assistant",
    "AssistantSetting",
    "Base",
    "Chunk",
    "Conversation",
    "Database",
    "Document",
    "KnowledgeMeta",
    "LineEventRecord",
    "LineUser",
    "Message",
    "SettingsAudit",
    "ToolCallRecord",
    "Trace",
    "TraceEvent",
]
