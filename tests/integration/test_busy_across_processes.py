"""One reply at a time per conversation, across processes: the database refuses a second 'pending'
reply (a partial unique index), so a turn sent to another app process while one is being written gets
409; a reply left pending by a process that died is closed once it is older than any turn can be."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from careerwise.engine import TurnRequest
from careerwise.errors import ConversationBusyError
from careerwise.events import DoneEvent, Event
from careerwise.services import Services
from careerwise.store import Message
from tests.conftest import ready
from tests.fakes.fake_llm import FakeLLM, text


async def drain(services: Services, req: TurnRequest) -> list[Event]:
    return [e async for e in services.engine.run(req)]


async def test_a_second_process_gets_busy_while_the_first_is_answering(
    make_services: Callable[..., Services], fake_llm: FakeLLM
) -> None:
    first = await ready(make_services())
    second = await ready(make_services())  # another process: its own engine, same database
    fake_llm.script(text("好的。"), text("一二三四五六七八九十" * 4, chunk_size=2, delay=0.05), text("好。"))
    opened = await drain(first, TurnRequest(message="面試怎麼準備"))
    done = opened[-1]
    assert isinstance(done, DoneEvent)
    conv = done.conversation_id

    slow = asyncio.create_task(drain(first, TurnRequest(message="再多說一點", conversation_id=conv)))
    # the first process is now writing its reply (the fake runs in its own thread: poll its counter)
    while fake_llm.open_streams == 0:  # noqa: ASYNC110
        await asyncio.sleep(0.01)
    with pytest.raises(ConversationBusyError):
        await drain(second, TurnRequest(message="還有嗎", conversation_id=conv))
    events = await slow
    assert isinstance(events[-1], DoneEvent) and events[-1].status == "ok"
    # once it is written, the other process may answer
    after = await drain(second, TurnRequest(message="還有嗎", conversation_id=conv))
    assert isinstance(after[-1], DoneEvent) and after[-1].status == "ok"
    async with first.db.session() as s:
        statuses = (await s.scalars(select(Message.status).where(Message.role == "assistant"))).all()
    assert sorted(statuses) == ["ok", "ok", "ok"]  # the refused turn stored nothing


async def test_a_reply_left_pending_by_a_dead_process_is_closed_later(
    make_services: Callable[..., Services], fake_llm: FakeLLM
) -> None:
    services = await ready(make_services(turn_deadline=30))
    fake_llm.script(text("好的。"), text("好。"))
    done = (await drain(services, TurnRequest(message="面試怎麼準備")))[-1]
    assert isinstance(done, DoneEvent)
    async with services.db.session() as s, s.begin():
        s.add(
            Message(
                conversation_id=done.conversation_id,
                role="assistant",
                content="寫到一半",
                status="pending",
                created_at=datetime.now(UTC) - timedelta(minutes=10),
            )
        )
    events = await drain(services, TurnRequest(message="還在嗎", conversation_id=done.conversation_id))
    assert isinstance(events[-1], DoneEvent) and events[-1].status == "ok"
    async with services.db.session() as s:
        orphan = await s.scalar(select(Message).where(Message.content == "寫到一半"))
    assert orphan is not None and orphan.status == "error"
