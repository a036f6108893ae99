"""Prometheus metrics, fed from the same events and LLM call records as the trace (no bookkeeping of
their own), in a registry per :class:`Metrics` instance: two apps in one process (tests) never share
a counter. The names and labels are listed in docs/observability.md#metrics.

With several workers (``careerwise serve --workers N``) the serve parent sets ``PROMETHEUS_MULTIPROC_DIR``
before the workers start: prometheus_client then keeps every counter, histogram and gauge in a file per
process there, and a scrape of any worker adds them all up (:meth:`Metrics.render`). Do not move that
variable into Settings: prometheus_client reads it itself, once, when it is imported.

Those files hold only prometheus_client's own metrics (counters, gauges, histograms). A collector that
reads figures at scrape time (the caches', the database threads', the background failures') has nothing
in them, so a multiprocess scrape adds every such collector of the registry itself: the registry keeps
the list (:class:`_Registry`), and nothing has to remember to name a new one there.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from typing import assert_never

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from careerwise.events import (
    ANSWER_CACHE_TOOL,
    SEARCH_TOOL,
    DegradedEvent,
    DeltaEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    ProgressEvent,
    ReportEvent,
    RouteEvent,
    SectionEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from careerwise.knowledge.cache import CacheStats
from careerwise.tracing.background import failure_counts
from careerwise.tracing.llm_calls import LLMCall
from careerwise.tracing.turn import TurnEnd, TurnStart

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
# the LLM's latencies run from tens of milliseconds (a fake, a cached prefix) to a minute (a slow model)
_LLM_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0, 120.0)
_FAST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_KNOWLEDGE_UNAVAILABLE = frozenset({"knowledge_unavailable", "deep_knowledge_unavailable"})
# a search that raised in a flow that reports it as a degradation (the tool's own failures are counted
# from its tool_result)
_KNOWLEDGE_SEARCH_FAILED = frozenset({"deep_knowledge_search_failed", "excerpts_search_failed"})
# the tools a turn can run: any other name is the model's invention and is counted as UNKNOWN_TOOL, so
# the model cannot add label values (one series each) or write into the public /metrics
TOOL_LABELS = frozenset({SEARCH_TOOL, ANSWER_CACHE_TOOL})
UNKNOWN_TOOL = "unknown"


def tool_label(name: str) -> str:
    return name if name in TOOL_LABELS else UNKNOWN_TOOL


class _Registry(CollectorRegistry):
    """A registry that knows which of its collectors read their figures at scrape time: those are what
    a multiprocess scrape must add to the workers' files (:meth:`Metrics.render`). Everything else
    registered here is one of prometheus_client's own metrics, whose values are in those files."""

    def __init__(self) -> None:
        super().__init__(auto_describe=True)
        self.scrape_time: list[Collector] = []

    def register(self, collector: Collector) -> None:
        super().register(collector)  # raises on a duplicate name: nothing is listed then
        if not isinstance(collector, MetricWrapperBase):
            self.scrape_time.append(collector)

    def unregister(self, collector: Collector) -> None:
        super().unregister(collector)
        if collector in self.scrape_time:
            self.scrape_time.remove(collector)


class Metrics:
    def __init__(self) -> None:
        r = self.registry = _Registry()
        self.http_requests = Counter(
            "careerwise_http_requests",
            "HTTP requests by route template and status.",
            ["method", "route", "status"],
            registry=r,
        )
        self.http_duration = Histogram(
            "careerwise_http_request_duration_seconds",
            "HTTP request time to the end of the response body.",
            ["method", "route"],
            buckets=_LLM_BUCKETS,
            registry=r,
        )
        self.turns = Counter(
            "careerwise_turns",
            "Finished turns.",
            ["assistant", "channel", "intent", "tier", "path", "status"],
            registry=r,
        )
        self.turn_duration = Histogram(
            "careerwise_turn_duration_seconds",
            "Turn time, first event to the end.",
            ["flow", "path"],
            buckets=_LLM_BUCKETS,
            registry=r,
        )
        self.routing = Counter(
            "careerwise_routing_decisions",
            "Routing decisions by the layer that decided.",
            ["layer", "intent"],
            registry=r,
        )
        self.routing_duration = Histogram(
            "careerwise_routing_duration_seconds",
            "Routing time by the layer that decided.",
            ["layer"],
            buckets=_FAST_BUCKETS,
            registry=r,
        )
        self.tool_calls = Counter(
            "careerwise_tool_calls", "Tool calls by tool and outcome.", ["tool", "ok"], registry=r
        )
        self.tool_duration = Histogram(
            "careerwise_tool_duration_seconds",
            "Time a tool ran.",
            ["tool"],
            buckets=_FAST_BUCKETS,
            registry=r,
        )
        self.topk_overrides = Counter(
            "careerwise_tool_topk_overrides",
            "Tool calls whose effective top_k differs from the top_k the model asked for.",
            ["tool"],
            registry=r,
        )
        self.retrieval_failures = Counter(
            "careerwise_retrieval_failures",
            "Knowledge retrieval failures: search_failed (a search raised), unavailable (a turn found the "
            "index not loaded), readiness (a /readyz probe failed).",
            ["kind"],
            registry=r,
        )
        self.degradations = Counter(
            "careerwise_degradations", "Degraded turns by reason.", ["reason"], registry=r
        )
        self.errors = Counter("careerwise_errors", "Error events by code.", ["code"], registry=r)
        # the label values are the guards' own names (report_guards.GUARDS), never text from a model
        self.report_guards = Counter(
            "careerwise_report_guard_actions",
            "What the deep-report guards removed or corrected, by guard.",
            ["guard"],
            registry=r,
        )
        self.llm_calls = Counter(
            "careerwise_llm_calls",
            "LLM calls by purpose and outcome (ok or an error code).",
            ["purpose", "outcome"],
            registry=r,
        )
        self.llm_ttft = Histogram(
            "careerwise_llm_time_to_first_token_seconds",
            "LLM time to the first text or tool-call chunk.",
            ["purpose"],
            buckets=_LLM_BUCKETS,
            registry=r,
        )
        self.llm_duration = Histogram(
            "careerwise_llm_duration_seconds",
            "LLM call time to the end of the stream.",
            ["purpose"],
            buckets=_LLM_BUCKETS,
            registry=r,
        )
        self.llm_tokens = Counter(
            "careerwise_llm_tokens",
            "Tokens the provider reported, by purpose and kind (prompt, completion).",
            ["purpose", "kind"],
            registry=r,
        )
        self.feedback = Counter("careerwise_feedback", "Feedback given, by rating.", ["rating"], registry=r)
        self.recovered = Counter(
            "careerwise_recovered",
            "Work a dead process left, closed or handed on (store/recovery.py): reply (a pending reply "
            "closed), line_requeued, line_apologised, line_taken_over (a redelivery answered).",
            ["kind"],
            registry=r,
        )
        self.ready = Gauge(
            "careerwise_ready",
            "1 if the check passed at the last /readyz, else 0.",
            ["check"],
            registry=r,
            multiprocess_mode="mostrecent",  # several workers: whichever answered /readyz last
        )
        self.readiness_failures = Counter(
            "careerwise_readiness_failures", "Failed /readyz checks.", ["check"], registry=r
        )
        self.sink_failures = Counter(
            "careerwise_telemetry_sink_failures",
            "A trace/metrics/export sink raised (logged).",
            ["sink"],
            registry=r,
        )
        r.register(_BackgroundFailureCollector())

    def render(self) -> bytes:
        directory = os.environ.get(MULTIPROC_ENV)  # prometheus_client's own switch (see the module doc)
        if not directory:
            return generate_latest(self.registry)
        combined = CollectorRegistry()  # every worker's values, read from their files
        MultiProcessCollector(combined, path=directory)  # type: ignore[no-untyped-call]
        # the scrape-time collectors read this worker's objects: their figures are this process's own.
        # All of them, not a list of names here: one left out vanishes from production scrapes only
        for collector in self.registry.scrape_time:
            combined.register(collector)
        return generate_latest(combined)

    def watch_caches(self, source: Callable[[], Iterable[CacheStats]]) -> None:
        """Export caches' own counters (read at scrape time) as ``careerwise_cache_*{cache=...}``."""
        collector: _CacheCollector | None = getattr(self, "_caches", None)
        if collector is None:
            collector = self._caches = _CacheCollector()
            self.registry.register(collector)
        collector.sources.append(source)

    def watch_writes(self, source: Callable[[], tuple[int, dict[str, int]]]) -> None:
        """Export the database writer threads' own counts (``Database.write``: a turn's opening and
        closing), read at scrape time: ``careerwise_database_writes_total`` and
        ``careerwise_database_write_failures_total{job}``. One source: the process's database."""
        if getattr(self, "_writes", None) is None:
            self._writes = _JobCollector(
                source, "write", "Write jobs committed by the database writer threads."
            )
            self.registry.register(self._writes)

    def watch_reads(self, source: Callable[[], tuple[int, dict[str, int]]]) -> None:
        """The reader threads' counts (``Database.read``: a turn's budget and settings read), read at
        scrape time: ``careerwise_database_reads_total`` and ``careerwise_database_read_failures_total{job}``."""
        if getattr(self, "_reads", None) is None:
            self._reads = _JobCollector(source, "read", "Read jobs done by the database reader threads.")
            self.registry.register(self._reads)

    def turn_sink(self, start: TurnStart) -> MetricsTurn:
        return MetricsTurn(self, start)

    def readiness(self, check: str, *, ok: bool) -> None:
        self.ready.labels(check).set(1 if ok else 0)
        if not ok:
            self.readiness_failures.labels(check).inc()
            if check in ("knowledge", "embedding"):
                self.retrieval_failures.labels("readiness").inc()

    def llm_call(self, call: LLMCall) -> None:
        purpose = call.purpose
        self.llm_calls.labels(purpose, call.error or "ok").inc()
        self.llm_duration.labels(purpose).observe(call.duration_ms / 1000)
        if call.ttft_ms is not None:
            self.llm_ttft.labels(purpose).observe(call.ttft_ms / 1000)
        if call.prompt_tokens:
            self.llm_tokens.labels(purpose, "prompt").inc(call.prompt_tokens)
        if call.completion_tokens:
            self.llm_tokens.labels(purpose, "completion").inc(call.completion_tokens)


class _CacheCollector(Collector):
    """The caches count in their hot path with plain integers (no prometheus call per lookup); this
    reads them when /metrics is scraped. Several sources naming the same cache are summed."""

    def __init__(self) -> None:
        self.sources: list[Callable[[], Iterable[CacheStats]]] = []

    def collect(self) -> Iterator[Metric]:
        totals: dict[str, list[int]] = {}
        entries: dict[str, int] = {}
        for source in self.sources:
            for s in source():
                row = totals.setdefault(s.name, [0, 0, 0, 0])
                for i, v in enumerate((s.hits, s.misses, s.invalidations, s.errors)):
                    row[i] += v
                if s.entries is not None:
                    entries[s.name] = entries.get(s.name, 0) + s.entries
        names = (
            ("careerwise_cache_hits", "Cache lookups answered from the cache."),
            ("careerwise_cache_misses", "Cache lookups that had to compute the value."),
            ("careerwise_cache_invalidations", "Entries dropped because what they came from changed."),
            ("careerwise_cache_errors", "Lookups that failed (logged) and went on without the cache."),
        )
        for i, (name, doc) in enumerate(names):
            family = CounterMetricFamily(name, doc, labels=["cache"])
            for cache, row in sorted(totals.items()):
                family.add_metric([cache], row[i])
            yield family
        gauge = GaugeMetricFamily("careerwise_cache_entries", "Entries a cache holds now.", labels=["cache"])
        for cache, n in sorted(entries.items()):
            gauge.add_metric([cache], n)
        yield gauge


class _JobCollector(Collector):
    """The writer and reader threads count with plain integers under their own lock; this reads them
    when /metrics is scraped. A failed job is also raised to the turn that asked for it."""

    def __init__(self, source: Callable[[], tuple[int, dict[str, int]]], kind: str, help_done: str) -> None:
        self.source = source
        self.kind = kind
        self.help_done = help_done

    def collect(self) -> Iterator[Metric]:
        done, failures = self.source()
        jobs = CounterMetricFamily(f"careerwise_database_{self.kind}s", self.help_done)
        jobs.add_metric([], done)
        yield jobs
        failed = CounterMetricFamily(
            f"careerwise_database_{self.kind}_failures",
            f"{self.kind.capitalize()} jobs that failed (logged; a write is rolled back), by job.",
            labels=["job"],
        )
        for job, n in sorted(failures.items()):
            failed.add_metric([job], n)
        yield failed


class _BackgroundFailureCollector(Collector):
    """``careerwise_background_task_failures_total{task}`` from the process-wide tally of
    :mod:`careerwise.tracing.background` (work nobody awaits; see there why it is process-wide)."""

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(
            "careerwise_background_task_failures",
            "Background work that failed with nobody awaiting it (logged), by task.",
            labels=["task"],
        )
        for task, n in sorted(failure_counts().items()):
            family.add_metric([task], n)
        yield family


class MetricsTurn:
    """One turn's view: counts each event as it passes, the turn itself at :meth:`finish`."""

    def __init__(self, metrics: Metrics, start: TurnStart) -> None:
        self.m = metrics
        self.start = start
        self.intent = "none"
        self.tier = "none"
        self.path: str | None = None
        self.not_run: set[str] = set()

    def observe(self, event: Event) -> None:
        if event.type == "delta":
            return  # most events of a turn, one a streamed chunk, and none is counted: the cheap test first
        m = self.m
        match event:
            case RouteEvent():
                self.intent, self.tier = event.intent, event.tier or "none"
                m.routing.labels(event.layer, event.intent).inc()
                if event.duration_ms is not None:
                    m.routing_duration.labels(event.layer).observe(event.duration_ms / 1000)
            case ToolCallEvent():
                if not event.effective_arguments:  # the arguments did not resolve: the tool did not run
                    self.not_run.add(event.call_id)
                requested = event.requested_arguments.get("top_k")
                effective = event.effective_arguments.get("top_k")
                if requested is not None and effective is not None and requested != effective:
                    m.topk_overrides.labels(tool_label(event.name)).inc()
            case ToolResultEvent():
                tool = tool_label(event.name)
                m.tool_calls.labels(tool, "true" if event.ok else "false").inc()
                if event.call_id not in self.not_run:
                    m.tool_duration.labels(tool).observe(event.duration_ms / 1000)
                    if not event.ok and event.name == SEARCH_TOOL:
                        m.retrieval_failures.labels("search_failed").inc()
            case DegradedEvent():
                m.degradations.labels(event.reason).inc()
                if event.reason in _KNOWLEDGE_UNAVAILABLE:
                    m.retrieval_failures.labels("unavailable").inc()
                elif event.reason in _KNOWLEDGE_SEARCH_FAILED:
                    m.retrieval_failures.labels("search_failed").inc()
            case ErrorEvent():
                m.errors.labels(event.code).inc()
            case DoneEvent():
                self.path = event.path
            case ReportEvent():
                for guard, n in (event.guards or {}).items():
                    if n:
                        m.report_guards.labels(guard).inc(n)
            case DeltaEvent() | SectionEvent() | ProgressEvent():
                pass
            case _:
                assert_never(event)

    def llm_call(self, call: LLMCall) -> None:
        self.m.llm_call(call)

    def finish(self, end: TurnEnd) -> None:
        path = self.path or end.path
        s = self.start
        self.m.turns.labels(s.assistant_id, s.channel, self.intent, self.tier, path, end.status).inc()
        elapsed = time.perf_counter() - s.started
        self.m.turn_duration.labels(end.flow, path).observe(elapsed)
