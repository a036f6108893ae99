"""``CachedEmbedder``: a text another thread is embedding is waited for, never embedded twice (the
search tool's warm-up and the search that follows ask for the same message; decision 0010)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence

import numpy as np
import pytest

from careerwise.knowledge.embeddings import CachedEmbedder, Matrix


class _Slow:
    """Embeds only once ``release`` is set; counts calls and texts."""

    name, dim = "slow", 4

    def __init__(self, *, fail: bool = False) -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        self.calls: list[list[str]] = []
        self.fail = fail

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        self.calls.append(list(texts))
        self.started.set()
        assert self.release.wait(10)
        if self.fail:
            raise RuntimeError("engine broke")
        return np.array([[len(t), 1, 2, 3] for t in texts], dtype=np.float32)

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        raise NotImplementedError


def _in_thread(cached: CachedEmbedder, texts: list[str], out: dict[str, object]) -> threading.Thread:
    def run() -> None:
        try:
            out["value"] = cached.embed_queries(texts)
        except RuntimeError as exc:
            out["error"] = exc

    t = threading.Thread(target=run)
    t.start()
    return t


def _wait_until_waiting(cached: CachedEmbedder, text: str) -> None:
    """Until the second caller has registered as a waiter (it counted a hit on the text in flight)."""
    for _ in range(1000):
        if cached.hits >= 1:
            return
        threading.Event().wait(0.005)
    raise AssertionError(f"the second caller never waited for {text!r}")


def test_a_text_in_flight_is_embedded_once_for_both_callers() -> None:
    inner = _Slow()
    cached = CachedEmbedder(inner)
    first: dict[str, object] = {}
    second: dict[str, object] = {}
    a = _in_thread(cached, ["怎麼談薪水"], first)
    assert inner.started.wait(10)
    b = _in_thread(cached, ["怎麼談薪水", "other"], second)
    _wait_until_waiting(cached, "怎麼談薪水")
    inner.release.set()
    a.join(10)
    b.join(10)
    assert inner.calls == [
        ["怎麼談薪水"],
        ["other"],
    ]  # the shared text once; the new one by the second caller
    first_rows, second_rows = first["value"], second["value"]
    assert isinstance(first_rows, np.ndarray) and isinstance(second_rows, np.ndarray)
    assert np.array_equal(first_rows[0], second_rows[0]) and second_rows.shape == (2, 4)
    assert (cached.hits, cached.misses) == (1, 2)
    assert cached.has_all(["怎麼談薪水", "other"])


def test_a_failed_embedding_fails_every_caller_and_is_not_cached() -> None:
    inner = _Slow(fail=True)
    cached = CachedEmbedder(inner)
    first: dict[str, object] = {}
    second: dict[str, object] = {}
    a = _in_thread(cached, ["q"], first)
    assert inner.started.wait(10)
    b = _in_thread(cached, ["q"], second)
    _wait_until_waiting(cached, "q")
    inner.release.set()
    a.join(10)
    b.join(10)
    assert isinstance(first.get("error"), RuntimeError) and isinstance(second.get("error"), RuntimeError)
    assert len(inner.calls) == 1 and not cached.has_all(["q"])
    inner.fail = False
    assert cached.embed_queries(["q"]).shape == (1, 4)  # nothing stuck in flight: the next call embeds
    assert len(inner.calls) == 2


def test_a_text_repeated_in_one_call_is_embedded_once() -> None:
    inner = _Slow()
    inner.release.set()
    cached = CachedEmbedder(inner)
    rows = cached.embed_queries(["a", "a", "bb"])
    assert inner.calls == [["a", "bb"]] and rows.shape == (3, 4)
    assert np.array_equal(rows[0], rows[1])


@pytest.fixture(autouse=True)
def _no_leaked_threads() -> Iterator[None]:
    before = threading.active_count()
    yield
    assert threading.active_count() <= before
