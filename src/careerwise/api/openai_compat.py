"""An OpenAI-compatible face: ``POST /v1/chat/completions`` (streaming or not) and ``GET /v1/models``.

Each enabled assistant is a model named by its id (``summer``, the default, and any an admin created);
the request's ``model`` picks who answers. Any OpenAI client can talk to them with a key that an admin
issued (``careerwise apikeys create``). What the request carries and what comes back (docs/channels.md):

- ``model`` names the assistant: unknown -> 404 ``model_not_found`` (no silent fall-back to Summer: a
  typo would otherwise answer with another persona), disabled -> 409 ``model_disabled``, as the web API;
- the last ``user`` message is the question; earlier ``user``/``assistant`` messages are the history;
  ``system``/``developer`` messages are ignored (the persona is the assistant's), and so are ``tools``;
- the content is the answer (Markdown), then a report if the turn made one, then the knowledge-base
  sources as a short list (``參考資料：`` / ``Sources:``);
- an extra top-level field ``careerwise`` carries the structure: trace id, route, sources, the tool
  calls (name and effective arguments only), report, degraded notices, error. When streaming, the
  deltas are ``chat.completion.chunk`` objects and the final chunk carries ``careerwise``;
- nothing internal leaks: no system prompt, no passage text, no tool messages.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from careerwise import prompts
from careerwise.api._sse import EventStreamResponse
from careerwise.api.chat import MAX_CHARS
from careerwise.api.deps import AssistantSettingsDep, DatabaseDep, EngineDep
from careerwise.api.error_models import OpenAIError, errors
from careerwise.assistant_settings import SettingsStore
from careerwise.assistants import AssistantProfile
from careerwise.channels.apikeys import authenticate
from careerwise.channels.text import sources_block
from careerwise.engine import HistoryItem, TurnRequest
from careerwise.errors import ConflictError, NotFoundError, RateLimitedError, UserInputError
from careerwise.events import DeltaEvent, Event
from careerwise.reply import TurnReply
from careerwise.reports import report_text
from careerwise.store import ApiKey, Database

router = APIRouter(tags=["openai-compatible"])

MAX_MESSAGES = 400


# --------------------------------------------------------------------------- errors in OpenAI's shape


def openai_error(
    status: int,
    message: str,
    *,
    type_: str = "invalid_request_error",
    code: str | None = None,
    param: str | None = None,
    extra: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body: dict[str, Any] = {"error": {"message": message, "type": type_, "param": param, "code": code}}
    if extra:
        body.update(extra)
    return JSONResponse(body, status_code=status, headers=headers)


async def _authorize(request: Request, db: Database) -> ApiKey | JSONResponse:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    token = token.strip()
    challenge = {"WWW-Authenticate": "Bearer"}
    if scheme.lower() != "bearer" or not token:
        return openai_error(
            401,
            "You didn't provide an API key. Send it as 'Authorization: Bearer cw_...'; "
            "an admin issues keys with 'careerwise apikeys create'.",
            code="missing_api_key",
            headers=challenge,
        )
    key = await authenticate(db, token)
    if key is None:
        return openai_error(
            401, "Incorrect or revoked API key provided.", code="invalid_api_key", headers=challenge
        )
    return key


# --------------------------------------------------------------------------- models


def _model_card(profile: AssistantProfile) -> dict[str, Any]:
    # ``name`` is not in OpenAI's model object; clients ignore it, some chat front-ends show it
    return {
        "id": profile.id,
        "object": "model",
        "created": int(profile.created_at.timestamp()),
        "owned_by": "careerwise",
        "name": profile.name,
    }


async def _serving(settings: SettingsStore) -> list[AssistantProfile]:
    """The models: the enabled assistants, read fresh (an admin's change shows on the next request)."""
    return [p for p in await settings.assistants.list() if p.enabled]


@router.get("/v1/models", responses=errors(401, model=OpenAIError))
async def list_models(request: Request, db: DatabaseDep, settings: AssistantSettingsDep) -> JSONResponse:
    key = await _authorize(request, db)
    if isinstance(key, JSONResponse):
        return key
    return JSONResponse({"object": "list", "data": [_model_card(p) for p in await _serving(settings)]})


@router.get("/v1/models/{model}", responses=errors(401, 404, model=OpenAIError))
async def get_model(
    model: str, request: Request, db: DatabaseDep, settings: AssistantSettingsDep
) -> JSONResponse:
    key = await _authorize(request, db)
    if isinstance(key, JSONResponse):
        return key
    for profile in await _serving(settings):
        if profile.id == model:
            return JSONResponse(_model_card(profile))
    return _no_such_model(model)  # a disabled assistant is not listed, so it is not found here either


def _no_such_model(model: str) -> JSONResponse:
    return openai_error(
        404,
        f"The model '{model}' does not exist. The models are this server's enabled assistants "
        "(GET /v1/models); the default is 'summer'.",
        code="model_not_found",
        param="model",
    )


def _disabled_model(model: str) -> JSONResponse:
    return openai_error(
        409, f"The model '{model}' is a disabled assistant.", code="model_disabled", param="model"
    )


# --------------------------------------------------------------------------- the request


class _Open(BaseModel):
    # unknown fields are allowed (OpenAI clients send many this endpoint ignores); known ones are strict:
    # a value of the wrong JSON type is refused, never coerced, as OpenAI's own API refuses it
    model_config = ConfigDict(extra="allow", strict=True)


class ContentPart(_Open):
    type: str
    text: str | None = None


class ChatMessageIn(_Open):
    role: str
    content: str | list[ContentPart] | None = None


class StreamOptions(_Open):
    include_usage: bool = False


class ChatCompletionIn(_Open):
    model: str = Field(max_length=256)  # an assistant id; echoed in errors, so bounded
    messages: list[ChatMessageIn] = Field(min_length=1, max_length=MAX_MESSAGES)
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    n: int | None = None


def _text(content: str | list[ContentPart] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(p.text for p in content if p.type == "text" and p.text)


# what this endpoint appends to an answer; stripped when a client sends the answer back as history
_SOURCES_TAIL = re.compile(r"\n*(?:參考資料：|Sources:)\n(?:- [^\n]*(?:\n|$))+\s*$")


def _turn(body: ChatCompletionIn, key: ApiKey) -> TurnRequest | JSONResponse:
    users = [i for i, m in enumerate(body.messages) if m.role == "user"]
    if not users:
        return openai_error(400, "messages must contain at least one 'user' message.", param="messages")
    last = users[-1]
    question = _text(body.messages[last].content)
    history: list[HistoryItem] = []
    for m in body.messages[:last]:
        if m.role not in ("user", "assistant"):
            continue  # system / developer / tool messages: the persona and the tools are the assistant's own
        content = _text(m.content)
        if m.role == "assistant":
            content = _SOURCES_TAIL.sub("", content)
        if content.strip():
            history.append(HistoryItem(m.role, content[: MAX_CHARS * 4]))
    return TurnRequest(
        message=question,
        history=history,
        channel="openai",
        user_id=f"apikey:{key.id}",
        assistant=body.model,
    )


def _validation_message(exc: ValidationError) -> tuple[str, str | None]:
    err = exc.errors(include_input=False)[0]
    loc = ".".join(str(p) for p in err.get("loc", ()))
    return f"{loc or 'body'}: {err.get('msg')}", (loc or None)


# --------------------------------------------------------------------------- the answer


def careerwise_field(reply: TurnReply) -> dict[str, Any]:
    """The structure behind the text: what an OpenAI client can read beside ``choices``."""
    calls = []
    for call in reply.tool_calls:
        result = reply.result_of(call)
        calls.append(
            {
                "name": call.name,
                "arguments": call.effective_arguments,
                "ok": result.ok if result is not None else None,
                "returned": result.returned if result is not None else None,
            }
        )
    return {
        "trace_id": reply.trace_id,
        "conversation_id": reply.conversation_id,
        "status": reply.status,
        "path": reply.path,
        "route": reply.route.model_dump(mode="json") if reply.route is not None else None,
        "sources": [source.model_dump(mode="json") for source in reply.sources()],
        "tool_calls": calls,
        "report": reply.report.model_dump(mode="json") if reply.report is not None else None,
        "degraded": [{"reason": d.reason, "message": d.message} for d in reply.degraded],
        "error": reply.error.model_dump(mode="json") if reply.error is not None else None,
    }


def _tail(reply: TurnReply, zh: bool) -> str:
    """What follows the streamed answer: a report, then the sources."""
    parts: list[str] = []
    if reply.report is not None:
        parts.append(report_text(reply.report, zh, markdown=True))
    sources = reply.sources()
    if sources:
        parts.append(sources_block(sources, zh, markdown=True))
    return "\n\n".join(parts)


def _usage(reply: TurnReply) -> dict[str, int]:
    prompt = int(reply.usage.get("prompt_tokens", 0))
    completion = int(reply.usage.get("completion_tokens", 0))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _failure(reply: TurnReply, extra: dict[str, Any], model: str) -> dict[str, Any]:
    err = reply.error
    return {
        "error": {
            "message": (err.message if err is not None else "") or f"The model '{model}' could not answer.",
            "type": "api_error",
            "param": None,
            "code": (err.code if err is not None else "") or "internal_error",
        },
        "careerwise": extra,
    }


def _sse(obj: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n\n"


@router.post(
    "/v1/chat/completions",
    responses={
        200: {"content": {"application/json": {}, "text/event-stream": {}}},
        **errors(400, 401, 404, 409, 429, 502, model=OpenAIError),
        **errors(413),  # the body limit answers before the route, in the app's envelope
    },
    response_model=None,
)
async def chat_completions(request: Request, db: DatabaseDep, engine: EngineDep) -> Response:
    key = await _authorize(request, db)
    if isinstance(key, JSONResponse):
        return key
    try:
        body = ChatCompletionIn.model_validate(json.loads(await request.body()))
    except (ValueError, RecursionError) as exc:
        if isinstance(exc, ValidationError):
            message, param = _validation_message(exc)
            return openai_error(400, message, param=param)
        return openai_error(400, "We could not parse the JSON body of your request.")
    if body.n not in (None, 1):
        return openai_error(400, "Only n=1 is supported.", param="n")
    turn = _turn(body, key)
    if isinstance(turn, JSONResponse):
        return turn
    model = body.model  # the assistant, checked by the engine before anything is stored
    gen = engine.run(turn)
    try:
        first = await gen.__anext__()  # after validation and storage: input errors are a 400 here
    except NotFoundError:  # no conversation is named here, so it is the assistant that is unknown
        return _no_such_model(model)
    except ConflictError:  # a disabled assistant (before UserInputError: it is one)
        return _disabled_model(model)
    except RateLimitedError as exc:  # the key's daily token budget, in OpenAI's 429 shape
        return openai_error(
            429,
            str(exc),
            type_="rate_limit_error",
            code=exc.code,
            headers={"Retry-After": str(exc.retry_after)},
        )
    except UserInputError as exc:
        return openai_error(400, str(exc), param="messages", code=exc.code)
    zh = prompts.is_chinese(turn.message)
    completion_id = f"chatcmpl-{uuid.uuid4().hex}"
    created = int(time.time())

    if not body.stream:
        events: list[Event] = [first]
        async for e in gen:
            events.append(e)
        reply = TurnReply.from_events(events)
        extra = careerwise_field(reply)
        if reply.status == "error":
            return JSONResponse(_failure(reply, extra, model), status_code=502)
        content = "\n\n".join(p for p in (reply.answer.strip(), _tail(reply, zh)) if p)
        return JSONResponse(
            {
                "id": completion_id,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content, "refusal": None},
                        "logprobs": None,
                        "finish_reason": "stop",
                    }
                ],
                "usage": _usage(reply),
                "careerwise": extra,
            }
        )

    include_usage = bool(body.stream_options and body.stream_options.include_usage)

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        return _sse(
            {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
                **extra,
            }
        )

    async def stream() -> AsyncIterator[bytes]:
        yield chunk({"role": "assistant", "content": ""})
        events: list[Event] = []
        shown = False

        async def all_events() -> AsyncIterator[Event]:
            yield first
            async for e in gen:
                yield e

        async for e in all_events():
            events.append(e)
            if isinstance(e, DeltaEvent) and e.text:
                shown = True
                yield chunk({"content": e.text})
        reply = TurnReply.from_events(events)
        extra = careerwise_field(reply)
        if reply.status == "error":
            # the error chunk, then the end every stream has: a client that reads to [DONE] sees the end
            # (the OpenAI clients raise the error chunk as an APIError before they get there)
            yield _sse(_failure(reply, extra, model))
            yield b"data: [DONE]\n\n"
            return
        tail = _tail(reply, zh)
        if tail:
            yield chunk({"content": ("\n\n" if shown else "") + tail})
        yield chunk({}, "stop", careerwise=extra)
        if include_usage:
            yield _sse(
                {
                    "id": completion_id,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [],
                    "usage": _usage(reply),
                }
            )
        yield b"data: [DONE]\n\n"

    # the same headers as StreamingResponse sent, without its anyio task group a request (api/_sse.py)
    return EventStreamResponse(stream())
