"""Greetings and thanks: a short streamed reply, no tools (seed 000)."""

from __future__ import annotations

from collections.abc import AsyncIterator

from careerwise import prompts
from careerwise.events import Event
from careerwise.flows.base import FlowContext
from careerwise.flows.tool_use import _Round, _stream_round
from careerwise.llm.types import ChatMessage, CompletionRequest


async def greeting_flow(ctx: FlowContext) -> AsyncIterator[Event]:
    ctx.state.path = "greeting"
    request = CompletionRequest(
        messages=[
            ChatMessage(
                role="system", content=prompts.greeting_system(ctx.zh, persona=ctx.settings.system_prompt)
            ),
            *ctx.history[-4:],
            ChatMessage(role="user", content=ctx.message),
        ],
        max_tokens=96,
        temperature=ctx.options.phase1_temperature,
    )
    async for event in _stream_round(ctx, request, phase=1, guard_size=0, out=_Round()):
        yield event
