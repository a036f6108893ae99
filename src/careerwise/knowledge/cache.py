"""The retrieval cache: ``KnowledgeBase.search`` results kept per process, keyed by everything that
changes them, and the plumbing the other caches share (counters for ``/metrics``, query normalisation).

The key starts with the knowledge-base version of the index that computed the result. Every search
first compares that version with the stored one (``KnowledgeBase.refresh_if_stale``), so after an
ingest in any process the new version is in every key from the next search on and the old entries
cannot be reached; they are dropped at that moment too, so they do not hold memory until the LRU
pushes them out. docs/retrieval.md#retrieval-cache and docs/decisions/0006-caches.md say why it is
per process and what it does not cover.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from careerwise.knowledge.index import FusionConfig, SearchResult

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@dataclass(frozen=True)
class CacheStats:
    """One cache's counters since the process started, as ``/metrics`` exports them."""

    name: str
    hits: int
    misses: int
    entries: int | None = None  # None: the cache does not say (the query-embedding cache)
    invalidations: int = 0  # entries dropped because what they were computed from changed
    errors: int = 0  # lookups that failed (logged) and were answered without the cache


def normalize_query(text: str) -> str:
    """The form a query is searched and cached under: outer whitespace stripped, inner runs of
    whitespace (spaces, tabs, newlines, full-width spaces) made one space. The search itself runs on
    this form too, so a hit and a miss for the same key can never return different chunks."""
    return " ".join(text.split())


class LRUCache(Generic[K, V]):
    """A bounded, thread-safe LRU map with hit and miss counters.

    Thread-safe because ``KnowledgeBase.search_many`` runs in worker threads while the event loop
    reads; the lock is held only for dictionary operations, never while anything is computed.
    ``size`` 0 turns the cache off (every ``get`` is a miss, nothing is kept)."""

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError(f"cache size must be >= 0, got {size}")
        self.size = size
        self._data: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.invalidations = 0

    def __len__(self) -> int:
        return len(self._data)

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._data.get(key)
            if value is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key: K, value: V) -> None:
        if self.size == 0:
            return
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                self._data.popitem(last=False)

    def clear(self) -> int:
        """Drop every entry (counted as invalidations); returns how many there were."""
        with self._lock:
            n = len(self._data)
            self._data.clear()
            self.invalidations += n
            return n

    def stats(self, name: str) -> CacheStats:
        return CacheStats(name, self.hits, self.misses, len(self._data), self.invalidations)


@dataclass(frozen=True)
class RetrievalKey:
    """Everything a search result depends on. ``config`` is the knowledge base's search-configuration
    generation: it moves when the reranker is replaced (a reranker is an object, not a value)."""

    version: str
    query: str
    top_k: int
    candidates: int
    domains: tuple[str, ...] | None
    fusion: FusionConfig
    config: int


def domains_key(domains: Sequence[str] | None) -> tuple[str, ...] | None:
    """The index treats ``domains`` as a set, and an empty list as no filter: so does the key."""
    return tuple(sorted(set(domains))) if domains else None


class RetrievalCache:
    """Search results by :class:`RetrievalKey`. Results are copied in and out (``SearchResult.hits``
    is a list), so a caller that edits what it got cannot change what the next caller gets."""

    def __init__(self, size: int) -> None:
        self._lru: LRUCache[RetrievalKey, SearchResult] = LRUCache(size)
        self._version: str | None = None
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self._lru.size > 0

    def __len__(self) -> int:
        return len(self._lru)

    def get(self, key: RetrievalKey) -> SearchResult | None:
        found = self._lru.get(key)
        return replace(found, hits=list(found.hits)) if found is not None else None

    def put(self, key: RetrievalKey, result: SearchResult) -> None:
        self._lru.put(key, replace(result, hits=list(result.hits)))

    def observe_version(self, version: str) -> None:
        """Called with the loaded index's version before each lookup: when it moved, the entries of
        the old version (unreachable already, since the version is in the key) are dropped now."""
        with self._lock:
            if self._version == version:
                return
            previous, self._version = self._version, version
        if previous is not None:
            self._lru.clear()

    def invalidate(self) -> None:
        """Drop everything (the search configuration changed)."""
        self._lru.clear()

    def stats(self) -> CacheStats:
        return self._lru.stats("retrieval")
