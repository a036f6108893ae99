"""A request-body limit per route, enforced before the body is read into memory.

Pure ASGI, outside the routes: a ``Content-Length`` over the route's limit is answered 413 without
reading a byte of the body, and a body without one (chunked) is counted as it arrives and stops at the
first chunk past the limit. A route that reads its own upload as a capped stream (the resume upload)
is left to do so (its limit here is None), so that its refusal names the file and its limit; every
other route has this ceiling, set in :class:`careerwise.config.Settings`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from careerwise.api.errors import error_body

log = logging.getLogger(__name__)
CODE = "payload_too_large"


class BodyTooLargeError(HTTPException):
    """Raised from ``receive`` when the body passes the limit. An ``HTTPException`` on purpose (do not
    make it a CareerWiseError): FastAPI turns any other exception raised while it reads a body into a
    400 "error parsing the body", and lets this one through to the error handler (413 envelope)."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body is larger than this route's limit of {limit:,} bytes")
        self.limit = limit


class BodyLimit:
    """``default`` bytes for every request; ``routes`` maps an exact path to its own limit, or to None
    for a route that caps its own body."""

    def __init__(self, app: ASGIApp, *, default: int, routes: Mapping[str, int | None] | None = None) -> None:
        self.app = app
        self.default = default
        self.routes = dict(routes or {})

    def limit_for(self, path: str) -> int | None:
        return self.routes.get(path, self.default)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope.get("path", ""))
        if limit is None:  # the route reads its body as a capped stream of its own
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            log.info("body limit: %s declared %d bytes, over %d: 413", scope.get("path"), declared, limit)
            await _refuse(send, limit)
            return
        received = 0
        started = False

        async def counted_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    log.info("body limit: %s sent more than %d bytes: 413", scope.get("path"), limit)
                    raise BodyTooLargeError(limit)
            return message

        async def noting_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted_receive, noting_send)
        except BodyTooLargeError:
            # raised outside the routes' error handler (a mounted app, a middleware reading the body)
            if started:
                raise
            await _refuse(send, limit)


def _content_length(scope: Scope) -> int | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() else None
    return None


async def _refuse(send: Send, limit: int) -> None:
    body = json.dumps(error_body(CODE, BodyTooLargeError(limit).detail)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
