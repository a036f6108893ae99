"""Failures around the database's threads (store/db.py) that must never hang a caller or a shutdown: a
job interrupted by a BaseException is raised to its caller (as a RuntimeError) and the thread goes on; a stop that waits on a stuck job gives up
after its timeout and says which thread it left; a pipelined job whose BEGIN fails leaves the pipeline;
closing the database and the services runs every step even when one fails."""

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
from careerwise.store.direct import _PIPELINE

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
    with caplog.at_level(logging.ERROR, logger="careerwise.store.db"):
        stopper.start()
        stopper.join(HANG_GUARD / 2)
        stopped = not stopper.is_alive()
    release.set()  # let the job end either way, so nothing outlives the test
    await asyncio.wait_for(pending, HANG_GUARD)
    assert stopped, "stop(timeout) waited for the stuck job"
    assert "careerwise-sqlite-writer still running" in caplog.text


def test_a_pipelined_job_whose_begin_fails_leaves_the_pipeline() -> None:
    left: list[bool] = []

    class Pipeline:
        def __enter__(self) -> Pipeline:
            return self

        def __exit__(self, *exc: object) -> None:
            left.append(True)

    @contextmanager
    def failing_begin() -> Any:
        raise RuntimeError("BEGIN failed")
        yield  # pragma: no cover

    connection = SimpleNamespace(
        dialect=SimpleNamespace(name="postgresql"),
        connection=SimpleNamespace(dbapi_connection=SimpleNamespace(pipeline=Pipeline)),
        info={},
        begin=failing_begin,
    )
    writer = PostgresWriter.__new__(PostgresWriter)
    writer.pipeline, writer.batch = True, False
    item = cast(_Job, SimpleNamespace(pipelined=True))
    with pytest.raises(RuntimeError, match="BEGIN failed"):
        writer._transaction(cast(Connection, connection), item)
    assert left == [True]
    assert _PIPELINE not in connection.info


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

    services = SimpleNamespace(
        providers=SimpleNamespace(aclose=providers_close),
        db=SimpleNamespace(dispose=db_dispose),
        engine=SimpleNamespace(telemetry=SimpleNamespace(shutdown=lambda: calls.append("telemetry"))),
    )
    with pytest.raises(RuntimeError, match="would not close"):
        await Services.aclose(cast(Services, services))
    assert calls == ["providers", "database", "telemetry"]


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
