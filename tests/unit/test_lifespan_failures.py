"""The app's lifespan when start-up or shutdown fails (src/careerwise/app.py; the failure-handling audit
of 2026-11-30): what was started is stopped, the interpreter's tuning is undone, the failure is logged and
reaches the server.

The services are a stand-in with the things the lifespan touches, so each failure can be placed
exactly; the real services are started and stopped by every test that serves (tests/conftest.py)."""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any, cast

import pytest
from prometheus_client import CollectorRegistry

from careerwise.app import create_app
from careerwise.config import Settings
from careerwise.services import Services


class _Services:
    """What the lifespan uses of :class:`Services`, with a failure where a test asks for one."""

    def __init__(self, *, prepare: Exception | None = None, close: Exception | None = None) -> None:
        self.engine = SimpleNamespace(
            telemetry=SimpleNamespace(metrics=SimpleNamespace(registry=CollectorRegistry()))
        )
        self.provider = SimpleNamespace()
        self.parse_workers = SimpleNamespace(warm=lambda: None)
        self._prepare, self._close = prepare, close
        self.prepared = self.closed = 0

    async def recover(self) -> None:
        return None

    async def prepare_knowledge(self) -> None:
        self.prepared += 1
        if self._prepare is not None:
            raise self._prepare

    async def aclose(self) -> None:
        self.closed += 1
        if self._close is not None:
            raise self._close


def _settings(**values: Any) -> Settings:
    base: dict[str, Any] = {"gc_freeze": True, "gc_gen2_threshold": 77, "memory_trim_idle_seconds": 0}
    return Settings(_env_file=None, environment="test", **(base | values))  # type: ignore[call-arg]


@pytest.fixture(autouse=True)
def _interpreter_as_it_was() -> Iterator[None]:
    """Whatever the code under test does, the rest of the run gets the collector it had."""
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


async def test_a_failed_start_up_closes_the_services_it_had_started() -> None:
    svc = _Services(prepare=RuntimeError("the knowledge index did not load"))
    app = create_app(_settings(), services=cast(Services, svc))
    with pytest.raises(RuntimeError, match="did not load"):
        async with app.router.lifespan_context(app):
            pytest.fail("start-up should have failed")
    assert svc.prepared == 1 and svc.closed == 1  # the database threads and providers are not left running


async def test_a_start_up_that_fails_after_the_heap_was_frozen_undoes_it() -> None:
    thresholds = gc.get_threshold()
    svc = _Services()

    def warm() -> None:  # the provider's warm-up cannot even be started
        raise RuntimeError("no model file")

    svc.provider = SimpleNamespace(warm=warm)
    app = create_app(_settings(), services=cast(Services, svc))
    with pytest.raises(RuntimeError, match="no model file"):
        async with app.router.lifespan_context(app):
            pytest.fail("start-up should have failed")
    assert svc.closed == 1
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == thresholds


async def test_a_failed_shutdown_is_logged_raised_and_still_undoes_the_tuning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    thresholds = gc.get_threshold()
    svc = _Services(close=OSError("the trace exporter could not flush"))
    app = create_app(_settings(), services=cast(Services, svc))
    with caplog.at_level(logging.ERROR, logger="careerwise.app"), pytest.raises(OSError, match="flush"):
        async with app.router.lifespan_context(app):
            assert gc.get_freeze_count() > 0 and gc.get_threshold()[2] == 77  # tuned while serving
    assert svc.closed == 1
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == thresholds
    assert "closing the services failed" in caplog.text and "could not flush" in caplog.text


async def test_a_start_up_error_is_not_hidden_by_a_failing_close(caplog: pytest.LogCaptureFixture) -> None:
    svc = _Services(prepare=RuntimeError("the knowledge index did not load"), close=OSError("no flush"))
    app = create_app(_settings(), services=cast(Services, svc))
    with (
        caplog.at_level(logging.ERROR, logger="careerwise.app"),
        pytest.raises(RuntimeError, match="did not"),
    ):
        async with app.router.lifespan_context(app):
            pytest.fail("start-up should have failed")
    assert svc.closed == 1 and "no flush" in caplog.text  # the close's failure is logged, not lost
