"""Accounts over HTTP: sign-up, log-in, log-out, who am I; the user dependencies; cross-site protection.

Dependencies other routes use::

    OptionalUser  -> User | None   (anonymous callers get None)
    CurrentUser   -> User          (401 when not logged in)
    AdminUser     -> User          (403 unless the role is admin)
"""

from __future__ import annotations

import json
from typing import Annotated, Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, Field
from starlette.types import ASGIApp, Receive, Scope, Send

from careerwise.api._strict import REQUEST_MODEL
from careerwise.api.deps import AccountsDep, LimitersDep, SettingsDep
from careerwise.api.error_models import errors
from careerwise.api.errors import error_body
from careerwise.config import Settings
from careerwise.errors import AuthenticationError, PermissionDeniedError
from careerwise.store import User

COOKIE = "cw_session"
_UNRESOLVED = object()
router = APIRouter(tags=["accounts"])


async def get_optional_user(request: Request, accounts: AccountsDep) -> User | None:
    cached = getattr(request.state, "user", _UNRESOLVED)
    if cached is not _UNRESOLVED:
        return cached if isinstance(cached, User) else None
    user = await accounts.resolve(request.cookies.get(COOKIE))
    request.state.user = user
    return user


OptionalUser = Annotated[User | None, Depends(get_optional_user)]


async def get_current_user(user: OptionalUser) -> User:
    if user is None:
        raise AuthenticationError("log in first")
    return user


CurrentUser = Annotated[User, Depends(get_current_user)]


async def get_admin_user(user: CurrentUser) -> User:
    if not user.is_admin:
        raise PermissionDeniedError("this needs an administrator account")
    return user


AdminUser = Annotated[User, Depends(get_admin_user)]


def client_ip(request: Request) -> str:
    return request.client.host if request.client else "unknown"


class Credentials(BaseModel):
    model_config = REQUEST_MODEL
    email: str = Field(max_length=254)
    password: str = Field(max_length=1024)


class SignUp(Credentials):
    display_name: str = Field(default="", max_length=80)


class UserOut(BaseModel):
    id: str
    email: str
    display_name: str
    role: str

    @classmethod
    def of(cls, user: User) -> UserOut:
        return cls(id=user.id, email=user.email, display_name=user.display_name, role=user.role)


def _set_cookie(response: Response, settings: Settings, value: str, max_age: int) -> None:
    """The session cookie: HTTP-only, same-site lax, and secure in production."""
    response.set_cookie(
        COOKIE,
        value,
        max_age=max_age,
        httponly=True,
        samesite="lax",
        secure=settings.environment == "production",
        path="/",
    )


@router.post("/api/auth/signup", status_code=201, responses=errors(409, 429))
async def signup(
    body: SignUp,
    request: Request,
    response: Response,
    accounts: AccountsDep,
    limiters: LimitersDep,
    settings: SettingsDep,
) -> UserOut:
    await limiters.login.hit(client_ip(request), "sign-up and log-in attempts")
    user = await accounts.create_user(
        email=body.email, password=body.password, display_name=body.display_name
    )
    cookie = await accounts.open_session(user)
    _set_cookie(response, settings, cookie, int(accounts.max_age.total_seconds()))
    return UserOut.of(user)


@router.post("/api/auth/login", responses=errors(401, 429))
async def login(
    body: Credentials,
    request: Request,
    response: Response,
    accounts: AccountsDep,
    limiters: LimitersDep,
    settings: SettingsDep,
) -> UserOut:
    await limiters.login.hit(client_ip(request), "sign-up and log-in attempts")
    # and per account, whatever the IP: guessing one account's password from many addresses is slowed
    # too (the price: someone can keep an account's owner out for the window; docs/security.md)
    await limiters.login_account.hit(
        f"account:{body.email.strip().lower()}", "log-in attempts for this account"
    )
    user = await accounts.authenticate(email=body.email, password=body.password)
    # a new session on every log-in: a cookie planted before log-in is never promoted (session fixation)
    await accounts.close_session(request.cookies.get(COOKIE))
    cookie = await accounts.open_session(user)
    _set_cookie(response, settings, cookie, int(accounts.max_age.total_seconds()))
    return UserOut.of(user)


@router.post("/api/auth/logout", status_code=204)
async def logout(request: Request, accounts: AccountsDep) -> Response:
    await accounts.close_session(request.cookies.get(COOKIE))
    response = Response(status_code=204)
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="lax")
    return response


@router.get("/api/auth/me")
async def me(user: CurrentUser) -> UserOut:
    return UserOut.of(user)


_UNSAFE = {"POST", "PUT", "PATCH", "DELETE"}


class CrossSiteGuard:
    """Refuses state-changing requests a browser sent from another site (OWASP's Fetch-Metadata and
    Origin checks). Requests without those headers come from non-browser clients (curl, the OpenAI SDK,
    LINE's servers), which cannot carry a victim's cookies, and pass."""

    def __init__(self, app: ASGIApp, *, trusted_origins: list[str] | None = None) -> None:
        self.app = app
        self.trusted = {o.rstrip("/").lower() for o in trusted_origins or []}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in _UNSAFE:
            reason = self._refusal(scope)
            if reason is not None:
                await _send_json(send, 403, error_body("cross_site_refused", reason))
                return
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope) -> str | None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        site = headers.get("sec-fetch-site", "").lower()
        if site in ("cross-site", "same-site"):
            return f"a state-changing request from another site was refused (Sec-Fetch-Site: {site})"
        origin = headers.get("origin")
        if origin is None:
            return None
        origin = origin.rstrip("/").lower()
        if origin in self.trusted:
            return None
        host = headers.get("host", "").lower()
        scheme = str(scope.get("scheme", "http")).lower()
        here = _site(scheme, host)
        if origin == "null" or here is None or _site(*_scheme_and_netloc(origin)) != here:
            return (
                f"a state-changing request from origin {origin!r} was refused; this site is {scheme}://{host}"
            )
        return None


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _scheme_and_netloc(origin: str) -> tuple[str, str]:
    parts = urlsplit(origin)
    return parts.scheme, parts.netloc


def _site(scheme: str, netloc: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) with the scheme's default port filled in; None when it cannot be read.
    An Origin matches this site only when all three agree: http://host is another origin than
    https://host (a page on the plain-HTTP site could otherwise act on the HTTPS one)."""
    if scheme not in _DEFAULT_PORTS or not netloc:
        return None
    parts = urlsplit(f"//{netloc}")
    try:
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname:
        return None
    return scheme, parts.hostname, port if port is not None else _DEFAULT_PORTS[scheme]


async def _send_json(send: Send, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": data})
