"""``POST /line/webhook``: the LINE Messaging API webhook (see careerwise.channels.line and
docs/channels.md). The channel lives as long as the app: the app's lifespan enters :func:`channel_lifespan`
once the services exist, handing it the settings, engine and database it uses (never the services
object). It starts the channel (checks its assistant, ``CAREERWISE_LINE_ASSISTANT``, and answers or
apologises for the events a dead process left unanswered) and, on shutdown, waits for the answers still
being written."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse

from careerwise.api.errors import error_body
from careerwise.channels.line import (
    SIGNATURE_HEADER,
    InvalidWebhookError,
    LineChannel,
    channel_problem,
    parse_webhook,
)
from careerwise.config import Settings
from careerwise.engine import Engine
from careerwise.store.db import Database

MAX_BODY_BYTES = 1_000_000  # LINE's webhook bodies are a few kilobytes


@asynccontextmanager
async def channel_lifespan(
    app: FastAPI, *, settings: Settings, engine: Engine, db: Database
) -> AsyncIterator[None]:
    """The channel on ``app.state.line_channel`` while the app runs (None when LINE is not configured,
    with the reason on ``app.state.line_problem``); closed on exit."""
    secret = settings.line_channel_secret.get_secret_value() if settings.line_channel_secret else None
    token = (
        settings.line_channel_access_token.get_secret_value() if settings.line_channel_access_token else None
    )
    problem = channel_problem(secret, token)
    channel = None
    if problem is None:
        assert secret is not None and token is not None
        channel = LineChannel(
            engine=engine,
            db=db,
            channel_secret=secret,
            access_token=token,
            api_base_url=settings.line_api_base_url,
            assistant=settings.line_assistant,
        )
        # a missing or disabled assistant is logged now, not first noticed by a user's message
        await channel.check_assistant()
        # the messages a dead process left unanswered: answered again, or apologised for
        await channel.recover()
    app.state.line_channel = channel
    app.state.line_problem = problem
    try:
        yield
    finally:
        app.state.line_channel = None
        if channel is not None:
            await channel.aclose()


router = APIRouter(tags=["line"])


async def _body(request: Request) -> bytes | None:
    """The raw body, or None when it is larger than any webhook LINE sends."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


@router.post(
    "/line/webhook",
    summary="LINE Messaging API webhook",
    responses={
        400: {"description": "Missing or wrong X-Line-Signature, or a signed body that is not a webhook."},
        413: {"description": "The body is larger than any webhook LINE sends."},
        503: {
            "description": "LINE is not configured (no channel secret or access token), or the database "
            "is locked."
        },
    },
)
async def line_webhook(request: Request) -> JSONResponse:
    channel: LineChannel | None = getattr(request.app.state, "line_channel", None)
    if channel is None:
        problem = getattr(request.app.state, "line_problem", None) or "LINE is not available"
        return JSONResponse(error_body("line_not_configured", problem), status_code=503)
    body = await _body(request)
    if body is None:
        return JSONResponse(error_body("payload_too_large", "the body is too large"), status_code=413)
    # the signature is checked on the raw bytes before anything in them is looked at
    if not channel.verify(body, request.headers.get(SIGNATURE_HEADER)):
        return JSONResponse(
            error_body("invalid_signature", f"missing or wrong {SIGNATURE_HEADER}"), status_code=400
        )
    try:
        events = parse_webhook(body)
    except InvalidWebhookError as exc:
        return JSONResponse(error_body("invalid_body", str(exc)), status_code=400)
    # stored (deduplicated) now, answered in the background: LINE gets its 200 before any turn runs
    await channel.receive(events)
    return JSONResponse({})
