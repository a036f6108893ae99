"""Booking tokens: how an anonymous caller proves a booking is theirs, with nothing stored.

A token names a booking's reschedule chain (its origin id) with an HMAC-SHA256 of it under a key
derived from the session secret (:func:`token_key`). It is derived, not stored, so an idempotent
replay returns the same token the first response carried, and it stays valid across a reschedule.
:meth:`BookingTokens.origin_of` compares in constant time and returns None for anything malformed.
"""

from __future__ import annotations

import base64
import hashlib
import hmac


def token_key(secret: str) -> bytes:
    """The booking-token key, derived from the session secret (one secret to configure, two uses)."""
    return hmac.new(secret.encode(), b"careerwise booking tokens v1", hashlib.sha256).digest()


class BookingTokens:
    def __init__(self, key: bytes) -> None:
        self._key = key

    def token_for(self, origin_id: str) -> str:
        return f"{origin_id}.{self._mac(origin_id)}"

    def origin_of(self, token: str) -> str | None:
        origin, _, mac = token.strip().partition(".")
        if not origin or not mac or len(origin) > 32:
            return None
        return origin if hmac.compare_digest(mac, self._mac(origin)) else None

    def _mac(self, origin: str) -> str:
        digest = hmac.new(self._key, origin.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest[:24]).decode().rstrip("=")
