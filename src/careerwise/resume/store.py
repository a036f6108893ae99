"""Stored resumes and reviews per owner: save a new version, find the last review, list, delete."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import Any

from careerwise.resume.chain import ReviewResult
from careerwise.resume.report import PreviousReview
from careerwise.store import Database, Resume, ResumeReview
from careerwise.store.resumes import ResumeStore

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
    row = await ResumeStore(db).latest_reviewed(owner.key)
    if row is None:
        return None
    resume, review = row
    return PreviousReview(
        version=resume.version,
        scores={k: int(v["score"]) for k, v in review.scores.items() if isinstance(v, dict) and "score" in v},
        overall=review.overall,
        same_text=resume.sha256 == digest,
    )


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
    report, structure = result.report, result.structure

    def resume_row(version: int) -> Resume:
        return Resume(
            owner_key=owner.key,
            user_id=owner.user_id,
            conversation_id=owner.conversation_id,
            version=version,
            filename=filename,
            kind=kind,
            pages=pages,
            chars=len(text),
            sha256=digest,
            text=text,
            contact=contact,
        )

    def review_row(resume: Resume) -> ResumeReview:
        return ResumeReview(
            resume_id=resume.id,
            target_role=target_role,
            scores=scores_json(result),
            overall=result.overall,
            structure_source=structure.source,
            scoring_source=result.scoring_source,
            degraded=list(result.degraded),
            report=report.model_dump(mode="json"),
            trace_id=trace_id,
        )

    return await ResumeStore(db).add_version(owner.key, resume_row, review_row, attempts=VERSION_ATTEMPTS)


async def list_resumes(db: Database, owner: Owner) -> list[tuple[Resume, ResumeReview | None]]:
    return await ResumeStore(db).all(owner.key)


async def delete_resumes(db: Database, owner: Owner, resume_id: str | None = None) -> int:
    """Delete one resume (``resume_id``) or all of the owner's, with their reviews; the reports they left
    in traces and in the conversation are redacted. Another owner's resume is "not found"."""
    deleted = await ResumeStore(db).delete(
        owner.key,
        resume_id,
        redacted_report={"type": "report", "redacted": "resume deleted"},
        redacted_message=REDACTED,
    )
    if not deleted:
        return 0
    log.info("resume: deleted %d resume(s) of %s", deleted, owner.key.split(":")[0])
    return deleted


async def latest_resume_text(db: Database, *, user_id: str) -> str | None:
    """The user's most recent stored resume (contact details masked), or None."""
    return await ResumeStore(db).latest_text(Owner(user_id=user_id).key)
