"""Resume review and booking have their own flows (a later issue). Until they land, the router sends
those intents here: a clear message, never a wrong flow."""

from __future__ import annotations

from collections.abc import AsyncIterator

from careerwise import prompts
from careerwise.events import DeltaEvent, Event
from careerwise.flows.base import FlowContext


async def resume_placeholder_flow(ctx: FlowContext) -> AsyncIterator[Event]:
    ctx.state.path = "resume-placeholder"
    ctx.state.mark_text()
    yield DeltaEvent(text=prompts.line("placeholder_resume", ctx.zh), phase=1)


async def booking_placeholder_flow(ctx: FlowContext) -> AsyncIterator[Event]:
    ctx.state.path = "booking-placeholder"
    ctx.state.mark_text()
    yield DeltaEvent(text=prompts.line("placeholder_booking", ctx.zh), phase=1)
