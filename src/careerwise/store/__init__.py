"""Storage: SQLAlchemy 2 models, the async database handle and Alembic migrations."""

from careerwise.store.db import Database, as_utc
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
    Trace,
    TraceEvent,
)
from careerwise.store.models_accounts import LoginSession, User
from careerwise.store.models_bookings import (
    AvailabilityException,
    AvailabilityWindow,
    Booking,
    BookingDialogue,
    BookingSettings,
)
from careerwise.store.models_observability import Feedback, TraceSpan
from careerwise.store.models_processes import AppProcess
from careerwise.store.models_ratelimit import RateLimitWindow
from careerwise.store.models_resumes import Resume, ResumeReview

__all__ = [
    "ApiKey",
    "AppProcess",
    "Assistant",
    "AssistantSetting",
    "AvailabilityException",
    "AvailabilityWindow",
    "Base",
    "Booking",
    "BookingDialogue",
    "BookingSettings",
    "Chunk",
    "Conversation",
    "Database",
    "Document",
    "Feedback",
    "KnowledgeMeta",
    "LineEventRecord",
    "LineUser",
    "LoginSession",
    "Message",
    "RateLimitWindow",
    "Resume",
    "ResumeReview",
    "SettingsAudit",
    "Trace",
    "TraceEvent",
    "TraceSpan",
    "User",
    "as_utc",
]
