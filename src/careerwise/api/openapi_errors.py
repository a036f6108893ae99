"""The error statuses of every operation, declared in the OpenAPI schema with the body each one has.

Two sources, merged each time the schema is built (:func:`install`):

- what a route can answer because of what it is, read from the route itself: a dependency on the
  services (the database may be locked: 503 with ``Retry-After``), on a logged-in user (401) or on an
  administrator (403); a request body (400 when it does not parse, 413 over the body limit, 422 when
  it does not validate); parameters (422); a state-changing method (403 from the cross-site guard);
- what a route raises itself (404, 409, 429, ...), declared on its decorator with :func:`errors`.

Every error status gets :class:`~careerwise.api.error_models.ErrorEnvelope` as its body, what
``api/errors.py`` sends, unless the route declared another body (the OpenAI-compatible routes answer
their own refusals in OpenAI's error shape). FastAPI's own 422 (``HTTPValidationError``) is replaced:
the app's validation handler answers with the envelope.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute, iter_route_contexts

from careerwise.api.auth import get_admin_user, get_current_user
from careerwise.api.deps import get_services
from careerwise.api.error_models import DESCRIPTIONS, ErrorEnvelope

UNSAFE_METHODS = frozenset({"post", "put", "patch", "delete"})
_ENVELOPE_REF = "#/components/schemas/ErrorEnvelope"
_FASTAPI_422 = ("HTTPValidationError", "ValidationError")
# routes that take the services but read no database: no 503 for a locked one
NO_DATABASE = frozenset({("get", "/metrics")})


def inferred_statuses(dependant: Dependant, operation: dict[str, Any], method: str, path: str) -> set[int]:
    """The error statuses a route can answer because of its dependencies, body, parameters and method."""
    calls = set(_calls(dependant))
    statuses: set[int] = set()
    if get_services in calls and (method, path) not in NO_DATABASE:
        statuses.add(503)
    if get_current_user in calls:
        statuses.add(401)
    if get_admin_user in calls:
        statuses.add(403)
    if "requestBody" in operation:
        statuses |= {400, 413, 422}
    if operation.get("parameters"):
        statuses.add(422)
    if method in UNSAFE_METHODS:
        statuses.add(403)
    return statuses


def declare_errors(app: FastAPI, schema: dict[str, Any]) -> dict[str, Any]:
    """Adds the inferred statuses to every operation of ``schema`` and gives every error status without
    a body the envelope. Idempotent: the schema FastAPI caches may pass through again."""
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for name, definition in _envelope_schemas().items():
        components.setdefault(name, definition)
    for context in iter_route_contexts(app.routes):
        if not isinstance(context.original_route, APIRoute) or not context.include_in_schema:
            continue
        path = str(context.path_format)
        path_item = schema.get("paths", {}).get(path, {})
        for method in context.methods or ():
            operation = path_item.get(method.lower())
            if operation is None:
                continue
            responses: dict[str, Any] = operation.setdefault("responses", {})
            for status in inferred_statuses(context.dependant, operation, method.lower(), path):
                responses.setdefault(str(status), {"description": DESCRIPTIONS[status]})
            for key, response in responses.items():
                if key.isdigit() and int(key) >= 400:
                    _envelope(response, int(key))
    text = repr(schema["paths"])
    for name in _FASTAPI_422:
        if f"#/components/schemas/{name}'" not in text:
            components.pop(name, None)
    return schema


def install(app: FastAPI) -> None:
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        return declare_errors(app, generate())

    # FastAPI's documented way to extend the schema: replace the app's ``openapi`` method
    app.openapi = openapi  # type: ignore[method-assign]


def _envelope(response: dict[str, Any], status: int) -> None:
    content = response.setdefault("content", {})
    json_body = content.get("application/json")
    schema = json_body.get("schema", {}) if json_body else {}
    if not schema or schema.get("$ref") == "#/components/schemas/HTTPValidationError":
        content["application/json"] = {"schema": {"$ref": _ENVELOPE_REF}}
    if response.get("description") in (None, "", "Validation Error", "Additional Response"):
        response["description"] = DESCRIPTIONS.get(status, "An error.")


def _envelope_schemas() -> dict[str, Any]:
    definition = ErrorEnvelope.model_json_schema(ref_template="#/components/schemas/{model}")
    nested: dict[str, Any] = definition.pop("$defs", {})
    return {"ErrorEnvelope": definition, **nested}


def _calls(dependant: Dependant) -> Iterator[object]:
    for sub in dependant.dependencies:
        if sub.call is not None:
            yield sub.call
        yield from _calls(sub)
