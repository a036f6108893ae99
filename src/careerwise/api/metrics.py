"""``GET /metrics`` (Prometheus text format) and the middleware that counts HTTP requests.

Requests are labelled by the route's template (``/api/messages/{message_id}/feedback``), never the raw
path, so ids do not become label values; a path no route matched is ``unmatched``. The registry is the
app's own (``services.engine.telemetry.metrics``), not prometheus_client's global one.
"""

from __future__ import annotations

import time

from fastapi import APIRouter, FastAPI
from fastapi.responses import Response
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from careerwise.api.deps import MetricsDep
from careerwise.tracing.metrics import Metrics

router = APIRouter(tags=["observability"])


@router.get("/metrics", response_class=Response)
async def metrics(registry: MetricsDep) -> Response:
    return Response(registry.render(), media_type=CONTENT_TYPE_LATEST)


def _metrics_of(scope: Scope) -> Metrics | None:
    app = scope.get("app")
    services = getattr(getattr(app, "state", None), "services", None)
    return services.engine.telemetry.metrics if services is not None else None


class RequestMetrics:
    """Pure ASGI (no BaseHTTPMiddleware): streamed responses pass through untouched; the request is
    counted when its body has been sent, or when it failed."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # if the app raises before it starts a response

        async def send_and_note(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        finally:
            metrics = _metrics_of(scope)
            if metrics is not None:
                route = scope.get("route")
                label = str(getattr(route, "path", "unmatched")) if route is not None else "unmatched"
                method = str(scope.get("method", ""))
                metrics.http_requests.labels(method, label, str(status)).inc()
                metrics.http_duration.labels(method, label).observe(time.perf_counter() - started)


def install(app: FastAPI) -> None:
    app.add_middleware(RequestMetrics)
    app.include_router(router)
