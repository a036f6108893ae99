"""Running a deep flow's orchestration as a task while its events stream out.

:func:`pump` yields each event the orchestration emits as soon as it is emitted, then raises the
orchestration's exception (if any) after the events that came before it. Closing the generator (the
reader went away) cancels the task; a failure of the task as it is stopped is logged and counted
(``DEEP_TASK_AFTER_CLOSE``), never swallowed. :class:`Outcome` is what an orchestration leaves for its
flow, and :func:`section_events` gives a finished report's sections as events, in report order.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from careerwise.errors import StepFailed
from careerwise.events import Event, ReportEvent, SectionEvent
from careerwise.flows.deep_steps.steps import Emit
from careerwise.knowledge.index import Hit
from careerwise.tracing.background import DEEP_TASK_AFTER_CLOSE, count_failure

log = logging.getLogger(__name__)


async def pump(run: Callable[[Emit], Coroutine[Any, Any, None]]) -> AsyncIterator[Event]:
    """Run ``run(emit)`` as a task and yield every event it emits, as soon as it emits it. Its exception
    (if any) is raised after the events emitted before it; closing the generator cancels the task."""
    queue: asyncio.Queue[Event] = asyncio.Queue()
    task = asyncio.create_task(run(queue.put_nowait))
    try:
        while True:
            getter = asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
            if getter in done:
                yield getter.result()
                continue
            getter.cancel()
            break
        while not queue.empty():
            yield queue.get_nowait()
        task.result()
    finally:
        if not task.done():
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass  # the cancel above: the reader went away, nothing failed
            except Exception:  # the task failed as it was stopped: nobody reads its events any more
                log.exception("deep: the flow's task failed after its reader had gone")
                count_failure(DEEP_TASK_AFTER_CLOSE)


@dataclass
class Outcome:
    """What an orchestration left for its flow: whether it answered, and if not, why."""

    done: bool = False
    failure: StepFailed | None = None
    hits: list[Hit] | None = None


def section_events(report: ReportEvent) -> list[SectionEvent]:
    """The report's sections as ``section`` events, in report order (decision 0016): the full design
    sends them when its report is complete, just before the ``report`` event that repeats them."""
    return [
        SectionEvent(
            index=i, heading=s.heading, body=s.body, risk_level=s.risk_level, sources=list(s.sources)
        )
        for i, s in enumerate(report.sections)
    ]
