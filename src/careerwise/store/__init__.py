"""Storage: SQLAlchemy 2 models, the async database handle and Alembic migrations."""

from careerwise.store.db import Database
from careerwise.store.models import (
    Assistant,
    AssistantSetting,
    Base,
    Chunk,
    Conversation,
    Document,
    KnowledgeMeta,
    Message,
    SettingsAudit,
    ToolCallRecord,
    Trace,
    TraceEvent,
)

__all__ = [
    "Assistant",
    "AssistantSetting",
    "Base",
    "Chunk",
    "Conversation",
    "Database",
    "Document",
    "KnowledgeMeta",
    "Message",
    "SettingsAudit",
    "ToolCallRecord",
    "Trace",
    "TraceEvent",
]
