"""Accounts: sign-up, log-in (one message for every failure), server-side sessions behind signed cookies."""

from __future__ import annotations

import asyncio
import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from itsdangerous import BadSignature, TimestampSigner
from sqlalchemy import bindparam, select

from careerwise.auth.passwords import MAX_PASSWORD, MIN_PASSWORD, hash_password, needs_rehash, verify_password
from careerwise.errors import AuthenticationError, ConflictError, UserInputError
from careerwise.store import Database, LoginSession, User, as_utc

# deliberately loose: one @, something on each side, a dot in the domain; the mailbox is the real test
_EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]+\.[^@\s]{2,}$")
WRONG_CREDENTIALS = "the email or the password is wrong"
# every request with a cookie runs this: built once (a statement object remembers its cache key)
_RESOLVE = (
    select(User, LoginSession.revoked_at, LoginSession.expires_at)
    .join(LoginSession, LoginSession.user_id == User.id)
    .where(LoginSession.id == bindparam("session_id"))
)


def normalise_email(email: str) -> str:
    email = email.strip().lower()
    if len(email) > 254 or not _EMAIL.match(email):
        raise UserInputError("that does not look like an email address")
    return email


def check_password(password: str) -> None:
    if len(password) < MIN_PASSWORD:
        raise UserInputError(f"the password needs at least {MIN_PASSWORD} characters")
    if len(password) > MAX_PASSWORD:
        raise UserInputError(f"the password may have at most {MAX_PASSWORD} characters")


def _token_id(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass
class AccountService:
    db: Database
    secret: str
    max_age: timedelta = timedelta(days=14)

    def __post_init__(self) -> None:
        self._signer = TimestampSigner(self.secret, salt="careerwise.session")

    async def create_user(
        self, *, email: str, password: str, display_name: str = "", role: str = "user"
    ) -> User:
        email = normalise_email(email)
        check_password(password)
        if role not in ("user", "admin"):
            raise UserInputError("role must be 'user' or 'admin'")
        hashed = await asyncio.to_thread(hash_password, password)
        async with self.db.session() as s, s.begin():
            if await s.scalar(select(User.id).where(User.email == email)) is not None:
                raise ConflictError("an account with that email already exists; log in instead")
            user = User(email=email, password_hash=hashed, display_name=display_name.strip()[:80], role=role)
            s.add(user)
        return user

    async def authenticate(self, *, email: str, password: str) -> User:
        """The user, or AuthenticationError with the same message whether the email or the password was
        wrong (and the same argon2 cost: an unknown email is verified against a dummy hash)."""
        try:
            email = normalise_email(email)
        except UserInputError:
            email = ""
        async with self.db.session() as s:
            user = await s.scalar(select(User).where(User.email == email)) if email else None
        ok = await asyncio.to_thread(verify_password, user.password_hash if user else None, password)
        if user is None or not ok:
            raise AuthenticationError(WRONG_CREDENTIALS)
        async with self.db.session() as s, s.begin():
            row = await s.get(User, user.id)
            if row is not None:
                row.last_login_at = datetime.now(UTC)
                if needs_rehash(row.password_hash):
                    row.password_hash = await asyncio.to_thread(hash_password, password)
        return user

    async def open_session(self, user: User) -> str:
        """A new session; returns the cookie value (the signed token)."""
        token = secrets.token_urlsafe(32)
        now = datetime.now(UTC)
        async with self.db.session() as s, s.begin():
            s.add(
                LoginSession(
                    id=_token_id(token), user_id=user.id, created_at=now, expires_at=now + self.max_age
                )
            )
        return self._signer.sign(token).decode()

    def _token(self, cookie: str) -> str | None:
        try:
            return self._signer.unsign(cookie, max_age=int(self.max_age.total_seconds())).decode()
        except BadSignature:  # also SignatureExpired
            return None

    async def resolve(self, cookie: str | None) -> User | None:
        """The user a session cookie belongs to, or None (bad signature, expired, revoked, unknown)."""
        token = self._token(cookie) if cookie else None
        if token is None:
            return None
        # one round trip: the session row and its user together, read fresh on every request (never
        # cached), so a session revoked by a log-out in any process is refused from the next request on
        async with self.db.session(autocommit=True) as s:
            found = (await s.execute(_RESOLVE, {"session_id": _token_id(token)})).first()
        if found is None:
            return None
        user, revoked_at, expires_at = found
        if revoked_at is not None or as_utc(expires_at) <= datetime.now(UTC):
            return None
        return user

    async def close_session(self, cookie: str | None) -> None:
        token = self._token(cookie) if cookie else None
        if token is None:
            return
        async with self.db.session() as s, s.begin():
            row = await s.get(LoginSession, _token_id(token))
            if row is not None and row.revoked_at is None:
                row.revoked_at = datetime.now(UTC)
