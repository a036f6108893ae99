"""The name and contact a booking is made under: checked here, once, for the API, the chat and the CLI."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from careerwise.booking.errors import InvalidBookingError

MAX_NAME = 80
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_EMAIL = re.compile(
    rf"^(?P<local>[A-Za-z0-9!#$%&'*+/=?^_`{{|}}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{{|}}~-]+)*)"
    rf"@(?P<domain>(?:{_LABEL}\.)+[A-Za-z]{{2,63}})$"
)
# LINE IDs: 4-20 of a-z 0-9 . _ - (LINE stores them in lower case); "@" starts an official account's ID.
# Accepted with or without a "LINE:" / "LINE ID " prefix.
_LINE = re.compile(r"^(?:line\s*(?:id)?\s*[:：]?\s*)?(?P<id>@?[a-z0-9._-]{4,20})$", re.I)


@dataclass(frozen=True)
class Contact:
    kind: Literal["email", "line"]
    value: str

    def display(self) -> str:
        return self.value if self.kind == "email" else f"LINE: {self.value}"


def parse_contact(raw: str) -> Contact:
    text = unicodedata.normalize("NFKC", raw).strip()
    if not text:
        raise InvalidBookingError("contact must not be empty: give an email address or a LINE ID")
    if len(text) > 254:
        raise InvalidBookingError("contact is longer than 254 characters")
    if "@" in text.lstrip("@") or text.lower().startswith("mailto:"):
        address = text.removeprefix("mailto:")
        m = _EMAIL.match(address)
        if m is None or len(m.group("local")) > 64:
            raise InvalidBookingError(f"{raw.strip()!r} is not a valid email address")
        return Contact("email", f"{m.group('local')}@{m.group('domain').lower()}")
    m = _LINE.match(text)
    if m is None:
        raise InvalidBookingError(
            f"{raw.strip()!r} is neither an email address nor a LINE ID "
            "(4-20 letters, digits, '.', '_' or '-', e.g. 'LINE: summer.coach')"
        )
    return Contact("line", m.group("id").lower())


def parse_name(raw: str) -> str:
    name = " ".join(unicodedata.normalize("NFKC", raw).split())
    if not name:
        raise InvalidBookingError("name must not be empty")
    if len(name) > MAX_NAME:
        raise InvalidBookingError(f"name is {len(name)} characters; the limit is {MAX_NAME}")
    if any(unicodedata.category(c).startswith("C") for c in name):
        raise InvalidBookingError("name must not contain control characters")
    if not any(c.isalpha() for c in name):
        raise InvalidBookingError("name must contain letters")
    return name
