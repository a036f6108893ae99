"""``EventStreamResponse`` cancelled while it waits for its disconnect watcher to end (the audit of
2026-11-30): the response's ``finally`` cancels the watcher and awaits it, and a ``CancelledError``
there used to be suppressed whatever its source, so a cancellation of the request task itself (a
server shutting down) was lost and the task ended as if it had finished. Nothing is timed: the watcher
is held in its clean-up by an event until the test has cancelled the request task."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from careerwise.api._sse import EventStreamResponse

SCOPE: dict[str, Any] = {"type": "http", "method": "POST", "path": "/api/chat", "headers": []}


class _SlowToLeave:
    """A server whose ``receive`` takes a while to unwind when cancelled (it awaits its own clean-up),
    so the response's ``await watcher`` is still waiting when the test acts."""

    def __init__(self) -> None:
        self.unwinding = asyncio.Event()
        self.sent: list[dict[str, Any]] = []

    async def receive(self) -> dict[str, Any]:
        try:
            await asyncio.Event().wait()  # the client never leaves
        except asyncio.CancelledError:
            self.unwinding.set()
            await asyncio.Event().wait()  # ended by the second cancellation, the request task's
            raise
        raise AssertionError("unreachable")

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)
        await asyncio.sleep(0)  # a real write yields to the loop: the watcher gets to its receive()


async def _frames(closed: list[bool]) -> AsyncIterator[bytes]:
    try:
        yield b"event: done\ndata: {}\n\n"
    finally:
        closed.append(True)


async def test_a_cancellation_while_the_watcher_stops_is_not_lost() -> None:
    server = _SlowToLeave()
    closed: list[bool] = []
    task = asyncio.create_task(EventStreamResponse(_frames(closed))(SCOPE, server.receive, server.send))
    await asyncio.wait_for(server.unwinding.wait(), timeout=60)  # a hang guard, not a timing
    assert not task.done()  # the response has written everything and waits for the watcher
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task  # the old code returned normally here
    assert task.cancelled()
    assert closed == [True]  # the body is closed all the same
    assert [m.get("more_body") for m in server.sent[1:]] == [True, False]


async def test_stopping_the_watcher_alone_ends_the_response_normally() -> None:
    """Without a cancellation from outside, the watcher's own CancelledError is not passed on."""
    server = _SlowToLeave()
    closed: list[bool] = []
    response = EventStreamResponse(_frames(closed))
    task = asyncio.create_task(response(SCOPE, server.receive, server.send))
    await asyncio.wait_for(server.unwinding.wait(), timeout=60)
    watcher = next(t for t in asyncio.all_tasks() if t.get_name() == "careerwise-sse-watch")
    watcher.cancel()  # as if the watcher's clean-up ended by itself
    await asyncio.wait_for(task, timeout=60)
    assert not task.cancelled() and task.result() is None and closed == [True]
