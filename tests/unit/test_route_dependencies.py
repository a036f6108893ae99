"""Routes name what they use: each takes narrow dependencies (a repository, or the one service it
calls; api/deps.py), never the whole services object, so a route's signature says what it reaches.
Every narrow dependency still rests on ``get_services``, so OpenAPI documents the 503 of a locked
database for the routes that read it (api/openapi_errors.py). Outside the routes, the services object
on ``app.state`` is read only where no dependency can be injected; a channel is handed what it uses."""

from __future__ import annotations

import ast
from pathlib import Path

from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute, iter_route_contexts

from careerwise.api import deps
from careerwise.api.deps import get_services
from careerwise.app import create_app
from careerwise.config import Settings


def _routes() -> list[tuple[str, Dependant]]:
    """Every API route of the app, by its methods and path, with its dependency tree."""
    app = create_app(Settings(_env_file=None, environment="test"))  # type: ignore[call-arg]
    return [
        (f"{sorted(c.methods or ())} {c.path_format}", c.dependant)
        for c in iter_route_contexts(app.routes)
        if isinstance(c.original_route, APIRoute)
    ]


def _rests_on_services(dependant: Dependant) -> bool:
    return any(d.call is get_services or _rests_on_services(d) for d in dependant.dependencies)


def test_no_route_takes_the_whole_services_object() -> None:
    routes = _routes()
    assert len(routes) > 50
    wide = [name for name, dependant in routes for d in dependant.dependencies if d.call is get_services]
    assert wide == [], "take the narrow dependencies of api/deps.py instead"


def test_every_narrow_dependency_rests_on_the_services() -> None:
    getters = [v for k, v in vars(deps).items() if k.startswith("get_") and v is not get_services]
    assert len(getters) >= 15
    routes = _routes()
    seen = set()
    for _name, dependant in routes:
        for d in dependant.dependencies:
            if d.call in getters:
                seen.add(d.call)
                assert _rests_on_services(d), d.call
    assert seen, "no route takes a narrow dependency"


PACKAGE = Path(__file__).resolve().parents[2] / "src" / "careerwise"
# the app's lifespan sets it; get_services is the dependency every narrow one rests on; an exception
# handler and the request-counting middleware run outside dependency injection
READS_THE_LOCATOR = {"app.py", "api/deps.py", "api/errors.py", "api/metrics.py"}


def _reads_state_services(tree: ast.AST) -> bool:
    """``<x>.state.services``, or ``getattr(<x>.state, "services", ...)``."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "services"
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "state"
        ):
            return True
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value == "services"
        ):
            return True
    return False


def test_only_the_dependency_and_what_runs_outside_it_read_the_services_on_app_state() -> None:
    readers = {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if _reads_state_services(ast.parse(path.read_text(encoding="utf-8")))
    }
    assert "api/deps.py" in readers  # the scan finds what it looks for
    assert readers <= READS_THE_LOCATOR, "hand the code what it uses (the LINE channel: api/line.py)"
    assert not any(r.startswith("channels/") or r == "api/line.py" for r in readers)
