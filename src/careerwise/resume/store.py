"""Stored resumes and reviews per owner: save a new version, find the last review, list, delete."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from careerwise.errors import NotFoundError
from careerwise.resume.chain import ReviewResult
from careerwise.resume.report import PreviousReview
from careerwise.store import Database, Message, Resume, ResumeReview, TraceEvent

log = logging.getLogger(__name__)
VERSION_ATTEMPTS = 3
REDACTED = "（已刪除的履歷健檢）/ (a deleted resume review)"


@dataclass(frozen=True)
class Owner:
    """Whose resumes: a logged-in user, or a visitor's conversation."""

    user_id: str | None = None
    conversation_id: str | None = None

    def __post_init__(self) -> None:
        if (self.user_id is None) == (self.conversation_id is None):
            raise ValueError("an owner is a user or a conversation, exactly one")

    @property
    def key(self) -> str:
        return f"user:{self.user_id}" if self.user_id else f"conversation:{self.conversation_id}"


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def scores_json(result: ReviewResult) -> dict[str, Any]:
    return {k: {"score": s.score, **s.criteria(), "comment": s.comment} for k, s in result.scores.items()}


async def previous_review(db: Database, owner: Owner, *, digest: str) -> PreviousReview | None:
    """The owner's latest review (of their highest version that has one), for the comparison."""
    async with db.session() as s:
        row = (
            await s.execute(
                select(Resume, ResumeReview)
                .join(ResumeReview, ResumeReview.resume_id == Resume.id)
                .where(Resume.owner_key == owner.key)
                .order_by(Resume.version.desc(), ResumeReview.created_at.desc())
                .limit(1)
            )
        ).first()
    if row is None:
        return None
    resume, review = row
    return PreviousReview(
        version=resume.version,
        scores={k: int(v["score"]) for k, v in review.scores.items() if isinstance(v, dict) and "score" in v},
        overall=review.overall,
        same_text=resume.sha256 == digest,
    )


async def _next_version(s: AsyncSession, owner: Owner) -> int:
    current = await s.scalar(select(func.max(Resume.version)).where(Resume.owner_key == owner.key))
    return int(current or 0) + 1


async def save_review(
    db: Database,
    *,
    owner: Owner,
    text: str,
    digest: str,
    kind: str,
    filename: str | None,
    pages: int | None,
    contact: dict[str, int],
    target_role: str | None,
    result: ReviewResult,
    trace_id: str | None,
) -> tuple[Resume, ResumeReview]:
    """A new version of the owner's resume and its review, in one transaction. Two saves at once race
    for the same version number; the unique constraint makes one of them take the next."""
    assert result.report is not None and result.structure is not None
    for attempt in range(1, VERSION_ATTEMPTS + 1):
        try:
            async with db.session() as s, s.begin():
                resume = Resume(
                    owner_key=owner.key,
                    user_id=owner.user_id,
                    conversation_id=owner.conversation_id,
                    version=await _next_version(s, owner),
                    filename=filename,
                    kind=kind,
                    pages=pages,
                    chars=len(text),
                    sha256=digest,
                    text=text,
                    contact=contact,
                )
                s.add(resume)
                await s.flush()
                review = ResumeReview(
                    resume_id=resume.id,
                    target_role=target_role,
                    scores=scores_json(result),
                    overall=result.overall,
                    structure_source=result.structure.source,
                    scoring_source=result.scoring_source,
                    degraded=list(result.degraded),
                    report=result.report.model_dump(mode="json"),
                    trace_id=trace_id,
                )
                s.add(review)
            return resume, review
        except IntegrityError:
            if attempt == VERSION_ATTEMPTS:
                raise
            log.warning("resume: version taken by a concurrent save for %s; retrying", owner.key)
    raise AssertionError("unreachable")


async def list_resumes(db: Database, owner: Owner) -> list[tuple[Resume, ResumeReview | None]]:
    async with db.session() as s:
        resumes = (
            await s.scalars(select(Resume).where(Resume.owner_key == owner.key).order_by(Resume.version))
        ).all()
        reviews = (
            await s.scalars(
                select(ResumeReview)
                .where(ResumeReview.resume_id.in_([r.id for r in resumes]))
                .order_by(ResumeReview.created_at)
            )
        ).all()
    latest: dict[str, ResumeReview] = {}
    for review in reviews:
        latest[review.resume_id] = review  # ordered by time: the last one wins
    return [(r, latest.get(r.id)) for r in resumes]


async def delete_resumes(db: Database, owner: Owner, resume_id: str | None = None) -> int:
    """Delete one resume (``resume_id``) or all of the owner's, with their reviews; the reports they left
    in traces and in the conversation are redacted. Another owner's resume is "not found"."""
    async with db.session() as s, s.begin():
        query = select(Resume.id).where(Resume.owner_key == owner.key)
        if resume_id is not None:
            query = query.where(Resume.id == resume_id)
        ids = list((await s.scalars(query)).all())
        if resume_id is not None and not ids:
            raise NotFoundError(f"resume {resume_id} does not exist")
        if not ids:
            return 0
        traces = [
            t
            for t in (
                await s.scalars(select(ResumeReview.trace_id).where(ResumeReview.resume_id.in_(ids)))
            ).all()
            if t
        ]
        if traces:
            await s.execute(
                update(TraceEvent)
                .where(TraceEvent.trace_id.in_(traces), TraceEvent.type == "report")
                .values(payload={"type": "report", "redacted": "resume deleted"})
            )
            await s.execute(update(Message).where(Message.trace_id.in_(traces)).values(content=REDACTED))
        await s.execute(delete(ResumeReview).where(ResumeReview.resume_id.in_(ids)))
        await s.execute(delete(Resume).where(Resume.id.in_(ids)))
    log.info("resume: deleted %d resume(s) of %s", len(ids), owner.key.split(":")[0])
    return len(ids)


async def latest_resume_text(db: Database, *, user_id: str) -> str | None:
    """The user's most recent stored resume (contact details masked), or None."""
    async with db.session() as s:
        text = await s.scalar(
            select(Resume.text)
            .where(Resume.owner_key == Owner(user_id=user_id).key)
            .order_by(Resume.version.desc())
            .limit(1)
        )
    return text
