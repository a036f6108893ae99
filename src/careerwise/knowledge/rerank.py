"""Rerankers: re-score the fused candidates of one query. Pluggable through the ``Reranker`` protocol.

* ``SentenceReranker`` scores each candidate chunk by its best-matching sentence (same embedder,
  language-centred like the index) and combines that rank with the fused rank by weighted reciprocal
  rank. Sentence vectors are computed in batches by ``prepare`` (``KnowledgeBase.load`` calls it for
  the whole index) and kept in memory; a chunk that was not prepared is embedded on first use.
* ``CrossEncoderReranker`` runs a cross-encoder from a local directory through sentence-transformers,
  loaded lazily. It never downloads: a missing path or a missing package is a clear error.

docs/retrieval.md has the measurements: on the bundled corpus neither reranker is on by default.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from careerwise.errors import CareerWiseError
from careerwise.knowledge.chunking import sentence_units
from careerwise.knowledge.embeddings import Embedder, LanguageCentering, detect_lang, query_means
from careerwise.knowledge.index import Hit, IndexedChunk, ranks

Vector = npt.NDArray[np.float32]


class RerankerUnavailableError(CareerWiseError):
    code = "reranker_unavailable"


class Reranker(Protocol):
    name: str

    def rerank(self, query: str, qvec: Vector, hits: Sequence[Hit]) -> list[Hit]:
        """The same hits, re-scored (``Hit.score``) and re-ordered, best first."""
        ...


def rrf_combine(
    first: npt.NDArray[np.floating], second: npt.NDArray[np.floating], *, weight: float, k: int
) -> npt.NDArray[np.float64]:
    """1/(k + rank in ``first``) + weight/(k + rank in ``second``), ranks 0-based, higher is better."""
    return 1.0 / (k + ranks(first)) + weight / (k + ranks(second))


def _reorder(hits: Sequence[Hit], scores: npt.NDArray[np.floating]) -> list[Hit]:
    order = np.argsort(-scores, kind="stable")
    return [replace(hits[int(i)], score=float(scores[i])) for i in order]


class NoReranker:
    """Keeps the fused order."""

    name = "none"

    def rerank(self, query: str, qvec: Vector, hits: Sequence[Hit]) -> list[Hit]:
        return list(hits)


class SentenceReranker:
    """Best-matching-sentence reranker."""

    name = "sentence"

    def __init__(
        self, embedder: Embedder, *, weight: float = 1.0, rrf_k: int = 30, min_chars: int = 30
    ) -> None:
        self.embedder = embedder
        self.weight = weight
        self.rrf_k = rrf_k
        self.min_chars = min_chars
        self._vectors: dict[int, npt.NDArray[np.float32]] = {}  # chunk id -> (sentences, dim), raw
        self._langs: dict[int, str] = {}
        self._centering: LanguageCentering | None = None
        self._lock = threading.Lock()

    def prepare(self, chunks: Sequence[IndexedChunk]) -> None:
        """Embed the sentences of every chunk not seen yet, in one batched call, and (re)fit the
        per-language sentence means on everything prepared so far."""
        todo = [c for c in chunks if c.id not in self._vectors]
        if todo:
            units = [sentence_units(c.text, min_chars=self.min_chars) or [c.text] for c in todo]
            flat = [u for us in units for u in us]
            vectors = self.embedder.embed_passages(flat)
            start = 0
            with self._lock:
                for c, us in zip(todo, units, strict=True):
                    self._vectors[c.id] = vectors[start : start + len(us)]
                    self._langs[c.id] = detect_lang(f"{c.title} {c.text}")
                    start += len(us)
        with self._lock:
            if not self._vectors:
                return
            ids = list(self._vectors)
            stacked = np.vstack([self._vectors[i] for i in ids])
            langs = [self._langs[i] for i in ids for _ in range(len(self._vectors[i]))]
        self._centering = LanguageCentering.fit(stacked, langs, query_means(self.embedder))

    def sentence_scores(
        self, query: str, qvec: Vector, chunks: Sequence[IndexedChunk]
    ) -> npt.NDArray[np.float64]:
        """Each chunk's best sentence cosine (language-centred)."""
        self.prepare(chunks)
        centering = self._centering
        assert centering is not None
        q = centering.query(qvec, detect_lang(query))
        out = np.empty(len(chunks))
        for n, c in enumerate(chunks):
            vecs = self._vectors[c.id]
            out[n] = float((centering.passages(vecs, [self._langs[c.id]] * len(vecs)) @ q).max())
        return out

    def rerank(self, query: str, qvec: Vector, hits: Sequence[Hit]) -> list[Hit]:
        if len(hits) < 2:
            return list(hits)
        best = self.sentence_scores(query, qvec, [h.chunk for h in hits])
        fused = np.array([h.score for h in hits])
        return _reorder(hits, rrf_combine(fused, best, weight=self.weight, k=self.rrf_k))


class CrossEncoderReranker:
    """A cross-encoder (query, passage) -> relevance model from a local directory.

    Needs ``sentence-transformers`` (not a dependency of CareerWise) and a model directory that is
    already on disk; nothing is downloaded. The model is loaded on first use.
    """

    name = "cross-encoder"

    def __init__(self, model_path: str | Path, *, weight: float = 1.0, rrf_k: int = 30) -> None:
        self.model_path = Path(model_path)
        self.weight = weight
        self.rrf_k = rrf_k
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is not None:
                return self._model
            if not self.model_path.is_dir():
                raise RerankerUnavailableError(
                    f"cross-encoder model directory {self.model_path} does not exist; "
                    "point the reranker at a local copy of the model (nothing is downloaded)"
                )
            try:
                from sentence_transformers import CrossEncoder
            except ImportError as exc:
                raise RerankerUnavailableError(
                    "the cross-encoder reranker needs the sentence-transformers package"
                ) from exc
            self._model = CrossEncoder(str(self.model_path), local_files_only=True)
            return self._model

    def rerank(self, query: str, qvec: Vector, hits: Sequence[Hit]) -> list[Hit]:
        if len(hits) < 2:
            return list(hits)
        model = self._load()
        pairs = [(query, f"{h.chunk.title}\n{h.chunk.text}") for h in hits]
        scores = np.asarray(model.predict(pairs), dtype=np.float64).reshape(-1)
        fused = np.array([h.score for h in hits])
        return _reorder(hits, rrf_combine(fused, scores, weight=self.weight, k=self.rrf_k))


def make_reranker(name: str, embedder: Embedder, *, model_path: str | Path | None = None) -> Reranker | None:
    """ "none" -> None, "sentence" -> SentenceReranker, "cross-encoder" -> CrossEncoderReranker."""
    if name == "none":
        return None
    if name == "sentence":
        return SentenceReranker(embedder)
    if name == "cross-encoder":
        if model_path is None:
            raise RerankerUnavailableError("the cross-encoder reranker needs a model path")
        return CrossEncoderReranker(model_path)
    raise ValueError(f"unknown reranker {name!r}")
