"""Sending to LINE through line-bot-sdk: an answer goes out with the event's reply token, or is pushed
(one ``X-Line-Retry-Key`` for every attempt, so it is delivered at most once) when the token can no longer
be used; a slow turn shows the chat's loading animation.

:class:`LineDelivery` is the sending half of :class:`~careerwise.channels.line.worker.LineChannel`, which
owns the API client it uses.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING

from careerwise.channels.line.webhook import WebhookEvent
from careerwise.errors import LinePushError

if TYPE_CHECKING:
    from linebot.v3.messaging import AsyncMessagingApi, TextMessage

# The LINE SDK (and aiohttp under it) is imported where it is used, not here: a serving process without a
# LINE channel configured never holds its memory (a test keeps it unloaded: test_memory_serving.py).

# the package's one logger: operators and tests select the LINE channel's records by this name
log = logging.getLogger("careerwise.channels.line")

TEXT_LIMIT = 5000  # characters (UTF-16 units) in one text message
MESSAGES_PER_REPLY = 5


def _describe(exc: BaseException) -> str:
    from linebot.v3.messaging.exceptions import ApiException

    if isinstance(exc, ApiException):
        return f"HTTP {exc.status}: {str(exc.body or exc.reason)[:300]}"
    return f"{type(exc).__name__}: {exc}"


class LineDelivery:
    """Reply, push and the loading animation, over the channel's ``api`` client."""

    api: AsyncMessagingApi
    request_timeout: float
    loading_after: float

    async def _loading_later(self, user_id: str) -> None:
        """After ``loading_after`` seconds without an answer, show the chat's loading animation."""
        import aiohttp
        from linebot.v3.messaging import ShowLoadingAnimationRequest
        from linebot.v3.messaging.exceptions import ApiException

        await asyncio.sleep(self.loading_after)
        try:
            await self.api.show_loading_animation(
                ShowLoadingAnimationRequest(chat_id=user_id, loading_seconds=60),
                _request_timeout=self.request_timeout,
            )
        except (ApiException, aiohttp.ClientError, TimeoutError) as exc:
            log.warning("line channel: the loading animation could not be shown: %s", _describe(exc))

    async def _deliver(self, event: WebhookEvent, chat_key: str, texts: list[str]) -> str:
        import aiohttp
        from linebot.v3.messaging import ReplyMessageRequest, TextMessage
        from linebot.v3.messaging.exceptions import ApiException

        messages = [TextMessage(text=t) for t in texts[:MESSAGES_PER_REPLY]]
        if event.replyToken:
            try:
                await self.api.reply_message(
                    ReplyMessageRequest(reply_token=event.replyToken, messages=messages),
                    _request_timeout=self.request_timeout,
                )
                return "reply"
            except (ApiException, aiohttp.ClientError, TimeoutError) as exc:
                # most often the token expired (a slow turn) or was used: push instead
                log.warning("line channel: reply failed (%s); pushing the answer instead", _describe(exc))
        await self._push(chat_key, messages)
        return "push"

    async def _push(self, to: str, messages: list[TextMessage], attempts: int = 3) -> None:
        """Push with one retry key for every attempt, so a retried push is delivered at most once."""
        import aiohttp
        from linebot.v3.messaging import PushMessageRequest
        from linebot.v3.messaging.exceptions import ApiException

        retry_key = str(uuid.uuid4())
        last: BaseException | None = None
        for attempt in range(attempts):
            try:
                await self.api.push_message(
                    PushMessageRequest(to=to, messages=messages),
                    x_line_retry_key=retry_key,
                    _request_timeout=self.request_timeout,
                )
                return
            except ApiException as exc:
                if exc.status == 409:  # LINE accepted this retry key already: the message went out
                    return
                if exc.status is not None and exc.status < 500 and exc.status != 429:
                    raise LinePushError(f"push refused: {_describe(exc)}") from exc
                last = exc
            except (aiohttp.ClientError, TimeoutError) as exc:
                last = exc
            if attempt + 1 < attempts:
                await asyncio.sleep(0.5 * 2**attempt)
        assert last is not None
        raise LinePushError(f"push failed {attempts} times: {_describe(last)}") from last
