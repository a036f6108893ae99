"""A broken jieba install (its dictionary files missing) in ``knowledge/lexical.py`` (the audit of
2026-11-30): ``lru_cache`` keeps no exception, so every Chinese search used to redo the ~1 s dictionary
build under the lock. The failure is now remembered for ``SEGMENTER_RETRY_AFTER`` seconds (the same
clear error at once), logged once and counted, and the load is tried again after that. The error is one
of ours (``careerwise.errors``): an HTTP request that meets it gets a 503, logged, not a 4xx.

The loader is swapped for one that fails; the retry time is set to an hour or to 0, so nothing waits
for a clock."""

from __future__ import annotations

import logging

import httpx
import pytest
from fastapi import FastAPI

from careerwise.api import errors as api_errors
from careerwise.errors import KnowledgeUnavailableError, SegmenterUnavailableError
from careerwise.knowledge import lexical
from careerwise.knowledge.lexical import tokenize
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


async def test_a_request_that_meets_it_gets_a_logged_503(
    loader: _Loader, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The retriever's failure, not the caller's: ``KnowledgeUnavailableError``'s 503 with its own code,
    logged by the one handler (a plain ``RuntimeError`` got FastAPI's bare 500 before)."""
    monkeypatch.setattr(lexical, "SEGMENTER_RETRY_AFTER", 3600.0)
    assert issubclass(SegmenterUnavailableError, KnowledgeUnavailableError)
    app = FastAPI()
    api_errors.install(app)

    @app.get("/tokens")
    async def tokens() -> list[str]:
        return tokenize("怎麼談薪水")

    transport = httpx.ASGITransport(app=app)
    with caplog.at_level(logging.ERROR, logger="careerwise.api.errors"):
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            r = await client.get("/tokens")
    assert r.status_code == 503
    assert r.json()["error"]["code"] == "segmenter_unavailable"
    assert "FileNotFoundError: jieba/dict.txt" in r.json()["error"]["message"]
    assert any(
        "SegmenterUnavailableError" in rec.getMessage()
        for rec in caplog.records
        if rec.name == "careerwise.api.errors"
    )
