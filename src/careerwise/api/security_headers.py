"""Security headers on every response: the Content-Security-Policy, nosniff, the referrer policy.

The policy allows nothing but this origin: no inline script or style (every page keeps its scripts and
styles in files under /static), no images but ours and ``data:``, no framing, no plugins. Markup that
somehow got past the sanitizer (careerwise.web.render) can then neither run nor call another host.

The API docs (/docs, /redoc) are FastAPI's pages, which load Swagger UI / ReDoc from a CDN with an
inline bootstrap script; they get a policy of their own that allows exactly that and nothing more.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSP = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "object-src 'none'",
    ]
)
DOCS_CSP = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net",
        "style-src 'self' https://cdn.jsdelivr.net https://fonts.googleapis.com",
        "font-src https://fonts.gstatic.com",
        "img-src 'self' data: https://fastapi.tiangolo.com https://cdn.redoc.ly",
        "worker-src blob:",
        "connect-src 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "object-src 'none'",
    ]
)
DOCS_PATHS = frozenset({"/docs", "/docs/oauth2-redirect", "/redoc"})


class SecurityHeaders:
    """Pure ASGI (not BaseHTTPMiddleware), so streamed answers pass through unbuffered and a client's
    disconnect still reaches the turn."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        policy = DOCS_CSP if scope.get("path") in DOCS_PATHS else CSP
        added = [
            (b"content-security-policy", policy.encode()),
            (b"x-content-type-options", b"nosniff"),
            (b"referrer-policy", b"same-origin"),
            (b"x-frame-options", b"DENY"),
        ]

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                # a route that set one of these itself keeps its own value
                headers = list(message.get("headers", []))
                present = {k.lower() for k, _ in headers}
                headers.extend((k, v) for k, v in added if k not in present)
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)
