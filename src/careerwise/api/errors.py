"""One handler maps the exception hierarchy to HTTP statuses and a stable JSON error body.

Every error answer has the same envelope, ``{"error": {"code", "message"[, "details"]}}``: ours
(:data:`STATUS`), validation (422), the framework's own (404 for an unknown path, 405, 413 from the
body limit) and a locked database (503 with ``Retry-After``).
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from careerwise.errors import (
    AuthenticationError,
    CareerWiseError,
    ConflictError,
    ConversationBusyError,
    DatabaseBusyError,
    KnowledgeUnavailableError,
    LLMError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitedError,
    UnsupportedMediaTypeError,
    UserInputError,
)
from careerwise.store.health import DatabaseOperationalError, is_database_locked
from careerwise.tracing.metrics import Metrics

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
    (DatabaseBusyError, 503),
]
# the framework's own refusals, in the envelope: their code by status
HTTP_CODES = {
    400: "invalid_input",
    401: "not_authenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
}
DATABASE_BUSY_RETRY_AFTER = 5  # seconds: SQLite's lock is held for one transaction, rarely longer


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
        retry_after = (
            getattr(exc, "retry_after", None)
            if isinstance(exc, RateLimitedError | DatabaseBusyError)
            else None
        )
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
        if isinstance(exc, AuthenticationError):
            headers = {"WWW-Authenticate": "Cookie"}
        # some errors carry details for the caller (a taken booking slot: the next free slots)
        details = getattr(exc, "details", None)
        return JSONResponse(error_body(exc.code, str(exc), details), status_code=status, headers=headers)

    @app.exception_handler(DatabaseOperationalError)
    async def _operational(request: Request, exc: DatabaseOperationalError) -> JSONResponse:
        metrics = _metrics(request)
        if is_database_locked(exc):
            log.error(
                "request failed: the database is locked (%s %s): %s",
                request.method,
                request.url.path,
                exc.orig,
            )
            if metrics is not None:
                metrics.errors.labels(DatabaseBusyError.code).inc()
            busy = DatabaseBusyError(
                "the database is busy; try again in a few seconds",
                retry_after=DATABASE_BUSY_RETRY_AFTER,
            )
            return await _careerwise(request, busy)
        log.exception("request failed: database error (%s %s)", request.method, request.url.path)
        if metrics is not None:
            metrics.errors.labels("database_error").inc()
        return JSONResponse(error_body("internal_error", "a database error; it was logged"), status_code=500)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = HTTP_CODES.get(exc.status_code, f"http_{exc.status_code}")
        return JSONResponse(
            error_body(code, str(exc.detail)), status_code=exc.status_code, headers=exc.headers
        )

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


def _metrics(request: Request) -> Metrics | None:
    services = getattr(request.app.state, "services", None)
    return services.engine.telemetry.metrics if services is not None else None
