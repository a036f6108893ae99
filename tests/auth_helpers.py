"""Accounts for tests: create a user in the services' database and log a client in."""

from __future__ import annotations

import httpx

from careerwise.services import Services
from careerwise.store import User

PASSWORD = "correct horse battery"


async def create_user(
    services: Services, email: str, password: str = PASSWORD, *, admin: bool = False
) -> User:
    return await services.accounts.create_user(
        email=email, password=password, display_name=email.split("@")[0], role="admin" if admin else "user"
    )


async def login(client: httpx.AsyncClient, email: str, password: str = PASSWORD) -> None:
    r = await client.post("/api/auth/login", json={"email": email, "password": password})
    assert r.status_code == 200, r.text


def login_sync(client: httpx.Client, email: str, password: str = PASSWORD) -> None:
    r = client.post("/api/auth/login", json={"email": email, "password": password})
    assert r.status_code == 200, r.text
