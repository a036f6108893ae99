"""An ingest on PostgreSQL whose centred-vector update fails after the documents were committed (the
audit of 2026-11-30): whatever ``sync_centring`` raises, the knowledge version is bumped (caches and
the other processes must see the new documents) and the failure is in the report, as a database error
there always was. ``sync_centring`` is swapped for one that raises; the rest is real (PostgreSQL with
pgvector, migrations, the ingest's writes)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from careerwise.knowledge import ingest
from careerwise.knowledge.embeddings import Matrix
from careerwise.knowledge.ingest import CENTRING_ENTRY, current_version, ingest_paths
from careerwise.knowledge.pg_index import VECTOR_DIM
from careerwise.store import Database


class _Hashed:
    """Deterministic unit vectors of pgvector's dimension, from each text's hash (no model)."""

    name = "hashed"
    dim = VECTOR_DIM

    def _rows(self, texts: Sequence[str]) -> Matrix:
        rows = []
        for t in texts:
            seed = int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "big")
            v = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
            rows.append(v / np.linalg.norm(v))
        return np.vstack(rows) if rows else np.zeros((0, self.dim), np.float32)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self._rows(texts)

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        return self._rows(texts)


class _Stopped(BaseException):
    """Stands for an interruption (a cancellation, Ctrl-C) in the middle of the centring update."""


def _note(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(
        f"---\nid: {name}\ntitle: {name}\ndomain: other\nlang: en\n---\n# {name}\n\n{body}\n",
        encoding="utf-8",
    )
    return folder


async def test_any_centring_error_is_reported_and_the_version_still_moves(
    pg_empty_database: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug in the means")  # not a SQLAlchemyError: the case the old code let through

    monkeypatch.setattr(ingest, "sync_centring", broken)
    db = Database(pg_empty_database)
    db.migrate()
    try:
        before = await current_version(db)
        folder = _note(tmp_path / "docs", "z-raise", "Ask for a raise after a good review.")
        report = await ingest_paths(db, _Hashed(), [folder])
        assert report.added == ["z-raise"] and report.chunks_written >= 1
        assert report.failed == {
            CENTRING_ENTRY: "centred vectors not updated (RuntimeError: a bug in the means)"
        }
        assert report.version is not None and report.version != before
        assert await current_version(db) == report.version  # what the other processes compare with
    finally:
        await db.dispose()


async def test_an_interrupted_centring_update_still_bumps_the_version(
    pg_empty_database: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise _Stopped

    monkeypatch.setattr(ingest, "sync_centring", interrupted)
    db = Database(pg_empty_database)
    db.migrate()
    try:
        before = await current_version(db)
        folder = _note(tmp_path / "docs", "z-leave", "How many days of leave to ask for.")
        with pytest.raises(_Stopped):
            await ingest_paths(db, _Hashed(), [folder])
        assert await current_version(db) != before  # the committed document is announced anyway
    finally:
        await db.dispose()
