"""Turn traces, written from the same event objects the user's stream is made of."""

from careerwise.tracing.recorder import TraceRecorder

__all__ = ["TraceRecorder"]
