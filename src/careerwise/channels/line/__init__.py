"""The LINE bot: signed webhooks in, the same engine, answers out through the Messaging API.

The order of work for one webhook request:

1. the signature (base64 HMAC-SHA256 of the raw body with the channel secret) is checked before anything
   is parsed; a request without a valid one is refused and leaves no trace;
2. each event is stored once by its ``webhookEventId`` (a unique constraint), with the process answering
   it and the event itself until it has its outcome: a redelivery of an event that has its outcome, or
   that a live process is answering, is dropped, so it is never answered twice; a redelivery of one
   still 'received' by a process that died is answered here (careerwise.store.recovery);
3. the HTTP answer (200) goes back at once; text messages are queued per LINE chat and answered in the
   background, one turn at a time per chat, in the order they arrived;
4. a turn runs through the engine with the chat's conversation (history carries over), answered by the
   channel's assistant (``CAREERWISE_LINE_ASSISTANT``); if it is slow the chat shows LINE's loading
   animation; the answer is sent with the reply token, or pushed (with an ``X-Line-Retry-Key``) when the
   token can no longer be used.

At start-up (:meth:`LineChannel.recover`) the events a dead process left 'received' are answered again,
or, when they are older than ``reanswer_within`` or cannot be read back, the chat gets an apology
asking for the message again: every stored message gets an answer or an apology.

The assistant is checked at start-up and by every turn (an admin may create or enable it later, without a
restart). While it is unknown or disabled, every message still gets an answer — the usual "something went
wrong" line — and the cause is logged at ERROR level and counted: a misconfigured bot is never silent.

The package's jobs, one module each: ``webhook`` (the signature check and the parsing of a body),
``worker`` (:class:`LineChannel`: storing, queueing and answering events, start-up recovery) and
``delivery`` (reply, push and the loading animation through line-bot-sdk). This module re-exports what
the rest of the code imports from ``careerwise.channels.line``.
"""

from careerwise.channels.line.delivery import MESSAGES_PER_REPLY, TEXT_LIMIT, LineDelivery
from careerwise.channels.line.webhook import (
    SIGNATURE_HEADER,
    DeliveryContext,
    InvalidWebhookError,
    WebhookEvent,
    WebhookMessage,
    WebhookSource,
    parse_webhook,
    signature,
    verify_signature,
)
from careerwise.channels.line.worker import (
    ASSISTANT_UNAVAILABLE,
    BUSY,
    INTERRUPTED,
    NOT_TEXT,
    OVER_BUDGET,
    OVERFLOW,
    REANSWER_WITHIN,
    TOO_LONG,
    LineChannel,
    channel_problem,
)
from careerwise.errors import LineAssistantUnavailableError, LinePushError

__all__ = [
    "ASSISTANT_UNAVAILABLE",
    "BUSY",
    "INTERRUPTED",
    "MESSAGES_PER_REPLY",
    "NOT_TEXT",
    "OVERFLOW",
    "OVER_BUDGET",
    "REANSWER_WITHIN",
    "SIGNATURE_HEADER",
    "TEXT_LIMIT",
    "TOO_LONG",
    "DeliveryContext",
    "InvalidWebhookError",
    "LineAssistantUnavailableError",
    "LineChannel",
    "LineDelivery",
    "LinePushError",
    "WebhookEvent",
    "WebhookMessage",
    "WebhookSource",
    "channel_problem",
    "parse_webhook",
    "signature",
    "verify_signature",
]
