"""Failures around the database's threads (store/db.py) that must never hang a caller or a shutdown: a
job interrupted by a BaseException is raised to its caller (as a RuntimeError) and the thread goes on; a stop that waits on a stuck job gives up
after its timeout and says which thread it left; a job that comes after the stop (an undo whose commit
reached the loop late, a write on a closed database) is refused instead of starting threads again; a
batched job whose BEGIN fails leaves the batch; closing the database and the services runs every step
even when one fails."""

from __future__ import annotations

import asyncio
import logging
import threading
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from sqlalchemy import Connection

from careerwise.store import Database
from careerwise.store.db import PostgresWriter, _Job
from careerwise.store.direct import _BATCH

HANG_GUARD = 30.0  # seconds: only so that a regression fails instead of hanging the suite


class Interrupted(BaseException):
    """Neither an Exception nor a CareerWiseError: what SystemExit or KeyboardInterrupt look like."""


@pytest.fixture
async def db(tmp_path: Path) -> Any:
    database = Database(f"sqlite+aiosqlite:///{tmp_path / 'w.db'}")
    database.migrate()
    yield database
    await database.dispose()


async def test_a_job_interrupted_by_a_base_exception_is_raised_to_its_caller(db: Database) -> None:
    def job(connection: Connection) -> None:
        raise Interrupted("stop")

    with pytest.raises(RuntimeError, match="interrupted write was interrupted") as raised:
        await asyncio.wait_for(db.write(job, name="interrupted"), HANG_GUARD)
    assert isinstance(raised.value.__cause__, Interrupted)
    writer = db.writer
    assert writer is not None
    assert writer.failures["interrupted"] == 1
    # the thread goes on with the next job
    assert await asyncio.wait_for(db.write(lambda c: 7, name="next"), HANG_GUARD) == 7


async def test_stop_gives_up_on_a_stuck_job_after_its_timeout(
    db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    release = threading.Event()
    started = threading.Event()

    def stuck(connection: Connection) -> None:
        started.set()
        release.wait(HANG_GUARD)

    writer = db.writer
    assert writer is not None
    pending = asyncio.ensure_future(db.write(stuck, name="stuck"))
    assert await asyncio.to_thread(started.wait, HANG_GUARD)
    stopper = threading.Thread(target=writer.stop, args=(0.2,))
    with caplog.at_level(logging.ERROR, logger="careerwise.store.threads"):
        stopper.start()
        stopper.join(HANG_GUARD / 2)
        stopped = not stopper.is_alive()
    release.set()  # let the job end either way, so nothing outlives the test
    await asyncio.wait_for(pending, HANG_GUARD)
    assert stopped, "stop(timeout) waited for the stuck job"
    assert "careerwise-sqlite-writer still running" in caplog.text


async def test_an_undo_that_comes_after_the_stop_is_refused_and_starts_nothing(
    db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    """A job committed after its caller left, its outcome reaching the loop only once the database was
    stopped: the undo is refused (logged, counted), and no engine or thread is made for it."""
    started, release = threading.Event(), threading.Event()

    def slow(connection: Connection) -> int:
        started.set()
        release.wait(HANG_GUARD)
        return 1

    undone: list[int] = []
    writer = db.writer
    assert writer is not None
    caller = asyncio.ensure_future(db.write(slow, name="slow", undo=lambda _c, r: undone.append(r)))
    assert await asyncio.to_thread(started.wait, HANG_GUARD)
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    release.set()
    with caplog.at_level(logging.ERROR, logger="careerwise.store.threads"):
        # on the loop's thread, so the job's outcome reaches the loop only after the stop returned
        writer.stop(HANG_GUARD)
        assert writer.done == 1  # the job committed before its thread ended
        for _ in range(500):  # the outcome is delivered on one of the next loop passes
            if writer.failures or writer.running:
                break
            await asyncio.sleep(0.01)
    assert not writer.running and writer._engine is None
    assert writer.failures == {"slow undo": 1} and undone == []
    assert "the slow undo write came after the careerwise-sqlite-writer threads were stopped" in caplog.text


async def test_a_write_after_the_stop_is_refused_to_its_caller(db: Database) -> None:
    writer = db.writer
    assert writer is not None
    await db.write(lambda c: None, name="start the thread")
    writer.stop(HANG_GUARD)
    with pytest.raises(RuntimeError, match="late write came after the database was closed"):
        await asyncio.wait_for(db.write(lambda c: None, name="late"), HANG_GUARD)
    assert not writer.running and writer._engine is None
    assert writer.failures == {"late": 1}


def test_a_batched_job_whose_begin_fails_leaves_the_batch() -> None:
    @contextmanager
    def failing_begin() -> Any:
        raise RuntimeError("BEGIN failed")
        yield  # pragma: no cover

    connection = SimpleNamespace(dialect=SimpleNamespace(name="postgresql"), info={}, begin=failing_begin)
    writer = PostgresWriter.__new__(PostgresWriter)
    writer.batch = True
    item = cast(_Job, SimpleNamespace(direct_only=True))
    with pytest.raises(RuntimeError, match="BEGIN failed"):
        writer._transaction(cast(Connection, connection), item)
    assert _BATCH not in connection.info


async def test_dispose_runs_every_step_when_one_fails(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    writer, reader = db.writer, db.reader
    assert writer is not None
    await db.write(lambda c: None, name="start the thread")
    closed: list[str] = []

    def failing_stop(timeout: float | None = None) -> None:
        closed.append("writer")
        raise RuntimeError("the writer would not stop")

    monkeypatch.setattr(writer, "stop", failing_stop)
    real_blocking = db._dispose_blocking

    def blocking_dispose() -> None:
        closed.append("blocking engine")
        real_blocking()

    monkeypatch.setattr(db, "_dispose_blocking", blocking_dispose)
    with pytest.raises(RuntimeError, match="would not stop"):
        await db.dispose()
    assert closed == ["writer", "blocking engine"]
    monkeypatch.undo()
    writer.stop(HANG_GUARD)  # the real writer's thread, so the fixture's dispose finds nothing running
    if reader is not None:
        reader.stop(HANG_GUARD)


async def test_services_close_the_database_and_telemetry_when_a_provider_fails() -> None:
    from careerwise.services import Services

    calls: list[str] = []

    async def providers_close() -> None:
        calls.append("providers")
        raise RuntimeError("a provider would not close")

    async def db_dispose() -> None:
        calls.append("database")

    async def process_stop() -> None:
        calls.append("process row")

    services = SimpleNamespace(
        kb=SimpleNamespace(close=lambda: None),  # let go first, and never fails (KnowledgeBase.close)
        providers=SimpleNamespace(aclose=providers_close),
        process=SimpleNamespace(stop=process_stop),  # marked stopped while the database is still open
        db=SimpleNamespace(dispose=db_dispose),
        engine=SimpleNamespace(telemetry=SimpleNamespace(shutdown=lambda: calls.append("telemetry"))),
    )
    with pytest.raises(RuntimeError, match="would not close"):
        await Services.aclose(cast(Services, services))
    assert calls == ["providers", "process row", "database", "telemetry"]


async def test_every_provider_is_closed_when_one_fails() -> None:
    from careerwise.services import ProviderRegistry

    closed: list[str] = []

    def provider(name: str, *, fails: bool = False) -> SimpleNamespace:
        async def aclose() -> None:
            closed.append(name)
            if fails:
                raise RuntimeError(f"{name} would not close")

        return SimpleNamespace(aclose=aclose)

    registry = ProviderRegistry.__new__(ProviderRegistry)
    registry._built = {("a", "m"): provider("a", fails=True), ("b", "m"): provider("b")}  # type: ignore[dict-item]
    registry.stream_pace = provider("pace")  # type: ignore[assignment]
    with pytest.raises(RuntimeError, match="a would not close"):
        await registry.aclose()
    assert closed == ["a", "b", "pace"]
