"""BM25 over jieba tokens. Traditional Chinese is converted to Simplified for tokenizing only,
because jieba's dictionary is Simplified; English is lower-cased and lightly stemmed."""

from __future__ import annotations

import logging
import math
import re
import threading
from collections import Counter, defaultdict
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

_WORD = re.compile(r"[a-z0-9][a-z0-9+#.\-]*|[\u4e00-\u9fff]+")
_STOP = frozenset(
    [
        "的",
        "了",
        "是",
        "我",
        "你",
        "他",
        "她",
        "在",
        "和",
        "與",
        "跟",
        "也",
        "都",
        "就",
        "要",
        "會",
        "嗎",
        "呢",
        "吧",
        "啊",
        "有",
        "沒有",
        "這",
        "那",
        "一個",
        "什麼",
        "怎麼",
        "如何",
        "可以",
        "the",
        "a",
        "an",
        "of",
        "to",
        "and",
        "or",
        "is",
        "are",
        "be",
        "in",
        "on",
        "for",
        "with",
        "i",
        "you",
        "my",
        "me",
        "it",
        "do",
        "does",
        "how",
        "what",
        "can",
        "should",
    ]
)
_init_lock = threading.Lock()


@lru_cache(maxsize=1)
def _converter() -> object:
    import opencc

    return opencc.OpenCC("t2s")


@lru_cache(maxsize=1)
def _jieba() -> object:
    with _init_lock:
        import jieba

        jieba.setLogLevel(logging.WARNING)
        jieba.initialize()
        return jieba


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def tokenize(text: str) -> list[str]:
    simplified: str = _converter().convert(text.lower())  # type: ignore[attr-defined]
    tokens: list[str] = []
    for piece in _WORD.findall(simplified):
        if piece[0].isascii():
            tokens.append(_stem(piece))
        else:
            tokens.extend(t for t in _jieba().cut_for_search(piece) if t.strip())  # type: ignore[attr-defined]
    return [t for t in tokens if t not in _STOP]


class BM25Index:
    """Okapi BM25. Each (term, document) share of the score depends on the corpus only, so it is computed
    once here: a query adds up one precomputed array per query term."""

    def __init__(self, texts: Sequence[str], *, k1: float = 1.4, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.n = len(texts)
        postings: dict[str, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
        lengths = np.zeros(self.n, dtype=np.float32)
        for i, text in enumerate(texts):
            counts = Counter(tokenize(text))
            lengths[i] = sum(counts.values())
            for term, tf in counts.items():
                docs, tfs = postings[term]
                docs.append(i)
                tfs.append(tf)
        self._avg = float(lengths.mean()) if self.n else 1.0
        self._norm = self.k1 * (1 - self.b + self.b * lengths / max(self._avg, 1e-6))
        # term -> (documents, their shares: idf * tf * (k1 + 1) / (tf + norm), in float32)
        self._arrays: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]] = {}
        for term, (doc_list, tf_list) in postings.items():
            where = np.array(doc_list, dtype=np.int64)
            freq = np.array(tf_list, dtype=np.float32)
            idf = math.log(1 + (self.n - len(where) + 0.5) / (len(where) + 0.5))
            shares = idf * freq * (self.k1 + 1) / (freq + self._norm[where])  # float32 already
            self._arrays[term] = (where, shares.astype(np.float32, copy=False))

    def scores(self, query: str) -> npt.NDArray[np.float32]:
        out = np.zeros(self.n, dtype=np.float32)
        for term in set(tokenize(query)):
            hit = self._arrays.get(term)
            if hit is not None:
                docs, shares = hit
                out[docs] += shares
        return out
