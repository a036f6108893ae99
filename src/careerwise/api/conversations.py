"""Conversations and messages for the chat page.

Who may see what:

* a logged-in user's conversations (``user_id`` set) belong to that user alone; anyone else gets 404,
  the same answer as for an id that does not exist, so ids cannot be probed;
* an anonymous conversation (``user_id`` NULL) is open to whoever holds its id: 32 random hex digits
  the anonymous page keeps in ``sessionStorage`` only, so its history does not follow the visitor to
  another browser or tab;
* only web conversations are served here: LINE chats and API turns have no owner on this site.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, Response
from pydantic import BaseModel, Field

from careerwise.api._message_views import MessageOut, message_views
from careerwise.api._strict import REQUEST_MODEL
from careerwise.api.auth import CurrentUser, OptionalUser, client_ip
from careerwise.api.deps import ConversationsDep, LimitersDep, SettingsDep
from careerwise.api.error_models import errors
from careerwise.errors import NotFoundError
from careerwise.store import Conversation, User, as_utc
from careerwise.store.conversations import ConversationStore

router = APIRouter(tags=["conversations"])

HexId = Annotated[str, Path(pattern=r"^[0-9a-f]{32}$", description="32 lower-case hex digits")]
WEB = "web"


class ConversationOut(BaseModel):
    id: str
    title: str
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, conv: Conversation) -> ConversationOut:
        return cls(
            id=conv.id,
            title=conv.title,
            created_at=as_utc(conv.created_at),
            updated_at=as_utc(conv.updated_at),
        )


class ConversationList(BaseModel):
    conversations: list[ConversationOut]


class ConversationDetail(ConversationOut):
    messages: list[MessageOut]


class NewConversation(BaseModel):
    model_config = REQUEST_MODEL
    title: str = Field(default="", max_length=200)


def _visible(conv: Conversation | None, user: User | None) -> bool:
    if conv is None or conv.channel != WEB:
        return False
    return conv.user_id is None or (user is not None and conv.user_id == user.id)


async def _conversation(store: ConversationStore, conversation_id: str, user: User | None) -> Conversation:
    conv = await store.get(conversation_id)
    if not _visible(conv, user):
        raise NotFoundError(f"conversation {conversation_id} does not exist")
    assert conv is not None
    return conv


@router.get("/api/conversations")
async def list_conversations(
    conversations: ConversationsDep,
    user: CurrentUser,
    limit: Annotated[int, Query(ge=1, le=200, description="How many, newest first.")] = 50,
) -> ConversationList:
    """The logged-in user's conversations, most recently active first."""
    rows = await conversations.of_user(user.id, channel=WEB, limit=limit)
    return ConversationList(conversations=[ConversationOut.of(c) for c in rows])


@router.post("/api/conversations", status_code=201, responses=errors(429))
async def create_conversation(
    body: NewConversation,
    request: Request,
    limiters: LimitersDep,
    conversations: ConversationsDep,
    user: OptionalUser,
) -> ConversationOut:
    """An empty conversation, so the page knows its id before the first answer starts (a stopped first
    answer still leaves the conversation where the page can find it)."""
    if user is None:
        await limiters.anonymous_chat.hit(f"new-conversation:{client_ip(request)}", "new conversations")
    else:
        await limiters.user_chat.hit(f"new-conversation:{user.id}", "new conversations")
    conv = await conversations.create(
        title=body.title.strip()[:200], channel=WEB, user_id=user.id if user else None
    )
    return ConversationOut.of(conv)


@router.get("/api/conversations/{conversation_id}", responses=errors(404))
async def get_conversation(
    conversation_id: HexId, conversations: ConversationsDep, user: OptionalUser
) -> ConversationDetail:
    conv = await _conversation(conversations, conversation_id, user)
    rows = await conversations.messages(conv.id)
    messages = message_views(rows, await conversations.extras(rows))
    return ConversationDetail(**ConversationOut.of(conv).model_dump(), messages=messages)


@router.delete("/api/conversations/{conversation_id}", status_code=204, responses=errors(404, 409))
async def delete_conversation(
    conversation_id: HexId, settings: SettingsDep, conversations: ConversationsDep, user: OptionalUser
) -> Response:
    """Deletes the conversation with its messages, traces and feedback (the database cascades)."""
    conv = await _conversation(conversations, conversation_id, user)
    # a turn still being written would find its rows gone; a pending message older than the turn
    # deadline is left over from a crashed process and does not block
    since = datetime.now(UTC) - timedelta(seconds=settings.resolved_turn_deadline + 30)
    await conversations.delete_unless_answering(conv.id, since=since)
    return Response(status_code=204)


@router.get("/api/messages/{message_id}", responses=errors(404))
async def get_message(message_id: HexId, conversations: ConversationsDep, user: OptionalUser) -> MessageOut:
    """One message with its server-rendered HTML (the page swaps it in when an answer is finished)."""
    message, conv = await conversations.message(message_id)
    if message is None or not _visible(conv, user):
        raise NotFoundError(f"message {message_id} does not exist")
    return message_views([message], await conversations.extras([message]))[0]
