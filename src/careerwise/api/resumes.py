"""``/api/resumes``: upload a resume for review, list your versions, delete them.

The upload is read as a stream with a cap: a ``Content-Length`` over the limit is refused before a byte
of the body is read, and a body without one is cut off (413) as soon as it passes the limit, so a 50 MB
file never sits in memory. The multipart form is parsed by Starlette's streaming parser over that capped
stream (FastAPI's ``UploadFile`` parameter would read the whole body before the endpoint runs).
Owner: the logged-in user, else the conversation (``conversation_id``; a new one is made for a first
anonymous upload and returned). The review runs as a turn of the assistant named by ``assistant`` (form
field or query; default ``summer``): unknown 404, disabled 409, checked before the file is read for text.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser

from careerwise.api.auth import OptionalUser, client_ip
from careerwise.api.deps import (
    AssistantSettingsDep,
    ConversationsDep,
    DatabaseDep,
    EngineDep,
    LimitersDep,
    ResumesDep,
)
from careerwise.api.error_models import errors
from careerwise.assistants import DEFAULT_ASSISTANT
from careerwise.errors import NotFoundError, UnsupportedMediaTypeError, UserInputError
from careerwise.events import (
    DegradedEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    ReportEvent,
    event_to_sse,
)
from careerwise.resume import Owner, ResumeService, Stored, Upload, delete_resumes, list_resumes
from careerwise.resume.extract import too_large
from careerwise.store import Resume, ResumeReview, User
from careerwise.store.conversations import ConversationStore

router = APIRouter(tags=["resumes"])
FORM_OVERHEAD = 64 * 1024  # multipart boundaries, headers and the small text fields
_CONVERSATION_ID = re.compile(r"^[0-9a-f]{32}$")
MAX_ROLE_CHARS = 200
MAX_ASSISTANT_CHARS = 64
ConversationParam = Annotated[
    str | None,
    Query(
        pattern=r"^[0-9a-f]{32}$", description="Without an account: the conversation that owns the resumes."
    ),
]

UPLOAD_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file"],
                    "properties": {
                        "file": {"type": "string", "format": "binary", "description": "PDF, DOCX or text"},
                        "target_role": {"type": "string", "maxLength": MAX_ROLE_CHARS},
                        "conversation_id": {"type": "string", "pattern": "^[0-9a-f]{32}$"},
                        "assistant": {
                            "type": "string",
                            "maxLength": MAX_ASSISTANT_CHARS,
                            "description": "Which assistant reviews it (default summer); also a query "
                            "parameter",
                        },
                    },
                }
            }
        },
    }
}


class _TooLarge(MultiPartException):
    """Raised from the capped stream inside the parser, which then closes its temporary files."""


async def _capped(request: Request, cap: int) -> AsyncGenerator[bytes, None]:
    total = 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > cap:
            raise _TooLarge(f"more than {cap} bytes")
        yield chunk


def _assistant(form_value: object, query_value: str | None) -> str:
    """The assistant named by the form field or the query (the same one if both are given)."""
    if form_value is not None and not isinstance(form_value, str):
        raise UserInputError("assistant must be text")
    named = {v.strip() for v in (form_value, query_value) if v is not None and v.strip()}
    if len(named) > 1:
        raise UserInputError("the form field and the query parameter name different assistants")
    assistant = named.pop() if named else DEFAULT_ASSISTANT
    if len(assistant) > MAX_ASSISTANT_CHARS:
        raise UserInputError(f"assistant is longer than {MAX_ASSISTANT_CHARS} characters")
    return assistant


async def read_upload(
    request: Request, resumes: ResumeService, user: User | None, assistant: str | None = None
) -> Upload:
    limit = resumes.limits.max_bytes
    content_type = request.headers.get("content-type", "")
    if not content_type.lower().startswith("multipart/form-data"):
        raise UnsupportedMediaTypeError(
            "send the resume as multipart/form-data with the file in the field 'file'"
        )
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit + FORM_OVERHEAD:
        raise too_large(int(declared), limit)  # refused before reading the body
    parser = MultiPartParser(
        request.headers,
        _capped(request, limit + FORM_OVERHEAD),
        max_files=1,
        max_fields=4,
        max_part_size=4096,
    )
    try:
        form = await parser.parse()
    except _TooLarge as exc:
        raise too_large(limit + FORM_OVERHEAD + 1, limit) from exc
    except MultiPartException as exc:
        raise UserInputError(f"the upload is not a valid multipart form: {exc.message}") from exc
    try:
        file = form.get("file")
        if not isinstance(file, UploadFile):
            raise UserInputError("the form has no file: send the resume in the field 'file'")
        data = await file.read(limit + 1)
        if len(data) > limit:
            raise too_large(file.size or len(data), limit)
        role = form.get("target_role")
        conversation_id = form.get("conversation_id")
        if role is not None and not isinstance(role, str):
            raise UserInputError("target_role must be text")
        if conversation_id is not None and (
            not isinstance(conversation_id, str) or not _CONVERSATION_ID.match(conversation_id)
        ):
            raise UserInputError("conversation_id must be 32 lower-case hex characters")
        role = role.strip() if role else None
        if role and len(role) > MAX_ROLE_CHARS:
            raise UserInputError(f"target_role is {len(role)} characters; the limit is {MAX_ROLE_CHARS}")
        return Upload(
            data=data,
            filename=(file.filename or "")[:255] or None,
            target_role=role or None,
            conversation_id=conversation_id,
            user_id=user.id if user else None,
            assistant=_assistant(form.get("assistant"), assistant),
        )
    finally:
        await form.close()


# --------------------------------------------------------------------------- views


def resume_json(resume: Resume) -> dict[str, Any]:
    return {
        "id": resume.id,
        "version": resume.version,
        "filename": resume.filename,
        "kind": resume.kind,
        "pages": resume.pages,
        "chars": resume.chars,
        "sha256": resume.sha256,
        "contact": resume.contact,
        "conversation_id": resume.conversation_id,
        "created_at": resume.created_at.isoformat(),
    }


def review_json(review: ResumeReview, *, report: bool = False) -> dict[str, Any]:
    out = {
        "id": review.id,
        "overall": review.overall,
        "scores": review.scores,
        "target_role": review.target_role,
        "structure_source": review.structure_source,
        "scoring_source": review.scoring_source,
        "degraded": review.degraded,
        "trace_id": review.trace_id,
        "created_at": review.created_at.isoformat(),
    }
    if report:
        out["report"] = review.report
    return out


def _sse(item: Event | Stored) -> bytes:
    if isinstance(item, Stored):
        payload = {"resume": resume_json(item.resume), "review": review_json(item.review)}
        return f"event: resume\ndata: {json.dumps(payload, ensure_ascii=False)}\n\n".encode()
    return event_to_sse(item)


def collect(items: list[Event | Stored]) -> dict[str, Any]:
    out: dict[str, Any] = {"resume": None, "review": None, "report": None, "degraded": [], "error": None}
    for item in items:
        if isinstance(item, Stored):
            out["resume"], out["review"] = resume_json(item.resume), review_json(item.review)
        elif isinstance(item, ReportEvent):
            out["report"] = item.model_dump(mode="json")
        elif isinstance(item, DegradedEvent):
            out["degraded"].append(item.model_dump(mode="json"))
        elif isinstance(item, ErrorEvent):
            out["error"] = item.model_dump(mode="json")
        elif isinstance(item, DoneEvent):
            out.update(
                conversation_id=item.conversation_id,
                trace_id=item.trace_id,
                message_id=item.message_id,
                status=item.status,
                usage=item.usage,
            )
    return out


async def owner_for(
    conversations: ConversationStore, user: User | None, conversation_id: str | None
) -> Owner:
    if user is not None:
        return Owner(user_id=user.id)
    if conversation_id is None:
        raise UserInputError(
            "without an account, name the conversation the resumes belong to: ?conversation_id=…"
        )
    conv = await conversations.get(conversation_id)
    if conv is None or conv.user_id is not None:
        raise NotFoundError(f"conversation {conversation_id} does not exist")
    return Owner(conversation_id=conversation_id)


# --------------------------------------------------------------------------- endpoints


@router.post(
    "/api/resumes",
    openapi_extra=UPLOAD_BODY,
    responses={
        200: {"content": {"text/event-stream": {}, "application/json": {}}},
        **errors(404, 409, 415, 429),
    },
    response_model=None,
)
async def upload_resume(
    request: Request,
    limiters: LimitersDep,
    resumes: ResumesDep,
    assistants: AssistantSettingsDep,
    engine: EngineDep,
    user: OptionalUser,
    stream: Annotated[bool, Query(description="1: Server-Sent Events instead of one JSON body")] = False,
    assistant: Annotated[
        str | None,
        Query(
            max_length=MAX_ASSISTANT_CHARS,
            description="Which assistant reviews it (default summer; or the form field 'assistant'). "
            "Unknown: 404, disabled: 409.",
        ),
    ] = None,
) -> StreamingResponse | JSONResponse:
    if user is None:
        await limiters.anonymous_chat.hit(client_ip(request), "messages without an account")
    else:
        await limiters.user_chat.hit(user.id, "messages")
    upload = await read_upload(request, resumes, user, assistant)
    if upload.assistant != DEFAULT_ASSISTANT:
        # 404/409 before the file is extracted; the engine checks again (it may be disabled meanwhile)
        await assistants.for_turn(upload.assistant)
    items = resumes.review_upload(engine, upload)
    first = await items.__anext__()  # extraction errors are raised here, before any byte is sent
    if not stream:
        collected: list[Event | Stored] = [first]
        async for item in items:
            collected.append(item)
        return JSONResponse(collect(collected))

    async def frames() -> AsyncIterator[bytes]:
        yield _sse(first)
        async for item in items:
            yield _sse(item)

    return StreamingResponse(
        frames(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@router.get("/api/resumes", responses=errors(400, 404))
async def get_resumes(
    db: DatabaseDep,
    conversations: ConversationsDep,
    user: OptionalUser,
    conversation_id: ConversationParam = None,
) -> dict[str, Any]:
    owner = await owner_for(conversations, user, conversation_id)
    rows = await list_resumes(db, owner)
    return {
        "resumes": [
            {**resume_json(r), "review": review_json(review) if review else None} for r, review in rows
        ]
    }


@router.get("/api/resumes/{resume_id}", responses=errors(400, 404))
async def get_resume(
    resume_id: str,
    db: DatabaseDep,
    conversations: ConversationsDep,
    user: OptionalUser,
    conversation_id: ConversationParam = None,
) -> dict[str, Any]:
    owner = await owner_for(conversations, user, conversation_id)
    for resume, review in await list_resumes(db, owner):
        if resume.id == resume_id:
            return {**resume_json(resume), "review": review_json(review, report=True) if review else None}
    raise NotFoundError(f"resume {resume_id} does not exist")


@router.delete("/api/resumes/{resume_id}", responses=errors(400, 404))
async def delete_resume(
    resume_id: str,
    db: DatabaseDep,
    conversations: ConversationsDep,
    user: OptionalUser,
    conversation_id: ConversationParam = None,
) -> dict[str, int]:
    owner = await owner_for(conversations, user, conversation_id)
    return {"deleted": await delete_resumes(db, owner, resume_id)}


@router.delete("/api/resumes", responses=errors(400, 404))
async def delete_all_resumes(
    db: DatabaseDep,
    conversations: ConversationsDep,
    user: OptionalUser,
    conversation_id: ConversationParam = None,
) -> dict[str, int]:
    owner = await owner_for(conversations, user, conversation_id)
    return {"deleted": await delete_resumes(db, owner)}
