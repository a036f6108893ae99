"""Password hashing: argon2id with OWASP's recommended minimum (19 MiB, 2 passes, 1 lane)."""

from __future__ import annotations

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

MIN_PASSWORD = 8  # NIST SP 800-63B: at least 8; no composition rules
MAX_PASSWORD = 256

# OWASP Password Storage Cheat Sheet: argon2id, m=19456 KiB, t=2, p=1
_HASHER = PasswordHasher(time_cost=2, memory_cost=19456, parallelism=1)
# verified against when the email is unknown, so both failures cost the same time
_DUMMY = _HASHER.hash("not a real password, only here to spend the same time")


def hash_password(password: str) -> str:
    return _HASHER.hash(password)


def verify_password(stored: str | None, password: str) -> bool:
    """True when ``password`` matches ``stored``; with ``stored`` None, spends the same time and says no."""
    try:
        return _HASHER.verify(stored or _DUMMY, password) and stored is not None
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def needs_rehash(stored: str) -> bool:
    return _HASHER.check_needs_rehash(stored)
