"""API keys for the OpenAI-compatible endpoint: issued and revoked by an admin (``careerwise apikeys``).

A key is ``cw_`` and 43 random URL-safe characters (256 bits). Only its SHA-256 is stored, with the first
characters (``prefix``) so that an admin can tell keys apart; the key itself is shown once, when created.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime, timedelta

from careerwise.errors import NotFoundError, UserInputError
from careerwise.store import ApiKey, Database, as_utc
from careerwise.store.apikeys import ApiKeyStore

TOKEN_PREFIX = "cw_"
SHOWN_PREFIX = 10  # "cw_" and 7 characters
MAX_TOKEN_CHARS = 200
_TOUCH_EVERY = timedelta(minutes=1)  # last_used_at is written at most this often per key


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


async def create_key(db: Database, name: str) -> tuple[ApiKey, str]:
    """A new key: the stored row and the token, which is not stored anywhere."""
    name = name.strip()
    if not name or len(name) > 120:
        raise UserInputError("a key needs a name of 1 to 120 characters (who or what uses it)")
    token = new_token()
    key = ApiKey(name=name, prefix=token[:SHOWN_PREFIX], key_hash=hash_token(token))
    return await ApiKeyStore(db).add(key), token


async def list_keys(db: Database, *, include_revoked: bool = True) -> list[ApiKey]:
    return await ApiKeyStore(db).all(include_revoked=include_revoked)


async def revoke_key(db: Database, ident: str) -> ApiKey:
    """Revoke the key with this id (or this shown prefix, if only one key has it). Revoking twice is fine."""
    ident = ident.strip()
    if not ident:
        raise UserInputError("give the key's id or prefix")

    def one(found: list[ApiKey]) -> None:
        if not found:
            raise NotFoundError(f"no API key has the id or prefix {ident!r}")
        if len(found) > 1:
            raise UserInputError(f"{len(found)} keys have the prefix {ident!r}; use the id")

    return await ApiKeyStore(db).revoke(ident, datetime.now(UTC), check=one)


async def authenticate(db: Database, token: str | None) -> ApiKey | None:
    """The active key this token belongs to, or None (missing, malformed, unknown or revoked)."""
    if not token or not token.startswith(TOKEN_PREFIX) or len(token) > MAX_TOKEN_CHARS:
        return None
    digest = hash_token(token)

    def touch(key: ApiKey) -> datetime | None:
        now = datetime.now(UTC)
        last = key.last_used_at
        return now if last is None or now - as_utc(last) > _TOUCH_EVERY else None

    return await ApiKeyStore(db).use(digest, touch=touch)
