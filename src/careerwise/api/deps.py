"""FastAPI dependencies: the process's services, injected, never imported as globals."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from careerwise.services import Services


async def get_services(request: Request) -> Services:
    """``async`` on purpose (do not make it a plain ``def``): FastAPI runs a plain function dependency in
    its worker-thread pool, and this one is solved for almost every request. The hop cost the event loop
    about 0.1-0.2 ms of CPU a request and, under a burst, a wait for a free worker thread
    (docs/benchmarks.md, "The fixed work of a turn, part 2")."""
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]
