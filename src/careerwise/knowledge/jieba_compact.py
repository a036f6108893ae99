"""jieba's search-mode segmentation (``cut_for_search``) over a compact copy of its dictionary.

jieba 0.42 keeps its dictionary as a Python dict of every word and word prefix -> count
(``jieba.dt.FREQ``) and imports its HMM tables as Python dicts, with pkg_resources on the way: tens of
megabytes in a serving process that only ever asks it to segment runs of Chinese characters for BM25.
This module reads jieba's own files (``dict.txt`` and ``finalseg/prob_*.p``, found without importing
jieba) into a marisa trie of the words, their counts in an ``array``, and the emission table as four
flat float arrays: a fraction of that memory once the build's scratch is trimmed, the same tokens, and
no slower to start than jieba itself (the figures: docs/benchmarks.md, "Memory").

The same tokens is the whole point: chunk tokens stored at ingest and query tokens made at search time
must agree, and the stored ones may come from plain jieba (tests/unit/test_jieba_compact.py compares
the two on the bundled corpus, the eval questions and generated text). Do not "improve" the arithmetic
below: every float is computed with the operations, in the order, of jieba's ``Tokenizer.calc`` and
``finalseg.viterbi``, and ties are broken the way theirs are (``max`` over tuples, the later index or
the later state letter winning).
"""

from __future__ import annotations

import importlib.util
import pickle
import re
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from math import log
from pathlib import Path

import marisa_trie

PIECE = re.compile("[\u4e00-\u9fff]+")  # what lexical._WORD hands over: a run of CJK ideographs
_HAN = re.compile("([\u4e00-\u9fd5]+)")  # jieba's Han range (re_han_default, finalseg.re_han)
_FIRST = 0x4E00
_SPAN = 0x9FD5 - _FIRST + 1
MIN_FLOAT = -3.14e100  # finalseg's "impossible" log-probability
_STATES = "BMES"
_PREV = {"B": "ES", "M": "MB", "S": "SE", "E": "BM"}  # finalseg.PrevStatus

Entries = Callable[[], Iterable[tuple[str, int]]]


def jieba_dir() -> Path:
    """The installed jieba package's folder, found without importing it (the import is what costs)."""
    spec = importlib.util.find_spec("jieba")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("jieba is not installed: its dictionary files are needed")
    return Path(next(iter(spec.submodule_search_locations)))


def read_dictionary(path: Path) -> Iterator[tuple[str, int]]:
    """(word, count) per line of a jieba dictionary file (``word count [tag]``, as
    ``Tokenizer.gen_pfdict`` reads it), streamed so no dict of it ever exists. Only the word is
    decoded: this runs twice over 349k lines on the first search, so it is kept lean."""
    with path.open("rb") as f:
        for lineno, raw in enumerate(f, 1):
            parts = raw.strip().split(b" ", 2)
            try:
                yield parts[0].decode("utf-8"), int(parts[1])
            except (ValueError, IndexError) as exc:
                raise ValueError(f"invalid dictionary entry in {path} at line {lineno}: {raw!r}") from exc


@dataclass(frozen=True)
class Hmm:
    """finalseg's hidden Markov model for runs of characters that are not dictionary words. The emission
    table (35k chars x 4 states as dicts in jieba) becomes one float64 array per state indexed by code
    point, holding ``MIN_FLOAT`` where jieba's ``.get`` would default: the same values, exactly."""

    start: Mapping[str, float]
    trans: Mapping[str, Mapping[str, float]]
    emit: Mapping[str, array[float]]

    @classmethod
    def from_tables(
        cls,
        start: Mapping[str, float],
        trans: Mapping[str, Mapping[str, float]],
        emit: Mapping[str, Mapping[str, float]],
    ) -> Hmm:
        arrays: dict[str, array[float]] = {}
        for state, table in emit.items():
            flat = array("d", [MIN_FLOAT]) * _SPAN
            for char, p in table.items():
                # only Han characters ever reach the model (finalseg.cut splits on re_han first)
                if len(char) == 1 and 0 <= ord(char) - _FIRST < _SPAN:
                    flat[ord(char) - _FIRST] = p
            arrays[state] = flat
        return cls(start=dict(start), trans={k: dict(v) for k, v in trans.items()}, emit=arrays)

    @classmethod
    def load(cls, folder: Path) -> Hmm:
        """From finalseg's pickles (the tables its ``.py`` modules hold; a test checks they agree)."""

        def table(name: str) -> dict[str, object]:
            path = folder / name
            with path.open("rb") as f:  # a missing file's error names it already
                try:
                    # the installed jieba package's own data file, as trusted as its code
                    data: object = pickle.load(f)
                except Exception as exc:  # raised again, naming the file
                    # a truncated or foreign file fails in a dozen ways (EOFError, UnpicklingError, ...);
                    # the first Chinese search raises this, so it must say which file to repair
                    raise ValueError(
                        f"jieba's HMM table {path} cannot be read ({exc!r}); reinstall jieba"
                    ) from exc
            if not isinstance(data, dict):
                raise ValueError(f"jieba's HMM table {path} holds a {type(data).__name__}, not a table")
            return data

        start = table("prob_start.p")
        trans = table("prob_trans.p")
        emit = table("prob_emit.p")
        return cls.from_tables(start, trans, emit)  # type: ignore[arg-type]

    def cut(self, run: str) -> Iterator[str]:
        """finalseg's ``__cut`` of a run of Han characters (no force-split words)."""
        states = self._viterbi(run)
        begin = nexti = 0
        for i, char in enumerate(run):
            state = states[i]
            if state == "B":
                begin = i
            elif state == "E":
                yield run[begin : i + 1]
                nexti = i + 1
            elif state == "S":
                yield char
                nexti = i + 1
        if nexti < len(run):
            yield run[nexti:]

    def _viterbi(self, obs: str) -> list[str]:
        """``finalseg.viterbi`` with array look-ups: same sums in the same order, same ``max`` ties."""
        start, trans, emit = self.start, self.trans, self.emit
        index = [ord(c) - _FIRST for c in obs]
        probs = {y: start[y] + emit[y][index[0]] for y in _STATES}
        path = {y: [y] for y in _STATES}
        for t in range(1, len(obs)):
            current: dict[str, float] = {}
            new_path: dict[str, list[str]] = {}
            for y in _STATES:
                em = emit[y][index[t]]
                prob, state = max([(probs[y0] + trans[y0].get(y, MIN_FLOAT) + em, y0) for y0 in _PREV[y]])
                current[y] = prob
                new_path[y] = path[state] + [y]
            probs, path = current, new_path
        _, last = max((probs[y], y) for y in "ES")
        return path[last]


class CompactJieba:
    """``jieba.cut_for_search`` (HMM on, the default dictionary) for runs of CJK ideographs.

    The dictionary is a marisa trie of the words with their counts in an ``array`` indexed by the
    trie's key ids. jieba's prefix entries (the count-0 keys of ``FREQ``) are not stored: jieba's DAG
    walks them only to find the words among a fragment's prefixes, which the trie lists directly."""

    def __init__(
        self, *, words: marisa_trie.Trie, counts: array[int], total: int, longest: int, hmm: Hmm
    ) -> None:
        self._words = words
        self._counts = counts
        self.total = total  # the sum of all counts: a word's probability is count / total
        self._logtotal = log(total)
        self._longest = longest  # no word is longer: the trie need not see more of the sentence
        self._hmm = hmm

    @classmethod
    def from_entries(cls, entries: Entries, *, hmm: Hmm) -> CompactJieba:
        """``entries`` is called twice (the trie first, then the counts by key id), so a file is
        streamed twice instead of held. A word listed twice keeps its last count and both add to the
        total, as in jieba."""
        words = marisa_trie.Trie(word for word, _ in entries())
        counts = array("I", [0]) * len(words)
        total = longest = 0
        for word, count in entries():
            counts[words[word]] = count
            total += count
            longest = max(longest, len(word))
        return cls(words=words, counts=counts, total=total, longest=longest, hmm=hmm)

    @classmethod
    def load(cls) -> CompactJieba:
        """From the installed jieba's default dictionary and HMM tables; nothing is downloaded."""
        folder = jieba_dir()
        return cls.from_entries(
            lambda: read_dictionary(folder / "dict.txt"), hmm=Hmm.load(folder / "finalseg")
        )

    def count(self, word: str) -> int:
        """What ``jieba.dt.FREQ.get(word) or 0`` gives for a word (0 for prefixes and unknowns)."""
        key = self._words.get(word)
        return 0 if key is None else self._counts[key]

    def cut_for_search(self, piece: str) -> list[str]:
        """``list(jieba.cut_for_search(piece))`` for a run of CJK ideographs (``PIECE``)."""
        if not PIECE.fullmatch(piece):
            raise ValueError("cut_for_search takes a run of CJK ideographs (lexical._WORD's pieces)")
        count = self.count
        out: list[str] = []
        for w in self._cut(piece):
            if len(w) > 2:
                out.extend(g for g in (w[i : i + 2] for i in range(len(w) - 1)) if count(g))
            if len(w) > 3:
                out.extend(g for g in (w[i : i + 3] for i in range(len(w) - 2)) if count(g))
            out.append(w)
        return out

    def _cut(self, piece: str) -> Iterator[str]:
        """``Tokenizer.cut`` (HMM on) of a piece: Han blocks through the DAG; the ideographs jieba does
        not count as Han (U+9FD6..U+9FFF) come out one by one, as its non-Han, no-space path does."""
        for block in _HAN.split(piece):
            if not block:
                continue
            if _HAN.match(block):
                yield from self._cut_dag(block)
            else:
                yield from block

    def _cut_dag(self, sentence: str) -> Iterator[str]:
        """``Tokenizer.__cut_DAG``: the best route, single characters gathered and handed to the HMM
        unless the gathered run is itself a word."""
        route = self._route(sentence)
        x, buf = 0, ""
        while x < len(sentence):
            y = route[x] + 1
            if y - x == 1:
                buf += sentence[x]
            else:
                if buf:
                    yield from self._flush(buf)
                    buf = ""
                yield sentence[x:y]
            x = y
        if buf:
            yield from self._flush(buf)

    def _flush(self, buf: str) -> Iterator[str]:
        if len(buf) == 1:
            yield buf
        elif not self.count(buf):
            yield from self._hmm.cut(buf)
        else:
            yield from buf

    def _route(self, sentence: str) -> list[int]:
        """``get_DAG`` then ``calc``: for each position, the end of the word the best route takes.

        jieba's DAG lists the ends of the words among the prefixes of ``sentence[k:]`` (or ``k`` alone
        when there is none, scored with count 1, as ``FREQ.get(...) or 1`` does); the trie enumerates
        those words in one call. Scores: ``log(count) - logtotal + best[end + 1]``, in that order."""
        n = len(sentence)
        words, counts, logtotal, longest = self._words, self._counts, self._logtotal, self._longest
        best: list[tuple[float, int]] = [(0.0, 0)] * (n + 1)  # jieba's route[N] is (0, 0): the same sums
        for k in range(n - 1, -1, -1):
            options = [
                (k + len(w) - 1, c)
                for w, key in words.iter_prefixes_with_ids(sentence[k : k + longest])
                if (c := counts[key])
            ] or [(k, 1)]
            best[k] = max((log(c) - logtotal + best[x + 1][0], x) for x, c in options)
        return [x for _, x in best[:n]]
