"""Is a message about careers at all? The topic margin of the relevance gate.

The dense and BM25 bars of the gate (``index.gate_and_fuse``) let through questions that sit near the
corpus without being career questions: a Chinese programming question is close to the articles about
software careers, and a question about an office printer shares their words. The topic margin compares
the message with two fixed sets of short questions, embedded once per process and model:

    margin = mean of its 3 best cosines with career questions  -  the same with off-topic questions

The career side is the language-centring calibration set (``embeddings.CALIBRATION_QUERIES``); the
off-topic side is ``data/offtopic_anchors.json`` (programming and IT how-to, weather, food, travel,
health, pets, homework, writing requests, office chores that are not career advice). Neither holds an
evaluation question. A message whose margin is below ``FusionConfig.min_topic_margin`` matches nothing,
whatever its scores. docs/retrieval.md has the calibration; a knowledge base about another subject than
careers needs its own anchor sets, or ``min_topic_margin`` None.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from careerwise.knowledge.embeddings import CALIBRATION_QUERIES, LANGS, Embedder, Matrix

ANCHORS_PATH = Path(__file__).resolve().parent.parent / "data" / "offtopic_anchors.json"
BEST = 3  # cosines averaged per side: one near neighbour alone is noisy


def offtopic_anchors(path: Path = ANCHORS_PATH) -> list[str]:
    """The off-topic questions of every language, in file order."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    return [str(text) for lang in LANGS for text in raw.get(lang, [])]


@dataclass(frozen=True)
class TopicAnchors:
    career: Matrix
    offtopic: Matrix

    def margin(self, qvec: npt.NDArray[np.float32]) -> float:
        """How much closer the (raw, normalised) query vector is to career questions than to off-topic ones."""
        return _best_mean(self.career @ qvec) - _best_mean(self.offtopic @ qvec)


def _best_mean(similarities: npt.NDArray[np.float32]) -> float:
    k = min(BEST, len(similarities))
    return float(np.partition(similarities, len(similarities) - k)[-k:].mean()) if k else 0.0


_cache: dict[str, TopicAnchors] = {}
_lock = threading.Lock()


def topic_anchors(embedder: Embedder) -> TopicAnchors:
    """Both anchor sets embedded with ``embedder``; computed once per process and model."""
    with _lock:
        cached = _cache.get(embedder.name)
    if cached is not None:
        return cached
    career = [t for lang in LANGS for t in CALIBRATION_QUERIES[lang]]
    offtopic = offtopic_anchors()
    vectors = embedder.embed_queries(career + offtopic)
    anchors = TopicAnchors(career=vectors[: len(career)], offtopic=vectors[len(career) :])
    with _lock:
        _cache[embedder.name] = anchors
    return anchors
