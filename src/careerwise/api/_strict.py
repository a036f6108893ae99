"""Request bodies are strict: a value of the wrong JSON type is refused with 422, never coerced (``true``
is not the integer 1, ``"5"`` is not 5, ``0`` is not a date).

FastAPI validates a body as Python objects (the JSON already parsed), where pydantic's strict mode would
refuse a date or a datetime given as text, which is how JSON carries them. :data:`JsonDate` and
:data:`JsonAwareDatetime` therefore take exactly that: an ISO 8601 string (or the object itself, for a
caller in Python), and nothing else.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Annotated

from pydantic import AwareDatetime, BeforeValidator, ConfigDict, Strict

REQUEST_MODEL = ConfigDict(extra="forbid", strict=True)
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_ISO_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}")


def _iso_date(value: object) -> object:
    if isinstance(value, date) or (isinstance(value, str) and _ISO_DATE.fullmatch(value)):
        return value
    raise ValueError("must be a date as an ISO 8601 string, e.g. 2026-12-02")


def _iso_datetime(value: object) -> object:
    if isinstance(value, date) or (isinstance(value, str) and _ISO_DATETIME.match(value)):
        return value
    raise ValueError(
        "must be a date and time as an ISO 8601 string with its offset, e.g. 2026-12-02T06:00:00Z"
    )


JsonDate = Annotated[date, Strict(False), BeforeValidator(_iso_date)]
JsonAwareDatetime = Annotated[AwareDatetime, Strict(False), BeforeValidator(_iso_datetime)]
