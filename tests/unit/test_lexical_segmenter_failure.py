"""A broken jieba install (its dictionary files missing) in ``knowledge/lexical.py`` (the audit of
2026-11-30): ``lru_cache`` keeps no exception, so every Chinese search used to redo the ~1 s dictionary
build under the lock. The failure is now remembered for ``SEGMENTER_RETRY_AFTER`` seconds (the same
clear error at once), logged once and counted, and the load is tried again after that.

The loader is swapped for one that fails; the retry time is set to an hour or to 0, so nothing waits
for a clock."""

from __future__ import annotations

import logging

import pytest

from careerwise.knowledge import lexical
from careerwise.knowledge.lexical import SegmenterUnavailableError, tokenize
from careerwise.tracing.background import JIEBA_DICTIONARY, failure_counts


class _Loader:
    """Stands in for ``_load_segmenter``: raises while ``broken``, then returns a trivial segmenter."""

    def __init__(self) -> None:
        self.calls = 0
        self.broken = True

    def __call__(self) -> _Whole:
        self.calls += 1
        if self.broken:
            raise FileNotFoundError("jieba/dict.txt")
        return _Whole()


class _Whole:
    def cut_for_search(self, piece: str) -> list[str]:
        return [piece]


@pytest.fixture
def loader(monkeypatch: pytest.MonkeyPatch) -> _Loader:
    fake = _Loader()
    monkeypatch.setattr(lexical, "_load_segmenter", fake)
    monkeypatch.setattr(lexical, "_load_failure", None)  # put back as it was after the test
    return fake


def test_a_failed_load_is_remembered_logged_once_and_counted(
    loader: _Loader, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(lexical, "SEGMENTER_RETRY_AFTER", 3600.0)
    before = failure_counts()[JIEBA_DICTIONARY]
    with caplog.at_level(logging.ERROR, logger="careerwise.knowledge.lexical"):
        for _ in range(5):  # five Chinese searches in the minute after the failure
            with pytest.raises(
                SegmenterUnavailableError, match=r"FileNotFoundError: jieba/dict\.txt"
            ) as info:
                tokenize("怎麼談薪水")
            assert isinstance(info.value.__cause__, FileNotFoundError)
    assert loader.calls == 1  # the old code tried the load five times
    assert caplog.text.count("jieba's dictionary could not be loaded") == 1
    assert failure_counts()[JIEBA_DICTIONARY] == before + 1
    assert tokenize("salary negotiation") == ["salary", "negotiation"]  # English needs no segmenter


def test_the_load_is_tried_again_once_the_retry_time_has_passed(
    loader: _Loader, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lexical, "SEGMENTER_RETRY_AFTER", 0.0)
    with pytest.raises(SegmenterUnavailableError):
        tokenize("怎麼談薪水")
    loader.broken = False  # the install was repaired
    assert tokenize("談薪水") == ["谈薪水"]
    assert loader.calls == 2 and lexical._load_failure is None
