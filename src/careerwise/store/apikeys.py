"""The API keys' rows (channels/apikeys.py issues, checks and revokes keys): each write is one
transaction of its own, and a revocation or a touch changes only the row it found."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from sqlalchemy import or_, select

from careerwise.store.db import Database
from careerwise.store.models import ApiKey

__all__ = ["ApiKeyStore"]


class ApiKeyStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def add(self, key: ApiKey) -> ApiKey:
        async with self.db.session() as s, s.begin():
            s.add(key)
        return key

    async def all(self, *, include_revoked: bool) -> list[ApiKey]:
        """Every key (or every key not revoked), oldest first."""
        async with self.db.session() as s:
            query = select(ApiKey).order_by(ApiKey.created_at)
            if not include_revoked:
                query = query.where(ApiKey.revoked_at.is_(None))
            return list((await s.scalars(query)).all())

    async def revoke(self, ident: str, now: datetime, *, check: Callable[[list[ApiKey]], None]) -> ApiKey:
        """The one key whose id or shown prefix is ``ident``, revoked at ``now`` unless it already was.
        ``check(found)`` raises when ``found`` is not exactly one key; nothing is written then."""
        async with self.db.session() as s, s.begin():
            found = list(
                (await s.scalars(select(ApiKey).where(or_(ApiKey.id == ident, ApiKey.prefix == ident)))).all()
            )
            check(found)
            key = found[0]
            if key.revoked_at is None:
                key.revoked_at = now
        return key

    async def use(self, digest: str, *, touch: Callable[[ApiKey], datetime | None]) -> ApiKey | None:
        """The active key whose hash is ``digest``, or None (unknown or revoked). ``touch(key)`` says when
        to record as its last use (None: leave it), written in the same transaction."""
        async with self.db.session() as s, s.begin():
            key = await s.scalar(select(ApiKey).where(ApiKey.key_hash == digest))
            if key is None or key.revoked_at is not None:
                return None
            when = touch(key)
            if when is not None:
                key.last_used_at = when
        return key
