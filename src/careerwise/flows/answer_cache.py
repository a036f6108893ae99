"""The answer cache: a first career question that is nearly the same as one answered before gets that
answer again, replayed as the normal event stream, instead of a new LLM answer (an FAQ reply).

Off unless ``CAREERWISE_ANSWER_CACHE_THRESHOLD`` is above 0. It wraps the career-simple flow
(``cached_flow``), so the engine does not know it exists. What is stored, and when:

* only answers that finished normally (the inner flow ran to its end) with text, no ``degraded`` or
  ``error`` event, no failed or refused tool call and no text-then-tool notice;
* only first messages (no history): an answer that leaned on earlier turns is personal; and only
  questions with no personal data the masker recognises (an e-mail, a phone number, an id number...):
  the matched question is shown to whoever gets the replay, and the answer may have repeated it;
* under a namespace of the knowledge-base version, the assistant's settings snapshot, the flow
  options, the answer language and the model: any of them changing makes old answers unreachable,
  and a new knowledge-base version drops them at once.

A replay is never hidden: the turn's path is ``cache``, and an ``answerCache`` tool call and result
carry the matched question, the similarity, the threshold and the trace that wrote the answer; the
sources are the original answer's. docs/decisions/0006-caches.md says why it is per process.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass, field

import numpy as np
import numpy.typing as npt

from careerwise.events import (
    ANSWER_CACHE_TOOL,
    DegradedEvent,
    DeltaEvent,
    ErrorEvent,
    Event,
    ReportEvent,
    Source,
    ToolCallEvent,
    ToolResultEvent,
)
from careerwise.flows.base import Flow, FlowContext
from careerwise.knowledge.cache import CacheStats, normalize_query
from careerwise.tracing.masking import mask_text

log = logging.getLogger(__name__)
TOOL_NAME = ANSWER_CACHE_TOOL
PATH = "cache"
Vector = npt.NDArray[np.float32]


@dataclass(frozen=True)
class StoredAnswer:
    question: str
    vector: Vector
    pieces: tuple[tuple[str, int], ...]  # each text delta as it was shown: (text, phase)
    sources: tuple[Source, ...]
    namespace: str
    version: str  # the knowledge-base version the answer was written against
    trace_id: str | None
    stored_at: float


@dataclass(frozen=True)
class AnswerMatch:
    answer: StoredAnswer
    similarity: float


class AnswerCache:
    """Stored answers, at most ``size`` (LRU), each replayable for ``ttl`` seconds. Lookup is an exact
    scan: a dot product with every answer of the namespace (a few hundred vectors: microseconds)."""

    def __init__(
        self,
        *,
        threshold: float,
        size: int = 256,
        ttl: float = 86400.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not 0 < threshold <= 1:
            raise ValueError(f"answer cache threshold must be in (0, 1], got {threshold}")
        self.threshold = threshold
        self.size = size
        self.ttl = ttl
        self.clock = clock
        self._data: OrderedDict[tuple[str, str], StoredAnswer] = OrderedDict()
        self._lock = threading.Lock()
        self._version: str | None = None
        self.hits = 0
        self.misses = 0
        self.invalidations = 0
        self.errors = 0  # lookups that failed (embedding, version read) and were answered uncached
        self.stored = 0

    def __len__(self) -> int:
        return len(self._data)

    def observe_version(self, version: str) -> None:
        """A new knowledge-base version: answers written against another one are dropped now."""
        with self._lock:
            if self._version == version:
                return
            self._version = version
            stale = [k for k, a in self._data.items() if a.version != version]
            for k in stale:
                del self._data[k]
            self.invalidations += len(stale)

    def lookup(self, namespace: str, question: str, vector: Vector) -> AnswerMatch | None:
        now = self.clock()
        with self._lock:
            expired = [k for k, a in self._data.items() if now - a.stored_at > self.ttl]
            for k in expired:
                del self._data[k]
            self.invalidations += len(expired)
            exact = self._data.get((namespace, question))
            if exact is not None:
                self._data.move_to_end((namespace, question))
                self.hits += 1
                return AnswerMatch(exact, 1.0)
            keys = [k for k in self._data if k[0] == namespace]
            if keys:
                matrix = np.stack([self._data[k].vector for k in keys])
                scores = matrix @ vector
                best = int(np.argmax(scores))
                if float(scores[best]) >= self.threshold:
                    self._data.move_to_end(keys[best])
                    self.hits += 1
                    return AnswerMatch(self._data[keys[best]], float(scores[best]))
            self.misses += 1
            return None

    def store(self, answer: StoredAnswer) -> None:
        with self._lock:
            if self._version is not None and answer.version != self._version:
                return  # written against a version that has been replaced while it streamed
            key = (answer.namespace, answer.question)
            self._data[key] = answer
            self._data.move_to_end(key)
            self.stored += 1
            while len(self._data) > self.size:
                self._data.popitem(last=False)

    def stats(self) -> CacheStats:
        return CacheStats("answer", self.hits, self.misses, len(self._data), self.invalidations, self.errors)


@dataclass(frozen=True)
class _Probe:
    question: str
    vector: Vector
    namespace: str
    version: str
    lookup_ms: float


def _namespace(ctx: FlowContext, version: str) -> str:
    """Everything besides the question that an answer depends on, hashed."""
    parts = {
        "version": version,
        "settings": ctx.settings.model_dump(mode="json"),
        "options": asdict(ctx.options),
        "zh": ctx.zh,
        "model": getattr(ctx.provider, "model", ""),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:24]


async def _probe(ctx: FlowContext, cache: AnswerCache) -> _Probe | None:
    """The question's vector and namespace, or None when this turn is not eligible (it then runs as
    if there were no cache). A failure here is logged and counted; the turn is answered uncached."""
    kb = ctx.kb
    if ctx.history or kb is None or not kb.available:
        return None
    started = time.perf_counter()
    question = normalize_query(ctx.message)
    try:
        await kb.refresh_if_stale()  # one primary-key read: the version every process agrees on
        version = kb.status().version
        vector = (await asyncio.to_thread(kb.embedder.embed_queries, [question]))[0]
    except Exception:
        # tolerated, not swallowed: logged, counted (/metrics) and marked on the trace's timings
        cache.errors += 1
        ctx.state.timings["answer_cache_error"] = 1.0
        log.exception("answer cache: lookup failed; answering without the cache")
        return None
    if version in ("unknown", "empty"):
        return None
    cache.observe_version(version)
    return _Probe(question, vector, _namespace(ctx, version), version, 1000 * (time.perf_counter() - started))


async def _replay(
    ctx: FlowContext, cache: AnswerCache, probe: _Probe, match: AnswerMatch
) -> AsyncIterator[Event]:
    stored = match.answer
    ctx.state.path = PATH
    ctx.state.timings["answer_cache_lookup_ms"] = probe.lookup_ms
    call_id = f"answer-cache-{ctx.turn_id or 'turn'}"
    yield ToolCallEvent(
        call_id=call_id,
        name=TOOL_NAME,
        requested_arguments={"question": probe.question},
        effective_arguments={
            "query": stored.question,  # the chat page shows it on the search line
            "similarity": round(match.similarity, 4),
            "threshold": cache.threshold,
            "answered_by_trace": stored.trace_id,
            "knowledge_version": stored.version,
        },
        reason=(
            f"answer cache: similarity {match.similarity:.4f} >= {cache.threshold} "
            f"to a stored answer of trace {stored.trace_id}"
        ),
    )
    yield ToolResultEvent(
        call_id=call_id,
        name=TOOL_NAME,
        ok=True,
        returned=len(stored.sources),
        sources=list(stored.sources),
        duration_ms=round(probe.lookup_ms, 2),
    )
    for text, phase in stored.pieces:
        ctx.state.mark_text()
        yield DeltaEvent(text=text, phase=phase)


@dataclass
class _Capture:
    """What the inner flow showed, and whether it is fit to store."""

    pieces: list[tuple[str, int]] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)
    storable: bool = True

    def see(self, event: Event) -> None:
        match event:
            case DeltaEvent(notice=True) | DegradedEvent() | ErrorEvent() | ReportEvent():
                self.storable = False
            case DeltaEvent():
                self.pieces.append((event.text, event.phase))
            case ToolCallEvent() if not event.effective_arguments:
                self.storable = False  # refused or unparsable: an odd turn, not an FAQ answer
            case ToolResultEvent():
                if not event.ok:
                    self.storable = False
                seen = {(s.id, s.section) for s in self.sources}
                self.sources += [s for s in event.sources if (s.id, s.section) not in seen]
            case _:
                pass


def cached_flow(inner: Flow, cache: AnswerCache) -> Flow:
    """``inner`` behind the answer cache (see the module docstring)."""

    async def flow(ctx: FlowContext) -> AsyncIterator[Event]:
        probe = await _probe(ctx, cache)
        if probe is None:
            async for event in inner(ctx):
                yield event
            return
        match = cache.lookup(probe.namespace, probe.question, probe.vector)
        if match is not None:
            async for event in _replay(ctx, cache, probe, match):
                yield event
            return
        capture = _Capture()
        async for event in inner(ctx):
            capture.see(event)
            yield event
        # reached only when the inner flow ended normally: an exception or a cancel skips the store
        personal = mask_text(probe.question) != probe.question
        if capture.storable and not personal and "".join(t for t, _ in capture.pieces).strip():
            cache.store(
                StoredAnswer(
                    question=probe.question,
                    vector=probe.vector,
                    pieces=tuple(capture.pieces),
                    sources=tuple(capture.sources),
                    namespace=probe.namespace,
                    version=probe.version,
                    trace_id=ctx.turn_id,
                    stored_at=cache.clock(),
                )
            )

    return flow
