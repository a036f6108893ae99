"""A small on-disk cache of query vectors, so the example utterances (and, for the evaluation, the
labelled messages) are embedded once per model rather than on every start. Embedding every example
on each start would delay the router's readiness by the time the examples take to embed."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from careerwise.knowledge.embeddings import Embedder, Matrix

log = logging.getLogger(__name__)


class PersistentQueryCache:
    """Wraps an embedder: ``embed_queries`` answers known texts from a ``.npz`` file in ``directory``
    (one per model name) and appends new ones. Only query vectors are cached; no passages."""

    def __init__(self, inner: Embedder, directory: Path) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.path = Path(directory) / f"routing-vectors-{inner.name}.npz"
        self._lock = threading.Lock()
        self._known: dict[str, np.ndarray] = {}
        self._dirty = False
        self._load()

    def _load(self) -> None:
        if not self.path.exists():
            return
        try:
            with np.load(self.path, allow_pickle=False) as data:
                texts, vectors = data["texts"], data["vectors"]
            if vectors.ndim == 2 and vectors.shape[1] == self.dim:
                self._known = {str(t): v.astype(np.float32) for t, v in zip(texts, vectors, strict=True)}
        except (OSError, ValueError, KeyError) as exc:  # a damaged cache is rebuilt, never fatal
            log.warning("routing: ignoring the unreadable vector cache %s: %s", self.path, exc)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._known))
        if missing:
            fresh = self.inner.embed_queries(missing)
            with self._lock:
                self._known.update(zip(missing, fresh, strict=True))
                self._dirty = True
        with self._lock:
            rows = [self._known[t] for t in texts]
        return np.vstack(rows).astype(np.float32) if rows else np.zeros((0, self.dim), np.float32)

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        return self.inner.embed_passages(texts)

    def save(self) -> None:
        """Write the cache (atomically) if anything new was embedded."""
        with self._lock:
            if not self._dirty:
                return
            texts = np.array(list(self._known), dtype=str)
            vectors = np.vstack(list(self._known.values())).astype(np.float32)
            self._dirty = False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f"{self.path.stem}.{os.getpid()}.tmp.npz")
        np.savez(tmp, texts=texts, vectors=vectors)
        tmp.replace(self.path)
