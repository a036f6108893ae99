"""Layer 2, stage 1: a cheap lexical scorer over the same example utterances as the embedding stage.

Embedding a message costs far more than the goal for layers 1 and 2 together (docs/routing.md,
"Latency"). Most messages the rules leave
over are still plain enough to be placed by their words alone («履歷可以幫我看嗎», "how much is a
session"), so this stage scores them from character n-grams first and decides only when it is sure;
the rest go on to the embedding stage exactly as before (docs/routing.md, "Layer 2, stage 1").

Features (pure Python + numpy, no model): Chinese as character unigrams and bigrams (no
word segmenter: bigrams cover most two-character words and need no dictionary in memory), Latin text as
words, word bigrams and character trigrams inside words (which survive typos: "resme", "negotiat").
TF-IDF weights from the examples, cosine similarity, and an intent's score is the mean of its ``k``
nearest examples, as in the embedding stage, so the same calibration (``thresholds.fit_thresholds``)
fits its own bars (``thresholds-lexical.json``).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from careerwise.routing.semantic import INTENTS, IntentScores, load_examples

NAME = "lexical"  # the "model" name its thresholds are fitted for
_HAN_RUN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+")
_LATIN_WORD = re.compile(r"[a-z0-9]+")


def features(text: str) -> Counter[str]:
    """Counts of the message's n-gram features (NFKC, lower case)."""
    t = unicodedata.normalize("NFKC", text).lower()
    out: Counter[str] = Counter()
    for run in _HAN_RUN.findall(t):
        out.update(f"c:{ch}" for ch in run)
        out.update(f"b:{run[i : i + 2]}" for i in range(len(run) - 1))
    words = _LATIN_WORD.findall(t)
    out.update(f"w:{w}" for w in words)
    for segment in _HAN_RUN.split(t):  # words either side of Chinese text are not neighbours
        out.update(f"p:{a} {b}" for a, b in itertools.pairwise(_LATIN_WORD.findall(segment)))
    for w in words:
        padded = f"<{w}>"
        out.update(f"g:{padded[i : i + 3]}" for i in range(len(padded) - 2))
    return out


class LexicalClassifier:
    """TF-IDF n-gram vectors of the examples, built once (a few ms); ``score`` is pure Python/numpy."""

    name = NAME

    def __init__(self, examples: Mapping[str, Sequence[str]] | None = None, *, k: int = 3) -> None:
        self.examples = {name: tuple(texts) for name, texts in (examples or load_examples()).items()}
        self.k = k
        texts = [t for name in INTENTS for t in self.examples[name]]
        self._labels = np.array([name for name in INTENTS for _ in self.examples[name]])
        counts = [features(t) for t in texts]
        df: Counter[str] = Counter()
        for c in counts:
            df.update(c.keys())
        n = len(texts)
        self._index = {f: i for i, f in enumerate(sorted(df))}
        self._idf = np.array([math.log((1 + n) / (1 + df[f])) + 1 for f in sorted(df)], np.float32)
        self._unseen_idf = math.log(1 + n) + 1  # a feature no example has: counts in the norm only
        # features x examples, columns of unit length, kept sparse (CSR: about 7 000 non-zeros against
        # 3 000 x 266 cells, some 60 KB instead of 3 MB in a process with a memory budget)
        rows: list[list[tuple[int, float]]] = [[] for _ in self._index]
        norms = np.zeros(n, np.float32)
        for j, c in enumerate(counts):
            for f, tf in c.items():
                i = self._index[f]
                w = (1 + math.log(tf)) * float(self._idf[i])
                rows[i].append((j, w))
                norms[j] += w * w
        norms = np.sqrt(norms)
        norms[norms == 0] = 1.0
        self._indptr = np.cumsum([0, *(len(r) for r in rows)]).astype(np.int64)
        self._cols = np.array([j for r in rows for j, _ in r], np.int32)
        self._vals = np.array([w / norms[j] for r in rows for j, w in r], np.float32)
        self._n = n
        self._masks = {name: self._labels == name for name in INTENTS}

    @property
    def digest(self) -> str:
        """Identifies the examples and the feature scheme (its thresholds are only valid for both)."""
        h = hashlib.sha256(f"{NAME}-v2".encode())  # bump when features() changes
        h.update(json.dumps(self.examples, ensure_ascii=False, sort_keys=True).encode())
        return h.hexdigest()[:16]

    def _similarities(self, text: str) -> np.ndarray:
        """Cosine similarity of the message to every example."""
        starts: list[int] = []
        ends: list[int] = []
        weights: list[float] = []
        norm2 = 0.0
        for f, tf in features(text).items():
            i = self._index.get(f)
            w = (1 + math.log(tf)) * (float(self._idf[i]) if i is not None else self._unseen_idf)
            norm2 += w * w
            if i is not None:
                starts.append(int(self._indptr[i]))
                ends.append(int(self._indptr[i + 1]))
                weights.append(w)
        if not starts:
            return np.zeros(self._n, np.float32)
        picks = np.concatenate([np.arange(a, b) for a, b in zip(starts, ends, strict=True)])
        spread = np.repeat(np.asarray(weights, np.float32), np.subtract(ends, starts))
        sims = np.bincount(self._cols[picks], weights=self._vals[picks] * spread, minlength=self._n)
        out: np.ndarray = (sims / math.sqrt(norm2)).astype(np.float32)
        return out

    def _intent_scores(self, sims: np.ndarray) -> IntentScores:
        scores: dict[str, float] = {}
        for name in INTENTS:
            block = sims[self._masks[name]]
            k = min(self.k, block.shape[0])
            scores[name] = float(np.partition(block, block.shape[0] - k)[-k:].mean()) if k else 0.0
        return IntentScores(scores=scores)

    def score(self, texts: Sequence[str]) -> list[IntentScores]:
        """Every intent's score for each message (pure Python/numpy)."""
        return [self._intent_scores(self._similarities(text)) for text in texts]

    def held_out_examples(self) -> list[tuple[IntentScores, str]]:
        """Each example scored against all the *other* examples, with its intent: calibration points
        for ``fit_lexical``. The training messages alone cannot calibrate this stage: n-gram overlap
        with the examples separates them so well that every bar down to the lowest keeps full
        precision, and the fit would then accept nearly everything."""
        texts = [t for name in INTENTS for t in self.examples[name]]
        out: list[tuple[IntentScores, str]] = []
        for j, text in enumerate(texts):
            sims = self._similarities(text)
            sims[j] = -1.0  # not its own neighbour (the IDF still counts it: a small, safe bias)
            out.append((self._intent_scores(sims), str(self._labels[j])))
        return out


_BUILT: dict[str, LexicalClassifier] = {}


def lexical_classifier(
    examples: Mapping[str, Sequence[str]] | None = None, *, k: int = 3
) -> LexicalClassifier:
    """One classifier per examples and ``k`` for the life of the process (building one takes a few ms
    and routers are cheap to construct)."""
    key = hashlib.sha256(
        json.dumps([examples, k], ensure_ascii=False, sort_keys=True, default=list).encode()
    ).hexdigest()
    built = _BUILT.get(key)
    if built is None:
        built = _BUILT[key] = LexicalClassifier(examples, k=k)
    return built
