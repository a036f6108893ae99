"""Resume reviews as turns: an uploaded file (``POST /api/resumes``) or a resume pasted in the chat.

Both mask the contact details first, run the review chain, and store the resume as the owner's next
version with its review. An upload is a turn of its own: it is stored like a chat turn (a conversation,
the user's message — the file's name, never its text —, the assistant's report, a trace with every
event), through the engine's own bookkeeping, so traces, metrics and the conversation history treat it
like any other turn.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from careerwise import prompts
from careerwise.assistants import DEFAULT_ASSISTANT
from careerwise.errors import NotFoundError
from careerwise.events import DegradedEvent, DoneEvent, Event
from careerwise.flows.base import FlowContext
from careerwise.resume.chain import ReviewRequest, ReviewResult, review_events
from careerwise.resume.contact import ContactSummary, mask_contact
from careerwise.resume.extract import ExtractedResume, ExtractLimits, extract_resume
from careerwise.resume.store import Owner, previous_review, save_review, sha256
from careerwise.store import Conversation, Database, Resume, ResumeReview
from careerwise.untrusted import ParseWorkers

if TYPE_CHECKING:
    from careerwise.engine import Engine

log = logging.getLogger(__name__)
UPLOAD_FLOW = "resume-upload"
MAX_ROLE_CHARS = 80

_ROLE = re.compile(
    r"(?:目標職位|目標職缺|應徵職位|應徵職缺|求職目標|投遞職位|想應徵的職位)\s*[:：]\s*([^\n，。,;；]{2,40})"
    r"|(?:我想應徵|我要應徵|想投)\s*([^\n，。,;；]{2,30})"
    r"|(?i:target\s+(?:role|position|job)|position\s+applied(?:\s+for)?|applying\s+for)\s*[:：]?\s*([^\n,.;]{2,60})"
)


def target_role_in(text: str) -> str | None:
    """The role a pasted message names (「目標職位：產品經理」, "Target role: data analyst")."""
    m = _ROLE.search(text)
    if m is None:
        return None
    role = next(g for g in m.groups() if g).strip(" 「」\"'")
    return role[:MAX_ROLE_CHARS] or None


@dataclass(frozen=True)
class Upload:
    data: bytes
    filename: str | None
    target_role: str | None
    conversation_id: str | None
    user_id: str | None
    assistant: str = DEFAULT_ASSISTANT  # whose settings and trace the review turn runs under


@dataclass(frozen=True)
class Stored:
    """What the upload stored, for the API's answer (not an event: it is this endpoint's own frame)."""

    resume: Resume
    review: ResumeReview


@dataclass(frozen=True)
class Prepared:
    text: str  # masked
    digest: str  # of the text as extracted
    contact: ContactSummary


def prepare(text: str) -> Prepared:
    masked, contact = mask_contact(text)
    return Prepared(text=masked, digest=sha256(text), contact=contact)


class ResumeService:
    def __init__(self, db: Database, limits: ExtractLimits, *, workers: ParseWorkers, timeout: float) -> None:
        self.db = db
        self.limits = limits
        self.workers = workers
        self.timeout = timeout  # seconds a file's parse may take in its worker

    async def review_and_store(
        self,
        ctx: FlowContext,
        prepared: Prepared,
        *,
        owner: Owner | None,
        target_role: str | None,
        kind: str,
        filename: str | None = None,
        pages: int | None = None,
        stored: list[Stored] | None = None,
    ) -> AsyncIterator[Event]:
        """The review's events; then, when it produced a report and there is an owner, the resume and
        review saved (appended to ``stored``). A failed save is a degraded notice, never a lost report."""
        previous = await previous_review(self.db, owner, digest=prepared.digest) if owner else None
        result = ReviewResult()
        request = ReviewRequest(
            text=prepared.text,
            contact=prepared.contact,
            zh=ctx.zh,
            target_role=target_role,
            previous=previous,
        )
        async for event in review_events(ctx, request, result):
            yield event
        if result.report is None or owner is None:
            return
        try:
            resume, review = await save_review(
                self.db,
                owner=owner,
                text=prepared.text,
                digest=prepared.digest,
                kind=kind,
                filename=filename,
                pages=pages,
                contact=prepared.contact.as_dict(),
                target_role=target_role,
                result=result,
                trace_id=ctx.turn_id,
            )
        except Exception:
            log.exception("resume: the review could not be stored")
            yield DegradedEvent(
                reason="resume_not_saved",
                message=(
                    "這次的健檢結果沒有存下來，下次上傳時無法和這一版比較。"
                    if ctx.zh
                    else "This review was not saved, so the next upload cannot be compared with it."
                ),
            )
            return
        if stored is not None:
            stored.append(Stored(resume, review))

    # ----------------------------------------------------------------------- uploads

    async def extract(self, upload: Upload) -> ExtractedResume:
        # a stranger's file is parsed in a worker process with memory and time limits, never here
        return await self.workers.run(
            self.timeout,
            "the resume",
            extract_resume,
            upload.data,
            filename=upload.filename,
            limits=self.limits,
        )

    async def _conversation(self, upload: Upload) -> str | None:
        """The conversation the upload's turn goes into (None: a new one); another user's is not found."""
        if upload.conversation_id is None:
            return None
        async with self.db.session() as s:
            conv = await s.get(Conversation, upload.conversation_id)
        if conv is None or (conv.user_id is not None and conv.user_id != upload.user_id):
            raise NotFoundError(f"conversation {upload.conversation_id} does not exist")
        return conv.id

    async def review_upload(self, engine: Engine, upload: Upload) -> AsyncIterator[Event | Stored]:
        """Extract (user errors raise before the first item), then the review as a turn of the engine —
        the same storage, trace, deadline, budget and error handling as a chat turn, with the route and
        the flow named here instead of by the router: a route event, progress, the report, the stored
        resume (:class:`Stored`, just before ``done``) and ``done``."""
        from careerwise.engine import TurnRequest
        from careerwise.routing.router import RouteDecision

        extracted = await self.extract(upload)
        conversation_id = await self._conversation(upload)
        prepared = prepare(extracted.text)
        zh = prompts.is_chinese(prepared.text)
        label = (
            f"（上傳履歷：{upload.filename or '未命名'}，{extracted.chars} 字）"
            if zh
            else f"(uploaded a resume: {upload.filename or 'unnamed'}, {extracted.chars} characters)"
        )
        stored: list[Stored] = []

        async def review_flow(ctx: FlowContext) -> AsyncIterator[Event]:
            ctx.state.path = "resume"
            conv_id = ctx.conversation_id
            owner = Owner(user_id=upload.user_id) if upload.user_id else Owner(conversation_id=conv_id)
            async for event in self.review_and_store(
                ctx,
                prepared,
                owner=owner,
                target_role=upload.target_role,
                kind=extracted.kind,
                filename=upload.filename,
                pages=extracted.pages,
                stored=stored,
            ):
                yield event

        req = TurnRequest(
            message=label,
            conversation_id=conversation_id,
            user_id=upload.user_id,
            assistant=upload.assistant,
            route=RouteDecision(
                intent="resume",
                tier=None,
                layer="upload",
                reasons=["a file sent to POST /api/resumes is a resume to review"],
            ),
            flow=(UPLOAD_FLOW, review_flow),
        )
        async for event in engine.run(req):
            if isinstance(event, DoneEvent):
                for item in stored:
                    yield item
            yield event
