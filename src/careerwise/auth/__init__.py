"""Accounts: argon2id passwords, server-side sessions behind signed cookies."""

from careerwise.auth.passwords import hash_password, verify_password
from careerwise.auth.service import WRONG_CREDENTIALS, AccountService, normalise_email

__all__ = ["WRONG_CREDENTIALS", "AccountService", "hash_password", "normalise_email", "verify_password"]
