"""The bodies of error answers as pydantic models, for the OpenAPI schema, and :func:`errors`, the
``responses=`` a route decorator declares for the statuses the route itself raises.

:class:`ErrorEnvelope` is what ``api/errors.py``, the body limit and the cross-site guard send; a test
(tests/unit/test_openapi_errors.py) checks it against their answers.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

DESCRIPTIONS: dict[int, str] = {
    400: "The request cannot be accepted: a body that does not parse, or a value the route refuses.",
    401: "Not logged in (or no valid API key).",
    403: "Not allowed: the account lacks the role, or a state-changing request came from another site.",
    404: "No such resource.",
    409: "The request collides with stored state.",
    413: "The request body, or an upload, is over its limit.",
    415: "An upload of a kind that is not read.",
    422: "The parameters or the body do not validate.",
    429: "Too many requests; Retry-After says when to try again.",
    502: "The LLM provider failed.",
    503: "A dependency is unavailable (the database is locked, the knowledge index did not load); "
    "Retry-After says when to try again where it is known.",
}


class ErrorDetail(BaseModel):
    code: str
    message: str
    # validation errors: a list of {loc, msg, type}; a refused booking: the next free slots
    details: list[dict[str, Any]] | dict[str, Any] | None = None


class ErrorEnvelope(BaseModel):
    """The body of every error answer of ``api/errors.py``, the body limit and the cross-site guard."""

    error: ErrorDetail


class OpenAIErrorDetail(BaseModel):
    message: str
    type: str
    param: str | None = None
    code: str | None = None


class OpenAIError(BaseModel):
    """The error body of the OpenAI-compatible routes (``api/openai_compat.py``)."""

    error: OpenAIErrorDetail


def errors(*statuses: int, model: type[BaseModel] = ErrorEnvelope) -> dict[int | str, dict[str, Any]]:
    """``responses=`` for a route decorator: the statuses the route itself raises, with their body."""
    return {status: {"model": model, "description": DESCRIPTIONS[status]} for status in statuses}
