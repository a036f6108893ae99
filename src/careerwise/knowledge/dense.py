"""Dense scores for the in-process index, exact where the ranking needs them and cheap elsewhere.

At 100k chunks the exact scan (a 100k x 384 float32 matrix times the query) reads the whole matrix per
query and is bound by memory bandwidth: more than everything else in a search. An int8 copy of the
matrix is a quarter of the bytes. Its scores are approximations, but each row's error has a
bound known in advance (below), so the search can still return exactly what the exact scan would:

* the ``m`` best rows: every row whose upper bound reaches the ``m``-th best lower bound is rescored
  exactly, and those exact scores pick the ``m``;
* a row's rank: rows whose lower bound is above its score are certainly ahead of it, rows whose upper
  bound is below certainly behind; only the band in between is rescored;
* the relevance gate (a threshold): the same, around the threshold.

Rescored rows are kept for the rest of the query. If a band grows past a quarter of the rows, every row
is scored exactly once instead. ``ExactScores`` gives the same interface over a plain array (small
indexes, the PostgreSQL backend), so ``index.fused_top`` and ``index.gate_and_fuse`` serve both.

The bound. A row ``p`` is stored as ``s * c`` with ``c`` int8 and ``s = max|p_i| / 127`` (its own scale),
so the rounding residual ``r = p - s * c`` has ``|r_i| <= s / 2``. For a query ``q``,
``|p . q - s (c . q)| = |r . q| <= min(s/2 * |q|_1, |r|_2 * |q|_2)`` (Hoelder, Cauchy-Schwarz), plus the
float32 rounding of both computations (``FLOAT_SLACK``). Exact scores are computed in float64 and
rounded to float32, so a row's exact score does not depend on which other rows it was computed with
(float32 matrix-vector kernels sum in a different order for different row counts; the ranking is
compared bit for bit by ``bench/search.py``).
"""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

from careerwise.knowledge.embeddings import Matrix, Vector

log = logging.getLogger(__name__)

FloatArray = npt.NDArray[np.floating]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.intp]
BLOCK = 1024  # rows converted int8 -> float32 at a time (1.5 MB: stays in cache; see below)
FLOAT_SLACK = 4e-5  # > 2 x 384 x 2^-24, the rounding of two length-384 float32 sums (relative)
GATE_SLACK = 1e-5  # the gate's threshold is moved into the dense scale with float32 arithmetic


SEARCH_BLAS_THREADS = 1  # docs/retrieval.md, "OpenBLAS threads"
# numpy's wheels bundle scipy-openblas (64-bit ints, prefixed names); a system OpenBLAS has plain ones
_BLAS_SETTERS = (
    "scipy_openblas_set_num_threads64_",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)
_BLAS_GETTERS = (
    "scipy_openblas_get_num_threads64_",
    "openblas_get_num_threads64_",
    "openblas_get_num_threads",
)


def set_blas_threads(threads: int) -> int | None:
    """Set the process's OpenBLAS thread count (what numpy's matrix products use); returns the count
    read back, or None when no OpenBLAS is loaded or it cannot be set (logged).

    Process-wide (OpenBLAS has one pool), so ``KnowledgeBase`` sets it once at load, to
    ``SEARCH_BLAS_THREADS``: the query-time products are matrix-vector ones, which OpenBLAS splits
    over its threads from about 9,000 elements on (a 1,024-row block already), and each split waits for
    the other threads to be scheduled. On a loaded machine that wait costs far more than the product
    itself, so one thread is faster (docs/retrieval.md has the figures)."""
    found = _openblas()
    if found is None:
        log.warning("knowledge: no OpenBLAS found to set its thread count; numpy keeps its default")
        return None
    setter, getter = found
    setter(max(1, int(threads)))
    return int(getter())


def blas_threads() -> int | None:
    """OpenBLAS's current thread count, None without an OpenBLAS."""
    found = _openblas()
    return int(found[1]()) if found is not None else None


def _openblas() -> tuple[Callable[[int], None], Callable[[], int]] | None:
    for path in _loaded_openblas():
        lib = ctypes.CDLL(str(path))
        setter = next((getattr(lib, n) for n in _BLAS_SETTERS if hasattr(lib, n)), None)
        getter = next((getattr(lib, n) for n in _BLAS_GETTERS if hasattr(lib, n)), None)
        if setter is not None and getter is not None:
            setter.argtypes, setter.restype = [ctypes.c_int], None
            getter.argtypes, getter.restype = [], ctypes.c_int
            return setter, getter
    return None


def _loaded_openblas() -> list[Path]:
    """The OpenBLAS libraries mapped into this process (Linux: /proc/self/maps; elsewhere none)."""
    maps = Path("/proc/self/maps")
    if not maps.exists():
        return []
    found: dict[str, None] = {}
    for line in maps.read_text().splitlines():
        path = line.split()[-1] if line.split() else ""
        if "openblas" in Path(path).name.lower() and path.startswith("/"):
            found[path] = None
    return [Path(p) for p in found]


def exact_scores(vectors: Matrix, q: Vector) -> npt.NDArray[np.float32]:
    """Row . q in float64, rounded to float32: the same for a row whatever rows come with it. In
    blocks, so that scoring every row does not make a float64 copy of the whole matrix."""
    q64 = q.astype(np.float64)
    out = np.empty(len(vectors), np.float32)
    for start in range(0, len(vectors), 8 * BLOCK):
        out[start : start + 8 * BLOCK] = vectors[start : start + 8 * BLOCK].astype(np.float64) @ q64
    return out


def stable_top(keys: FloatArray, m: int) -> IntArray:
    """Positions of the ``m`` smallest keys (and of every key equal to the m-th smallest), in the order
    ``np.argsort(keys, kind="stable")`` puts them: an element's place in the list is its rank. One
    partition and a sort of the few selected, instead of a sort of everything. No NaN keys."""
    n = len(keys)
    if m >= n:
        top = np.arange(n)
    else:
        kth = np.partition(keys, m - 1)[m - 1]
        top = np.flatnonzero(keys <= kth)
    out: IntArray = top[np.argsort(keys[top], kind="stable")]
    return out


def stable_rank(keys: FloatArray, i: int) -> int:
    """Where element ``i`` lands in ``np.argsort(keys, kind="stable")``: smaller keys, then equal keys
    at lower positions, come first."""
    x = keys[i]
    return int(np.count_nonzero(keys < x)) + int(np.count_nonzero(keys[:i] == x))


class DenseScores(Protocol):
    """What the fused ranking asks of the dense scores (higher is better)."""

    def __len__(self) -> int: ...

    def has_nan(self) -> bool: ...

    def full(self) -> FloatArray:
        """Every score, exactly."""
        ...

    def at(self, rows: IntArray) -> FloatArray: ...

    def top(self, m: int) -> IntArray:
        """``stable_top(-scores, m)``."""
        ...

    def rank(self, i: int) -> int:
        """``stable_rank(-scores, i)``."""
        ...

    def where(self, predicate: Callable[[FloatArray], BoolArray], threshold: float) -> BoolArray:
        """``predicate(scores)``, for a predicate that is true from about ``threshold`` up."""
        ...

    def subset(self, rows: IntArray) -> DenseScores: ...

    def best(self, rows: IntArray) -> float:
        """The highest score among ``rows``, exactly (-inf for no rows)."""
        ...

    def raised(self, positions: IntArray, deltas: FloatArray) -> DenseScores:
        """The same scores with ``deltas`` added at ``positions`` (distinct), as ``raised_values`` adds
        them; the other rows keep theirs. A new object: this one is unchanged."""
        ...


def raised_values(values: FloatArray, deltas: FloatArray) -> FloatArray:
    """``values + deltas``, summed in float64 and rounded back to ``values``' type."""
    out: FloatArray = (values.astype(np.float64) + deltas).astype(values.dtype)
    return out


class ExactScores:
    def __init__(self, values: FloatArray) -> None:
        self.values = values

    def __len__(self) -> int:
        return len(self.values)

    def has_nan(self) -> bool:
        return bool(np.isnan(self.values).any())

    def full(self) -> FloatArray:
        return self.values

    def at(self, rows: IntArray) -> FloatArray:
        out: FloatArray = self.values[rows]
        return out

    def top(self, m: int) -> IntArray:
        return stable_top(-self.values, m)

    def rank(self, i: int) -> int:
        return stable_rank(-self.values, i)

    def where(self, predicate: Callable[[FloatArray], BoolArray], threshold: float) -> BoolArray:
        return predicate(self.values)

    def subset(self, rows: IntArray) -> ExactScores:
        return ExactScores(self.values[rows])

    def best(self, rows: IntArray) -> float:
        return float(self.values[rows].max()) if len(rows) else -np.inf

    def raised(self, positions: IntArray, deltas: FloatArray) -> ExactScores:
        values = self.values.copy()
        values[positions] = raised_values(values[positions], deltas)
        return ExactScores(values)


class QuantizedMatrix:
    """The int8 copy of an index's (normalised, centred) float32 vectors, with what the bound needs."""

    def __init__(self, vectors: Matrix) -> None:
        self.vectors = vectors
        n = len(vectors)
        self.codes: npt.NDArray[np.int8] = np.empty(vectors.shape, np.int8)
        self.scale = np.ones(n, np.float32)
        self.peak = np.zeros(n, np.float64)
        self.residual_norm = np.zeros(n, np.float64)
        for start in range(0, n, 8 * BLOCK):  # in blocks: no full-size temporaries at 100k chunks
            self._quantize(start, vectors[start : start + 8 * BLOCK].astype(np.float64))

    def _quantize(self, start: int, block: npt.NDArray[np.float64]) -> None:
        rows = slice(start, start + len(block))
        peak = np.abs(block).max(axis=1)
        scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
        codes = np.clip(np.rint(block / scale[:, None]), -127, 127).astype(np.int8)
        residual = block - codes.astype(np.float64) * scale[:, None].astype(np.float64)
        self.codes[rows], self.scale[rows], self.peak[rows] = codes, scale, peak
        self.residual_norm[rows] = np.linalg.norm(residual, axis=1)

    def __len__(self) -> int:
        return len(self.vectors)

    def scores(self, q: Vector) -> QuantizedScores:
        n = len(self.codes)
        approx = np.empty(n, np.float32)
        buf = np.empty((min(BLOCK, n), self.codes.shape[1]), np.float32)
        for start in range(0, n, BLOCK):
            block = self.codes[start : start + BLOCK]
            b = buf[: len(block)]
            b[...] = block
            np.dot(b, q, out=approx[start : start + len(block)])
        approx *= self.scale
        q64 = q.astype(np.float64)
        l1, l2 = float(np.abs(q64).sum()), float(np.linalg.norm(q64))
        bound = np.minimum(self.scale * (0.5 * l1), self.residual_norm * l2)
        bound += FLOAT_SLACK * (self.peak * l1 + l2)
        return QuantizedScores(self, q, np.arange(n), approx.astype(np.float64), bound)


class QuantizedScores:
    """Approximate scores with a per-row error bound; exact ones computed on demand and remembered."""

    def __init__(
        self, matrix: QuantizedMatrix, q: Vector, rows: IntArray, approx: FloatArray, bound: FloatArray
    ) -> None:
        self._matrix, self._q, self._rows = matrix, q, rows
        self.approx, self.bound = approx, bound
        self.low, self.high = approx - bound, approx + bound
        self._exact = np.zeros(len(rows), np.float32)
        self._known = np.zeros(len(rows), dtype=bool)
        self.rescored = 0  # rows scored exactly so far (bench and tests read it)

    def __len__(self) -> int:
        return len(self._rows)

    def has_nan(self) -> bool:
        return bool(np.isnan(self.approx).any())

    def _ensure(self, positions: IntArray) -> None:
        todo = positions[~self._known[positions]]
        if not len(todo):
            return
        if len(todo) > len(self) // 4:  # a wide band: one exact pass is cheaper than gathering rows
            todo = np.flatnonzero(~self._known)
        self._exact[todo] = exact_scores(self._matrix.vectors[self._rows[todo]], self._q)
        self._known[todo] = True
        self.rescored += len(todo)

    def full(self) -> FloatArray:
        self._ensure(np.arange(len(self)))
        return self._exact

    def at(self, rows: IntArray) -> FloatArray:
        rows = np.asarray(rows, dtype=np.intp)
        self._ensure(rows)
        out: FloatArray = self._exact[rows]
        return out

    def top(self, m: int) -> IntArray:
        n = len(self)
        if m >= n:
            return stable_top(-self.full(), m)
        floor = np.partition(self.low, n - m)[n - m]  # at least m rows score >= floor
        cand = np.flatnonzero(self.high >= floor)
        self._ensure(cand)
        out: IntArray = cand[stable_top(-self._exact[cand], m)]
        return out

    def rank_floor(self, rows: IntArray) -> npt.NDArray[np.int64]:
        """For each row, how many rows certainly score higher (a lower bound of its rank), no rescoring."""
        if len(rows) <= 16:  # a count per row; past that, one sort and a binary search per row
            return np.array([np.count_nonzero(self.low > self.high[r]) for r in rows], dtype=np.int64)
        ordered = np.sort(self.low)
        below = np.searchsorted(ordered, self.high[rows], side="right")
        out: npt.NDArray[np.int64] = (len(ordered) - below).astype(np.int64)
        return out

    def rank(self, i: int) -> int:
        x = float(self.at(np.array([i]))[0])
        above = int(np.count_nonzero(self.low > x))
        band = np.flatnonzero((self.low <= x) & (self.high >= x))
        self._ensure(band)
        exact = self._exact[band]
        return above + int(np.count_nonzero(exact > x)) + int(np.count_nonzero((exact == x) & (band < i)))

    def where(self, predicate: Callable[[FloatArray], BoolArray], threshold: float) -> BoolArray:
        out = self.low >= threshold + GATE_SLACK
        band = np.flatnonzero(~out & (self.high >= threshold - GATE_SLACK))
        if len(band):
            out[band] = predicate(self.at(band))
        return out

    def subset(self, rows: IntArray) -> QuantizedScores:
        sub = QuantizedScores(self._matrix, self._q, self._rows[rows], self.approx[rows], self.bound[rows])
        sub._exact, sub._known = self._exact[rows], self._known[rows].copy()
        return sub

    def best(self, rows: IntArray) -> float:
        """Only the rows whose bound reaches the highest lower bound among ``rows`` are scored exactly."""
        if not len(rows):
            return -np.inf
        cand = rows[self.high[rows] >= self.low[rows].max()]
        self._ensure(cand)
        return float(self._exact[cand].max())

    def raised(self, positions: IntArray, deltas: FloatArray) -> QuantizedScores:
        """The raised rows are scored exactly first and then known exactly (no bound), so nothing
        rescores them back to their unraised value."""
        self._ensure(positions)
        out = self.subset(np.arange(len(self)))
        value = raised_values(self._exact[positions], deltas)
        out._exact[positions] = value
        out.approx[positions] = out.low[positions] = out.high[positions] = value
        out.bound[positions] = 0.0
        return out
