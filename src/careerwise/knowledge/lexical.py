"""BM25 over jieba tokens. Traditional Chinese is converted to Simplified for tokenizing only,
because jieba's dictionary is Simplified; English is lower-cased and lightly stemmed. The Chinese pieces
go through ``jieba_compact``: jieba's own search-mode segmentation and dictionary, held in a trie
(a fraction of jieba's own memory), the same tokens."""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from careerwise.errors import SegmenterUnavailableError
from careerwise.tracing.background import JIEBA_DICTIONARY, count_failure

if TYPE_CHECKING:
    from careerwise.knowledge.jieba_compact import CompactJieba

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
log = logging.getLogger(__name__)


@lru_cache(maxsize=1)
def _converter() -> object:
    import opencc

    return opencc.OpenCC("t2s")


# after a failed dictionary load, how long every Chinese text is refused at once instead of retrying:
# lru_cache keeps no exception, so without this each search would redo the dictionary's build (the slow
# part of the first Chinese search) under the lock
SEGMENTER_RETRY_AFTER = 60.0
_load_failure: tuple[float, BaseException] | None = None  # (time.monotonic() of the failure, its cause)


def _segmenter() -> CompactJieba:
    """Built on the first Chinese text (about 1 s: jieba's dictionary file read into a trie, as long
    as jieba's own start took), once: the lock keeps two first searches from building it twice. A load
    that failed is remembered (:data:`SEGMENTER_RETRY_AFTER`), logged once and counted."""
    global _load_failure
    with _init_lock:
        failure = _load_failure
        if failure is not None and time.monotonic() - failure[0] < SEGMENTER_RETRY_AFTER:
            raise _unavailable(failure[1])
        try:
            segmenter = _load_segmenter()
        except Exception as exc:  # whatever a broken install raises: the same clear error for all callers
            _load_failure = (time.monotonic(), exc)
            log.error(
                "lexical: jieba's dictionary could not be loaded; Chinese text cannot be searched "
                "(retried in %.0f s): %s",
                SEGMENTER_RETRY_AFTER,
                exc,
                exc_info=exc,
            )
            count_failure(JIEBA_DICTIONARY)
            raise _unavailable(exc) from exc
        _load_failure = None
        return segmenter


def _unavailable(cause: BaseException) -> SegmenterUnavailableError:
    """What every Chinese text gets for ``SEGMENTER_RETRY_AFTER`` seconds after a failed load (then the
    load is tried again), with the load's failure chained."""
    error = SegmenterUnavailableError(
        f"the Chinese word segmenter is unavailable: {type(cause).__name__}: {cause}"
    )
    error.__cause__ = cause
    return error


@lru_cache(maxsize=1)
def _load_segmenter() -> CompactJieba:
    from careerwise.knowledge.jieba_compact import CompactJieba

    return CompactJieba.load()


def _cut_for_search(piece: str) -> list[str]:
    return _segmenter().cut_for_search(piece)


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def tokenize(text: str) -> list[str]:
    return tokenize_with(text, segment=_cut_for_search)


def tokenize_with(text: str, *, segment: Callable[[str], Iterable[str]]) -> list[str]:
    """``tokenize`` with the Chinese pieces (runs of CJK ideographs) cut by ``segment``: the tests pass
    plain ``jieba.cut_for_search`` to check the compact one against it."""
    simplified: str = _converter().convert(text.lower())  # type: ignore[attr-defined]
    tokens: list[str] = []
    for piece in _WORD.findall(simplified):
        if piece[0].isascii():
            tokens.append(_stem(piece))
        else:
            tokens.extend(t for t in segment(piece) if t.strip())
    return [t for t in tokens if t not in _STOP]


TOKENIZER_VERSION = "1"  # bump when tokenize() changes: stored tokens are then redone once, at load


def token_string(text: str) -> str:
    """``tokenize(text)`` as stored in ``chunks.lexical_tokens``: one space between tokens (a token
    never holds whitespace: see ``_WORD`` and the filter in ``tokenize``)."""
    return " ".join(tokenize(text))


def chunk_text(title: str, section: str, text: str) -> str:
    """What BM25 indexes for a chunk: title, section heading and text."""
    return f"{title} {section} {text}"


class BM25Index:
    """Okapi BM25. Each (term, document) share of the score depends on the corpus only, so it is computed
    once here: a query adds up one precomputed array per query term, touching only those postings.

    ``BM25Index(texts)`` tokenizes; ``BM25Index.from_tokens(stored)`` takes ``token_string`` results
    (what ingest stores), so that loading 100k chunks does not run jieba over all of them again."""

    def __init__(self, texts: Sequence[str], *, k1: float = 1.4, b: float = 0.75) -> None:
        self._build([token_string(t) for t in texts], k1=k1, b=b)

    @classmethod
    def from_tokens(cls, token_strings: Sequence[str], *, k1: float = 1.4, b: float = 0.75) -> BM25Index:
        index = cls.__new__(cls)
        index._build(token_strings, k1=k1, b=b)
        return index

    def _build(self, token_strings: Sequence[str], *, k1: float, b: float) -> None:
        """Postings for every term at once with numpy: (term, document) pairs become one int64 key each,
        ``np.unique`` counts them (sorted by term, then document), and the shares are computed in one
        vectorised expression; no per-document ``Counter``."""
        self.k1, self.b = k1, b
        self.n = n = len(token_strings)
        vocab: dict[str, int] = {}
        term_ids: list[int] = []
        lengths = np.zeros(n, dtype=np.float32)
        for i, s in enumerate(token_strings):
            tokens = s.split()
            lengths[i] = len(tokens)
            term_ids.extend([vocab.setdefault(t, len(vocab)) for t in tokens])
        docs_of_tokens = np.repeat(np.arange(n, dtype=np.int64), lengths.astype(np.int64))
        keys, tf = np.unique(
            np.array(term_ids, dtype=np.int64) * max(n, 1) + docs_of_tokens, return_counts=True
        )
        terms, docs = np.divmod(keys, max(n, 1))
        starts = np.flatnonzero(np.r_[True, terms[1:] != terms[:-1]]) if len(terms) else np.zeros(0, np.intp)
        # an empty knowledge base (or one whose chunks have no tokens) has no postings at all
        ends = np.r_[starts[1:], len(terms)].astype(np.intp) if len(terms) else np.zeros(0, np.intp)
        df = (ends - starts).astype(np.float64)
        self._avg = float(lengths.mean()) if n else 1.0
        self._norm = self.k1 * (1 - self.b + self.b * lengths / max(self._avg, 1e-6))
        # the same float32 operations, in the same order, as a per-term loop would do
        idf = np.log(1 + (n - df + 0.5) / (df + 0.5)).astype(np.float32)
        freq = tf.astype(np.float32)
        shares = (np.repeat(idf, ends - starts) * freq * np.float32(self.k1 + 1)) / (freq + self._norm[docs])
        names = list(vocab)
        # term -> (documents, their shares: idf * tf * (k1 + 1) / (tf + norm), in float32)
        self._arrays: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]] = {
            names[int(terms[a])]: (docs[a:e], shares[a:e]) for a, e in zip(starts, ends, strict=True)
        }

    def scores(self, query: str) -> npt.NDArray[np.float32]:
        out = np.zeros(self.n, dtype=np.float32)
        for term in set(tokenize(query)):
            hit = self._arrays.get(term)
            if hit is not None:
                docs, shares = hit
                out[docs] += shares
        return out
