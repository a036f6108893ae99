"""One handler maps the exception hierarchy to HTTP statuses and a stable JSON error body."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from careerwise.errors import (
    AuthenticationError,
    CareerWiseError,
    ConflictError,
    ConversationBusyError,
    KnowledgeUnavailableError,
    LLMError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitedError,
    UnsupportedMediaTypeError,
    UserInputError,
)

log = logging.getLogger(__name__)

STATUS: list[tuple[type[CareerWiseError], int]] = [
    (ConversationBusyError, 409),
    (ConflictError, 409),
    (PayloadTooLargeError, 413),
    (UnsupportedMediaTypeError, 415),
    (UserInputError, 400),
    (AuthenticationError, 401),
    (PermissionDeniedError, 403),
    (RateLimitedError, 429),
    (NotFoundError, 404),
    (LLMError, 502),
    (KnowledgeUnavailableError, 503),
]


def error_body(code: str, message: str, details: object | None = None) -> dict[str, object]:
    body: dict[str, object] = {"code": code, "message": message}
    if details is not None:
        body["details"] = details
    return {"error": body}


def status_for(exc: CareerWiseError) -> int:
    for cls, status in STATUS:
        if isinstance(exc, cls):
            return status
    return 500


def _describe(errors: list[dict[str, object]]) -> str:
    parts = []
    for e in errors:
        raw = e.get("loc", ())
        path = raw if isinstance(raw, list | tuple) else ()
        loc = ".".join(str(p) for p in path if p != "body")
        parts.append(f"{loc or 'body'}: {e.get('msg')}")
    return "; ".join(parts)


def install(app: FastAPI) -> None:
    @app.exception_handler(CareerWiseError)
    async def _careerwise(_: Request, exc: CareerWiseError) -> JSONResponse:
        status = status_for(exc)
        if status >= 500:
            log.error("request failed: %s: %s", type(exc).__name__, exc)
        headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, RateLimitedError) else None
        if isinstance(exc, AuthenticationError):
            headers = {"WWW-Authenticate": "Cookie"}
        # some errors carry details for the caller (a taken booking slot: the next free slots)
        details = getattr(exc, "details", None)
        return JSONResponse(error_body(exc.code, str(exc), details), status_code=status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = list(exc.errors())
        if any(e.get("type") == "json_invalid" for e in errors):
            return JSONResponse(
                error_body("invalid_json", "the request body is not valid JSON"), status_code=400
            )
        details = [
            {"loc": list(e.get("loc", ())), "msg": e.get("msg"), "type": e.get("type")} for e in errors
        ]
        return JSONResponse(error_body("invalid_input", _describe(errors), details), status_code=422)
