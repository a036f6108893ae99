"""The OpenAPI schema declares each operation's error statuses with the body they carry: the inferred
ones (services → 503, a logged-in user → 401, an admin → 403, a body → 400/413/422, a state-changing
method → 403), the route's own (404, 409, ...), and FastAPI's 422 replaced by the app's envelope; and
the envelope model accepts what the app's handlers, the body limit and the cross-site guard send."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import BaseModel, ConfigDict

from careerwise.api import errors
from careerwise.api.auth import CrossSiteGuard
from careerwise.api.body_limit import BodyLimit
from careerwise.api.error_models import ErrorEnvelope, OpenAIError
from careerwise.app import create_app
from careerwise.config import Settings
from careerwise.errors import ConflictError, NotFoundError, RateLimitedError

ENVELOPE = "#/components/schemas/ErrorEnvelope"
OPENAI = "#/components/schemas/OpenAIError"


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    app = create_app(Settings(_env_file=None, environment="test"))  # type: ignore[call-arg]
    built: dict[str, Any] = app.openapi()
    return built


def _responses(schema: dict[str, Any], method: str, path: str) -> dict[str, Any]:
    found: dict[str, Any] = schema["paths"][path][method]["responses"]
    return found


def test_every_error_status_of_every_operation_names_its_body(schema: dict[str, Any]) -> None:
    operations = [(p, m, op) for p, item in schema["paths"].items() for m, op in item.items()]
    assert len(operations) >= 50
    for path, method, op in operations:
        for status, response in op["responses"].items():
            if int(status) < 400:
                continue
            ref = response["content"]["application/json"]["schema"].get("$ref")
            allowed = {ENVELOPE, OPENAI} if path.startswith("/v1/") else {ENVELOPE}
            if (method, path, status) == ("get", "/readyz", "503"):
                continue  # the readiness report itself, with status 'failed'
            assert ref in allowed, (method, path, status, ref)
    assert "HTTPValidationError" not in schema["components"]["schemas"]


@pytest.mark.parametrize(
    ("method", "path", "statuses"),
    [
        ("get", "/api/admin/status", {"401", "403", "503"}),  # admin only, reads the database
        ("get", "/api/auth/me", {"401", "503"}),
        ("post", "/api/chat", {"400", "403", "404", "409", "413", "422", "429", "503"}),
        ("post", "/api/bookings", {"400", "403", "409", "413", "422", "429", "503"}),
        ("get", "/api/conversations/{conversation_id}", {"404", "422", "503"}),
        ("post", "/v1/chat/completions", {"400", "401", "403", "404", "409", "413", "429", "502", "503"}),
        ("get", "/metrics", set()),  # no database, no input
        ("get", "/healthz", set()),
    ],
)
def test_an_operation_declares_the_statuses_it_can_answer(
    schema: dict[str, Any], method: str, path: str, statuses: set[str]
) -> None:
    declared = {s for s in _responses(schema, method, path) if int(s) >= 400}
    assert declared == statuses


def test_the_openai_routes_declare_openais_error_body(schema: dict[str, Any]) -> None:
    responses = _responses(schema, "post", "/v1/chat/completions")
    assert responses["401"]["content"]["application/json"]["schema"]["$ref"] == OPENAI
    # the body limit answers before the route: the app's envelope
    assert responses["413"]["content"]["application/json"]["schema"]["$ref"] == ENVELOPE
    assert "OpenAIError" in schema["components"]["schemas"]
    OpenAIError.model_validate(
        {"error": {"message": "no key", "type": "invalid_request_error", "param": None, "code": "x"}}
    )


class _Strict(ErrorEnvelope):
    model_config = ConfigDict(extra="forbid")


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    n: int


def _app() -> FastAPI:
    app = FastAPI()
    errors.install(app)
    app.add_middleware(BodyLimit, default=100)
    app.add_middleware(CrossSiteGuard, trusted_origins=[])

    @app.post("/raise/{kind}")
    async def raise_(kind: str, body: _Body) -> None:
        if kind == "missing":
            raise NotFoundError("no such thing")
        if kind == "conflict":
            conflict = ConflictError("taken")
            conflict.details = {"next_free_slots": []}  # type: ignore[attr-defined]
            raise conflict
        raise RateLimitedError("slow down", retry_after=3)

    return app


def test_the_envelope_model_accepts_every_kind_of_error_answer() -> None:
    with TestClient(_app()) as c:
        answers = [
            c.post("/raise/missing", json={"n": 1}),  # ours: 404
            c.post("/raise/conflict", json={"n": 1}),  # ours, with details: 409
            c.post("/raise/limit", json={"n": 1}),  # ours: 429
            c.post("/raise/x", json={"n": "1"}),  # validation: 422 with a list of details
            c.post("/raise/x", content=b"{", headers={"content-type": "application/json"}),  # 400
            c.post("/raise/x", content=b"x" * 200, headers={"content-type": "application/json"}),  # 413
            c.post("/raise/x", json={"n": 1}, headers={"sec-fetch-site": "cross-site"}),  # 403, guard
            c.get("/raise/x"),  # 405, the framework's
        ]
    assert [a.status_code for a in answers] == [404, 409, 429, 422, 400, 413, 403, 405]
    for answer in answers:
        _Strict.model_validate(answer.json())
