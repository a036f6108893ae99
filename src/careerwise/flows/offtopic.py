"""Off-topic requests: a short, polite, localised reply saying what Summer helps with (decision 0017).

A fixed template, not the LLM: the career tool flow would hand a request for a recipe, a poem or a
Python script to a small model with tools, and a small model then invents tools or answers far outside
what a career coach should. The template cannot do either, costs nothing and reads the same every time.
It names what Summer does help with, so the user can continue with a career question in the next turn.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from careerwise.events import DeltaEvent, Event
from careerwise.flows.base import FlowContext

PATH = "offtopic"

REPLY_ZH = (
    "不好意思，這個問題超出我能幫忙的範圍了。我是職涯教練 Summer，可以陪你聊轉職與找工作、"
    "面試準備、薪資談判、履歷和自傳修改，也可以幫你預約一對一職涯諮詢。有這方面的問題都歡迎問我！"
)
REPLY_EN = (
    "Sorry, that is outside what I can help with. I'm Summer, a career coach: I can help with changing "
    "jobs or careers, job hunting, interview preparation, salary negotiation, reviewing or rewriting "
    "your resume, and booking a one-on-one consultation. Feel free to ask me about any of those!"
)


def offtopic_reply(zh: bool) -> str:
    """The reply in the conversation's language (Traditional Chinese or English)."""
    return REPLY_ZH if zh else REPLY_EN


async def offtopic_flow(ctx: FlowContext) -> AsyncIterator[Event]:
    ctx.state.path = PATH
    ctx.state.mark_text()
    yield DeltaEvent(text=offtopic_reply(ctx.zh), phase=1)
