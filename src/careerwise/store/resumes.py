"""Stored resumes and their reviews, per owner key (resume/store.py says who an owner is and builds the
rows). A new version and its review are written in one transaction, the version numbered one past the
owner's highest; a deletion removes the resumes with their reviews and redacts, in the same
transaction, the reports they left in traces and in conversations."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError

from careerwise.errors import NotFoundError
from careerwise.store.db import Database
from careerwise.store.models import Message, TraceEvent
from careerwise.store.models_resumes import Resume, ResumeReview

__all__ = ["ResumeStore"]

log = logging.getLogger(__name__)


class ResumeStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def latest_reviewed(self, owner_key: str) -> tuple[Resume, ResumeReview] | None:
        """The owner's highest version that has a review, with its latest review."""
        async with self.db.session() as s:
            row = (
                await s.execute(
                    select(Resume, ResumeReview)
                    .join(ResumeReview, ResumeReview.resume_id == Resume.id)
                    .where(Resume.owner_key == owner_key)
                    .order_by(Resume.version.desc(), ResumeReview.created_at.desc())
                    .limit(1)
                )
            ).first()
        return None if row is None else (row[0], row[1])

    async def add_version(
        self,
        owner_key: str,
        make_resume: Callable[[int], Resume],
        review_of: Callable[[Resume], ResumeReview],
        *,
        attempts: int,
    ) -> tuple[Resume, ResumeReview]:
        """``make_resume(version)`` stored as the owner's next version, with ``review_of(resume)`` (built
        once the resume has its id), in one transaction. Two saves at once race for the same version
        number; the unique constraint makes one of them take the next, up to ``attempts`` tries."""
        for attempt in range(1, attempts + 1):
            try:
                async with self.db.session() as s, s.begin():
                    current = await s.scalar(
                        select(func.max(Resume.version)).where(Resume.owner_key == owner_key)
                    )
                    resume = make_resume(int(current or 0) + 1)
                    s.add(resume)
                    await s.flush()
                    review = review_of(resume)
                    s.add(review)
                return resume, review
            except IntegrityError:
                if attempt == attempts:
                    raise
                log.warning("resume: version taken by a concurrent save for %s; retrying", owner_key)
        raise AssertionError("unreachable")

    async def all(self, owner_key: str) -> list[tuple[Resume, ResumeReview | None]]:
        """The owner's resumes, oldest version first, each with its latest review (or None)."""
        async with self.db.session() as s:
            resumes = (
                await s.scalars(select(Resume).where(Resume.owner_key == owner_key).order_by(Resume.version))
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

    async def delete(
        self,
        owner_key: str,
        resume_id: str | None,
        *,
        redacted_report: dict[str, Any],
        redacted_message: str,
    ) -> int:
        """Deletes one resume (``resume_id``) or all of the owner's, with their reviews; their reports'
        trace events get ``redacted_report`` as payload and their messages ``redacted_message``. How
        many were deleted; NotFoundError for a ``resume_id`` the owner does not have."""
        async with self.db.session() as s, s.begin():
            query = select(Resume.id).where(Resume.owner_key == owner_key)
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
                    .values(payload=redacted_report)
                )
                await s.execute(
                    update(Message).where(Message.trace_id.in_(traces)).values(content=redacted_message)
                )
            await s.execute(delete(ResumeReview).where(ResumeReview.resume_id.in_(ids)))
            await s.execute(delete(Resume).where(Resume.id.in_(ids)))
        return len(ids)

    async def latest_text(self, owner_key: str) -> str | None:
        """The text of the owner's highest version, or None."""
        async with self.db.session() as s:
            text: str | None = await s.scalar(
                select(Resume.text)
                .where(Resume.owner_key == owner_key)
                .order_by(Resume.version.desc())
                .limit(1)
            )
        return text
