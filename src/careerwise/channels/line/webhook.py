"""LINE webhook requests: the ``X-Line-Signature`` check (base64 HMAC-SHA256 of the raw body under the
channel secret, compared in constant time) and the parsing of a verified body into events.

Nothing here touches the database or the LINE API: a body is checked before anything is parsed, and
events that do not parse are logged and skipped.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

# the package's one logger: operators and tests select the LINE channel's records by this name
log = logging.getLogger("careerwise.channels.line")

SIGNATURE_HEADER = "X-Line-Signature"


# --------------------------------------------------------------------------- signatures


def signature(secret: str, body: bytes) -> str:
    """The ``X-Line-Signature`` LINE sends with ``body``: base64 of its HMAC-SHA256 under the secret."""
    digest = hmac.new(secret.encode("utf-8"), body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode("ascii")


def verify_signature(secret: str, body: bytes, header: str | None) -> bool:
    """Constant-time check of a request's signature header against the raw body."""
    if not header:
        return False
    expected = signature(secret, body).encode("ascii")
    try:
        given = header.encode("latin-1")  # how HTTP header bytes arrive as str; anything else is forged
    except UnicodeEncodeError:
        return False
    return hmac.compare_digest(expected, given)


# --------------------------------------------------------------------------- webhook bodies

LineId = Annotated[str, StringConstraints(min_length=1, max_length=59, pattern=r"^[A-Za-z0-9_-]+$")]


class _Lenient(BaseModel):
    """LINE's own (camelCase) field names; unknown fields are ignored, as LINE adds new ones."""

    model_config = ConfigDict(extra="ignore", frozen=True)


class WebhookSource(_Lenient):
    type: str
    userId: LineId | None = None
    groupId: LineId | None = None
    roomId: LineId | None = None

    @property
    def chat_key(self) -> str | None:
        """The chat a message belongs to, and where a push goes: the user, or the group or room."""
        match self.type:
            case "user":
                return self.userId
            case "group":
                return self.groupId
            case "room":
                return self.roomId
        return None


class WebhookMessage(_Lenient):
    type: str
    id: str | None = None
    text: str | None = None


class DeliveryContext(_Lenient):
    isRedelivery: bool = False


class WebhookEvent(_Lenient):
    type: Annotated[str, StringConstraints(min_length=1, max_length=40)]
    webhookEventId: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    mode: str = "active"
    timestamp: int | None = None
    replyToken: str | None = None
    source: WebhookSource | None = None
    message: WebhookMessage | None = None
    deliveryContext: DeliveryContext = Field(default_factory=DeliveryContext)


class InvalidWebhookError(ValueError):
    """A signed body that is not a LINE webhook body."""


def parse_webhook(body: bytes) -> list[WebhookEvent]:
    """The events of a (verified) webhook body. Events that do not parse are logged and skipped; a body
    that is not ``{"events": [...]}`` raises ``InvalidWebhookError``."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise InvalidWebhookError("the body is not valid JSON") from exc
    if not isinstance(data, dict) or not isinstance(data.get("events"), list):
        raise InvalidWebhookError("the body has no list of events")
    events: list[WebhookEvent] = []
    for raw in data["events"]:
        try:
            events.append(WebhookEvent.model_validate(raw))
        except ValidationError as exc:
            log.warning(
                "line channel: skipped an event that does not parse: %s", exc.errors(include_input=False)
            )
    return events
