"""The resume flow (履歷健檢) for chat turns the router sends to the ``resume`` intent.

A message that is itself a resume (long, with section headings) is reviewed: contact details masked,
the review chain (resume/chain.py), the report; with an owner (the logged-in user, else the
conversation) the resume is stored as their next version and compared with the last one. Any other
resume request ("幫我看履歷") gets how to paste or upload one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from careerwise.events import DeltaEvent, Event
from careerwise.flows.base import Flow, FlowContext
from careerwise.resume.extract import clean_text
from careerwise.resume.prompts import HOW_TO, HOW_TO_PARTIAL
from careerwise.resume.service import ResumeService, prepare, target_role_in
from careerwise.resume.store import Owner
from careerwise.resume.structure import label, looks_like_resume, missing_for_review


def how_to(ctx: FlowContext, service: ResumeService) -> str:
    """How to paste or upload a resume; when the message holds part of one (a section or two), first
    why it was not reviewed: which sections are missing."""
    text = HOW_TO[0] if ctx.zh else HOW_TO[1]
    max_mb = service.limits.max_bytes / 1024 / 1024
    answer = text.format(max_mb=f"{max_mb:g}", pages=service.limits.max_pages)
    missing = missing_for_review(ctx.message)
    if len(missing) < 4:  # some section is there: say what is not
        names = [label(k, ctx.zh) for k in missing]
        reason = HOW_TO_PARTIAL[0 if ctx.zh else 1].format(missing=("、" if ctx.zh else ", ").join(names))
        answer = f"{reason}\n\n{answer}"
    return answer


def owner_of(ctx: FlowContext) -> Owner | None:
    if ctx.user_id:
        return Owner(user_id=ctx.user_id)
    if ctx.conversation_id:
        return Owner(conversation_id=ctx.conversation_id)
    return None


def resume_flow(service: ResumeService) -> Flow:
    """The flow, bound to the service that stores reviews (registered in ``services.default_flows``)."""

    async def flow(ctx: FlowContext) -> AsyncIterator[Event]:
        if not looks_like_resume(ctx.message):
            ctx.state.path = "resume-howto"
            ctx.state.mark_text()
            yield DeltaEvent(text=how_to(ctx, service), phase=1)
            return
        ctx.state.path = "resume"
        async for event in service.review_and_store(
            ctx,
            prepare(clean_text(ctx.message)),
            owner=owner_of(ctx),
            target_role=target_role_in(ctx.message),
            kind="chat",
        ):
            yield event

    return flow
