"""Storage: SQLAlchemy 2 models, the async database handle and Alembic migrations."""

from careerwise.store.db import Database
from careerwise.store.models import (
    Base,
    Chunk,
    Conversation,
    Document,
    KnowledgeMeta,
    Message,
    ToolCallRecord,
    Trace,
    TraceEvent,
)

__all__ = [
    "Base",
    "Chunk",
    "Conversation",
    "Database",
    "Document",
    "KnowledgeMeta",
    "Message",
    "ToolCallRecord",
    "Trace",
    "TraceEvent",
]
