"""Layer 2: similarity to example utterances per intent (``examples.json``).

A message scores, for each intent, the mean cosine similarity of its ``k`` nearest examples of that
intent. Vectors are centred per language first (the mean example vector of that language is
subtracted and the result re-normalised): a multilingual encoder puts a strong "this is Chinese"
direction into every vector, which otherwise makes every Chinese example look alike (see
``knowledge/embeddings.py``). The cascade accepts the best intent when its score clears that intent's
calibrated threshold and leads the runner-up by the calibrated margin (``thresholds.py``).

Everything here is blocking numpy / model work: the cascade runs it in a worker thread.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from careerwise.knowledge.embeddings import LANGS, Embedder, Matrix, detect_lang

INTENTS: tuple[str, ...] = ("greeting", "career", "resume", "booking", "offtopic")
EXAMPLES_FILE = Path(__file__).with_name("examples.json")  # written by hand
# the finished blind sets' messages, as labelled there (scripts/gather_routing_examples.py, decision 0028)
SET_EXAMPLES_FILE = Path(__file__).with_name("examples-sets.json")
CLIP_CHARS = 160  # the e5 model's cost grows with length; an intent shows in the opening and the end


def load_examples(path: Path | None = None) -> dict[str, tuple[str, ...]]:
    """The example utterances per intent, in ``INTENTS`` order; every intent must have some. Without
    ``path``: the hand-written examples, then those of the finished blind sets (when that file is
    there), each text once."""
    paths = [path] if path is not None else [EXAMPLES_FILE, SET_EXAMPLES_FILE]
    merged: dict[str, list[str]] = {name: [] for name in INTENTS}
    seen: set[str] = set()
    for n, source in enumerate(paths):
        if n and not source.exists():
            continue
        intents = json.loads(source.read_text(encoding="utf-8"))["intents"]
        unknown = set(intents) - set(INTENTS)
        if unknown:
            raise ValueError(f"examples for unknown intents in {source.name}: {sorted(unknown)}")
        for name in INTENTS:
            for text in intents.get(name, ()):
                if str(text) not in seen:
                    seen.add(str(text))
                    merged[name].append(str(text))
    empty = [name for name, texts in merged.items() if not texts]
    if empty:
        raise ValueError(f"no examples for {empty}")
    return {name: tuple(texts) for name, texts in merged.items()}


def clip(text: str, limit: int = CLIP_CHARS) -> str:
    """Whitespace collapsed; a long text keeps its first three quarters and its last quarter."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    tail = limit // 4
    return f"{text[: limit - tail]} … {text[-tail:]}"


@dataclass(frozen=True)
class IntentScores:
    scores: Mapping[str, float]

    @property
    def ranked(self) -> list[tuple[str, float]]:
        return sorted(self.scores.items(), key=lambda kv: (-kv[1], INTENTS.index(kv[0])))

    @property
    def best(self) -> tuple[str, float]:
        return self.ranked[0]

    @property
    def runner_up(self) -> tuple[str, float]:
        return self.ranked[1]

    @property
    def margin(self) -> float:
        return self.best[1] - self.runner_up[1]


def _balanced_mean(vectors: Matrix, labels: np.ndarray) -> np.ndarray:
    """The mean of the per-label means of ``vectors``."""
    groups = [vectors[labels == name].mean(axis=0) for name in INTENTS if (labels == name).any()]
    out: np.ndarray = np.stack(groups).mean(axis=0)
    return out


def _normalise_rows(m: Matrix) -> Matrix:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: Matrix = (m / norms).astype(np.float32)
    return out


class SemanticClassifier:
    """Scores messages against the example utterances. ``prepare()`` embeds the examples once."""

    def __init__(
        self, embedder: Embedder, examples: Mapping[str, Sequence[str]] | None = None, *, k: int = 3
    ) -> None:
        self.embedder = embedder
        self.examples = {name: tuple(texts) for name, texts in (examples or load_examples()).items()}
        self.k = k
        self._lock = threading.Lock()
        self._vectors: Matrix | None = None
        self._labels: np.ndarray | None = None
        self._means: dict[str, np.ndarray] = {}

    @property
    def digest(self) -> str:
        """Identifies the examples and the model (thresholds are only valid for the pair they were fit on)."""
        h = hashlib.sha256(self.embedder.name.encode())
        h.update(json.dumps(self.examples, ensure_ascii=False, sort_keys=True).encode())
        return h.hexdigest()[:16]

    @property
    def ready(self) -> bool:
        return self._vectors is not None

    def prepare(self, embedder: Embedder | None = None) -> None:
        """Embed the examples (one batched call; with ``embedder`` if given, e.g. a cache in front of
        the same model) and compute the language means. Idempotent."""
        with self._lock:
            if self._vectors is not None:
                return
            texts = [t for name in INTENTS for t in self.examples[name]]
            labels = np.array([name for name in INTENTS for _ in self.examples[name]])
            raw = np.asarray((embedder or self.embedder).embed_queries(texts), dtype=np.float32)
            langs = np.array([detect_lang(t) for t in texts])
            overall = raw.mean(axis=0)
            # a language's direction is the mean of its per-intent means: every intent weighs the same,
            # so an intent with many, widely spread examples (off-topic) does not move the centre
            self._means = {
                lang: (
                    _balanced_mean(raw[langs == lang], labels[langs == lang])
                    if (langs == lang).sum() >= 8
                    else overall
                )
                for lang in LANGS
            }
            self._vectors = self._centre(raw, [str(x) for x in langs])
            self._labels = labels

    def adopt(self, other: SemanticClassifier) -> None:
        """Take the prepared example vectors of a classifier with the same model and examples."""
        if other.digest != self.digest or not other.ready:
            raise ValueError("can only adopt a prepared classifier with the same examples")
        with self._lock:
            self._vectors, self._means, self._labels = other._vectors, other._means, other._labels

    def _centre(self, vectors: Matrix, langs: Sequence[str]) -> Matrix:
        shift = np.stack([self._means[lang] for lang in langs])
        return _normalise_rows(vectors - shift)

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Raw (uncentred) vectors of the clipped messages, one batched call."""
        return np.asarray(self.embedder.embed_queries([clip(t) for t in texts]), dtype=np.float32)

    def score_vectors(self, texts: Sequence[str], vectors: Matrix) -> list[IntentScores]:
        """Scores of messages whose raw vectors are already known (pure numpy, sub-millisecond)."""
        self.prepare()
        assert self._vectors is not None and self._labels is not None
        q = self._centre(vectors, [detect_lang(t) for t in texts])
        return self._scores(q @ self._vectors.T)

    def _scores(self, sims: Matrix) -> list[IntentScores]:
        """Per row of ``sims`` (similarities to every example), each intent's mean of its ``k`` best."""
        assert self._labels is not None
        means = {}
        for name in INTENTS:
            block = sims[:, self._labels == name]
            k = min(self.k, block.shape[1])
            means[name] = (-np.sort(-block, axis=1)[:, :k]).mean(axis=1)
        return [
            IntentScores(scores={name: float(means[name][row]) for name in INTENTS})
            for row in range(sims.shape[0])
        ]

    def held_out_examples(self) -> list[tuple[str, IntentScores, str]]:
        """Each example scored against all the *other* examples, with its text and intent: calibration
        points for ``evaluation.fit`` beside the training messages (as ``LexicalClassifier`` gives its
        own stage's)."""
        self.prepare()
        assert self._vectors is not None and self._labels is not None
        texts = [t for name in INTENTS for t in self.examples[name]]
        sims = self._vectors @ self._vectors.T
        np.fill_diagonal(sims, -1.0)  # not its own neighbour
        labels = self._labels
        return [
            (text, scores, str(labels[j]))
            for j, (text, scores) in enumerate(zip(texts, self._scores(sims), strict=True))
        ]

    def score(self, texts: Sequence[str]) -> list[IntentScores]:
        """Embed and score (blocking)."""
        return self.score_vectors(texts, self.embed(texts))
