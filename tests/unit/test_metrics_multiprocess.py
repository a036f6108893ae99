"""``Metrics.render`` in prometheus_client's multiprocess mode (``serve --workers N``): the scrape must
carry every metric a single-process scrape carries. The workers' files hold only prometheus_client's
own metrics, so the collectors read at scrape time (caches, database threads, background failures) have
to be added by ``render``; the audit of 2026-11-30 found the database readers' left out.

Multiprocess mode is switched on in this process the way prometheus_client does it at import: the env
variable, and its value class for metrics made from here on (both put back afterwards)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, values
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from careerwise.knowledge.cache import CacheStats
from careerwise.loadwatch import StreamPace
from careerwise.memory import IdleTrimmer
from careerwise.tracing.metrics import MULTIPROC_ENV, Metrics

# every Metrics.watch_* method with a source for it; a new one fails the test below until it is added
WATCHERS: dict[str, Callable[[Metrics], None]] = {
    "watch_caches": lambda m: m.watch_caches(lambda: [CacheStats("retrieval", 3, 1, 2)]),
    "watch_writes": lambda m: m.watch_writes(lambda: (5, {"open_turn": 1})),
    "watch_reads": lambda m: m.watch_reads(lambda: (7, {"turn_budget": 2})),
}


@pytest.fixture
def multiprocess(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv(MULTIPROC_ENV, str(tmp_path))
    monkeypatch.setattr(values, "ValueClass", values.MultiProcessValue())
    yield tmp_path
    values.close_all_multiprocess_files()


def _families(body: bytes) -> set[str]:
    """The names of the families that have at least one sample. Not the ``*_created`` timestamps: they
    say when this process made a series, which multiprocess mode does not keep (by design)."""
    families = text_string_to_metric_families(body.decode())
    return {f.name for f in families if f.samples and not f.name.endswith("_created")}


def _app_metrics() -> Metrics:
    """A Metrics wired as build_services and the app wire it, with one value in each plain metric."""
    metrics = Metrics()
    for watch in WATCHERS.values():
        watch(metrics)
    StreamPace(base=0.1, cap=0.4).export_to(metrics.registry)
    IdleTrimmer(idle_seconds=1.0, trim=None).export_to(metrics.registry)
    metrics.http_requests.labels("GET", "/healthz", "200").inc()
    metrics.readiness("database", ok=False)
    return metrics


def test_every_watcher_is_exercised_here() -> None:
    assert {n for n in dir(Metrics) if n.startswith("watch_")} == set(WATCHERS)


def test_a_multiprocess_scrape_has_every_family_of_a_single_process_one(multiprocess: Path) -> None:
    metrics = _app_metrics()
    single = _families(generate_latest(metrics.registry))
    combined = _families(metrics.render())
    assert single - combined == set()
    # the ones the audit found missing, and the new counter, by name
    assert {"careerwise_database_reads", "careerwise_database_read_failures"} <= combined
    assert "careerwise_background_task_failures" in combined
    assert "careerwise_http_requests" in combined  # and the workers' files are read too
    assert any(multiprocess.glob("counter_*.db"))


class _Late(Collector):
    """A scrape-time collector registered straight into the registry, as a future watcher would be."""

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily("careerwise_test_late", "A figure read at scrape time.")
        family.add_metric([], 1)
        yield family


def test_a_collector_added_later_is_in_the_multiprocess_scrape(multiprocess: Path) -> None:
    metrics = Metrics()
    late = _Late()
    metrics.registry.register(late)
    assert "careerwise_test_late" in _families(metrics.render())
    metrics.registry.unregister(late)
    assert "careerwise_test_late" not in _families(metrics.render())


def test_a_single_process_scrape_reads_the_registry_as_before() -> None:
    metrics = _app_metrics()
    assert _families(metrics.render()) == _families(generate_latest(metrics.registry))
    assert isinstance(metrics.registry, CollectorRegistry)
