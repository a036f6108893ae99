"""Language-centred chunk vectors on PostgreSQL: the column, the stored means, and when to recompute.

The dense score is the cosine between a chunk's centred vector ``p - m_L`` and the centred query
(``embeddings.LanguageCentering``). On PostgreSQL the centred vectors are stored (``chunks.centred_vec``,
migration 0015) and searched through their own HNSW index, so the index's nearest neighbours are the
best by the score itself. The means ``m_L`` they were centred with are stored too
(``knowledge_centring``) and are the means ``PgVectorIndex`` scores with: the column, the query and the
score always agree, whatever the corpus has become since.

When to recompute (decision 0011, docs/decisions/0011-centred-vectors-on-postgresql.md): every ingest
computes the corpus's current means and compares them with the stored ones (``drift``). Below
``CENTRING_TOLERANCE`` the stored means stay and only new chunks are centred with them (one UPDATE of
the rows without a centred vector); above it, or when no means are stored, or when forced
(``careerwise ingest --recentre``), the new means are stored and the whole column is recomputed in one
UPDATE. A load only fills what is missing (rows from before 0015, or written by a bulk load).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

import numpy as np
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from careerwise.knowledge.embeddings import LANGS, LanguageCentering, Vector, detect_lang

log = logging.getLogger(__name__)

CENTRED_COLUMN = "centred_vec"
LANG_COLUMN = "centring_lang"
CENTRING_TABLE = "knowledge_centring"
CENTRED_HNSW_INDEX = "ix_chunks_centred_vec_hnsw"
# Largest relative drift of the means (``drift``) that keeps the stored ones: below it the rankings keep
# their top 3 for nearly every query, and the means only move this far after a large ingest, whose
# embedding costs about as much as the rebuild it triggers (decision 0011 has the measurements).
CENTRING_TOLERANCE = 0.002
_LOCK_KEY = 0x63656E74  # pg_advisory_xact_lock: one process (re)centres at a time
_BATCH = 5000

Action = Literal["unchanged", "filled", "rebuilt"]


@dataclass(frozen=True)
class Centring:
    """Per-language passage means of one embedding model and the chunk counts they came from."""

    embedding_model: str
    means: dict[str, Vector]
    chunks: dict[str, int]
    computed_at: datetime | None = None


@dataclass(frozen=True)
class CentringSync:
    """What ``sync_centring`` did: ``rebuilt`` (new means, every centred vector rewritten), ``filled``
    (stored means kept, rows without a centred vector centred with them) or ``unchanged``."""

    action: Action
    reason: str
    vectors_written: int
    langs_filled: int
    drift: float | None

    tolerance: float = CENTRING_TOLERANCE

    def describe(self) -> str:
        drift = "" if self.drift is None else f", drift {self.drift:.4f} (tolerance {self.tolerance})"
        if self.action == "rebuilt":
            return f"centred vectors rebuilt ({self.reason}): {self.vectors_written} rewritten{drift}"
        if self.action == "filled":
            return f"centred vectors: {self.vectors_written} new, stored means kept ({self.reason}{drift})"
        return f"centred vectors unchanged ({self.reason}{drift})"


def parse_vector(value: str) -> Vector:
    return np.array([float(x) for x in value.strip("[]").split(",")], dtype=np.float32)


def vector_text(vec: np.ndarray) -> str:
    """pgvector's text form; 9 significant digits give back the same float32."""
    return "[" + ",".join(f"{x:.9g}" for x in np.asarray(vec, dtype=np.float32).tolist()) + "]"


def drift(old: dict[str, Vector], new: dict[str, Vector]) -> float:
    """How far the means moved, relative to how far chunks sit from them: the largest, over languages,
    of |m_new - m_old| / sqrt(1 - |m_new|^2). For unit vectors the mean squared distance of a group's
    chunks to its mean is 1 - |m|^2, so this is the shift as a share of a typical centred vector's
    length, which is what bounds how much a centred cosine can change. A language missing from ``old``
    counts as infinitely far."""
    worst = 0.0
    for lang, mean in new.items():
        before = old.get(lang)
        if before is None:
            return math.inf
        spread = math.sqrt(max(1.0 - float(np.dot(mean, mean)), 1e-12))
        worst = max(worst, float(np.linalg.norm(mean.astype(np.float64) - before)) / spread)
    return worst


def stored_centring(conn: Connection, embedding_model: str) -> Centring | None:
    """The means stored for this model, or None when there are none (or not for every language)."""
    rows = conn.execute(
        text(
            f"SELECT lang, mean::text AS mean, chunks, computed_at FROM {CENTRING_TABLE} "
            "WHERE embedding_model = :model"
        ),
        {"model": embedding_model},
    ).all()
    means = {str(r.lang): parse_vector(str(r.mean)) for r in rows}
    if any(lang not in means for lang in LANGS):
        return None
    return Centring(
        embedding_model,
        means,
        {str(r.lang): int(r.chunks) for r in rows},
        min(r.computed_at for r in rows),
    )


def _fill_langs(conn: Connection, embedding_model: str) -> int:
    """Set ``centring_lang`` where it is missing, with the language the index detects for the chunk."""
    rows = conn.execute(
        text(
            f"SELECT id, title, text FROM chunks WHERE {LANG_COLUMN} IS NULL "
            "AND embedding_model = :model AND embedding_vec IS NOT NULL ORDER BY id"
        ),
        {"model": embedding_model},
    ).all()
    update = text(
        f"UPDATE chunks SET {LANG_COLUMN} = v.lang FROM unnest(CAST(:ids AS integer[]), "
        "CAST(:langs AS text[])) AS v(id, lang) WHERE chunks.id = v.id"
    )
    for start in range(0, len(rows), _BATCH):
        part = rows[start : start + _BATCH]
        conn.execute(
            update,
            {"ids": [int(r.id) for r in part], "langs": [detect_lang(f"{r.title} {r.text}") for r in part]},
        )
    return len(rows)


def current_centring(conn: Connection, embedding_model: str) -> Centring | None:
    """The means of the chunks as they are now (as ``LanguageCentering.fit``: a language with fewer
    than ``MIN_GROUP`` chunks takes the mean of all), or None when there are no chunks."""
    rows = conn.execute(
        text(
            f"SELECT {LANG_COLUMN} AS lang, avg(embedding_vec)::text AS mean, count(*) AS n FROM chunks "
            f"WHERE embedding_model = :model AND embedding_vec IS NOT NULL AND {LANG_COLUMN} IS NOT NULL "
            f"GROUP BY {LANG_COLUMN}"
        ),
        {"model": embedding_model},
    ).all()
    groups = {str(r.lang): (parse_vector(str(r.mean)), int(r.n)) for r in rows}
    total = sum(n for _, n in groups.values())
    if not total:
        return None
    weighted = np.sum([m.astype(np.float64) * n for m, n in groups.values()], axis=0)
    overall: Vector = (weighted / total).astype(np.float32)
    means: dict[str, Vector] = {}
    counts: dict[str, int] = {}
    for lang in LANGS:
        mean, n = groups.get(lang, (overall, 0))
        means[lang] = mean if n >= LanguageCentering.MIN_GROUP else overall
        counts[lang] = n
    return Centring(embedding_model, means, counts, datetime.now(UTC))


def _store(conn: Connection, centring: Centring) -> None:
    conn.execute(
        text(
            f"INSERT INTO {CENTRING_TABLE} (embedding_model, lang, mean, chunks, computed_at) "
            "VALUES (:model, :lang, CAST(:mean AS vector), :chunks, :at) "
            "ON CONFLICT (embedding_model, lang) DO UPDATE SET mean = EXCLUDED.mean, "
            "chunks = EXCLUDED.chunks, computed_at = EXCLUDED.computed_at"
        ),
        [
            {
                "model": centring.embedding_model,
                "lang": lang,
                "mean": vector_text(centring.means[lang]),
                "chunks": centring.chunks[lang],
                "at": centring.computed_at or datetime.now(UTC),
            }
            for lang in LANGS
        ],
    )


def _centre(conn: Connection, embedding_model: str, *, only_missing: bool) -> int:
    """``centred_vec = embedding_vec - m_L`` with the stored means: for every chunk of the model, or only
    for those without one. Returns the rows written."""
    missing = f" AND chunks.{CENTRED_COLUMN} IS NULL" if only_missing else ""
    result = conn.execute(
        text(
            f"UPDATE chunks SET {CENTRED_COLUMN} = chunks.embedding_vec - c.mean FROM {CENTRING_TABLE} c "
            f"WHERE c.embedding_model = chunks.embedding_model AND c.lang = chunks.{LANG_COLUMN} "
            "AND chunks.embedding_model = :model AND chunks.embedding_vec IS NOT NULL" + missing
        ),
        {"model": embedding_model},
    )
    return int(result.rowcount or 0)


def sync_centring(
    engine: Engine,
    embedding_model: str,
    *,
    tolerance: float = CENTRING_TOLERANCE,
    force: bool = False,
    check_drift: bool = True,
) -> CentringSync:
    """Bring ``centred_vec`` up to date in one transaction (see the module docstring for the policy).
    ``check_drift`` False (a load) keeps stored means whatever the drift and only fills what is missing;
    ``force`` recomputes the means and the whole column."""
    with engine.begin() as conn:
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK_KEY})
        langs_filled = _fill_langs(conn, embedding_model)
        stored = stored_centring(conn, embedding_model)
        moved: float | None = None
        reason = ""
        current: Centring | None = None
        if stored is None or force or check_drift:
            current = current_centring(conn, embedding_model)
            if current is None:
                return CentringSync("unchanged", "no chunks", 0, langs_filled, None)
        if current is not None and stored is not None:
            moved = drift(stored.means, current.means)
        if current is not None and (stored is None or force or (moved is not None and moved > tolerance)):
            reason = "no stored means" if stored is None else "forced" if force else "the means moved"
            _store(conn, current)
            written = _centre(conn, embedding_model, only_missing=False)
            outcome = CentringSync("rebuilt", reason, written, langs_filled, moved, tolerance)
        else:
            written = _centre(conn, embedding_model, only_missing=True)
            reason = "within tolerance" if moved is not None else "load"
            action: Action = "filled" if written else "unchanged"
            outcome = CentringSync(action, reason, written, langs_filled, moved, tolerance)
    if outcome.action != "unchanged":
        log.info("knowledge: %s", outcome.describe())
    return outcome


def missing_centred(conn: Connection, embedding_model: str) -> int:
    """Chunks of the model with a vector but no centred vector (the search cannot see them densely)."""
    return int(
        conn.scalar(
            text(
                f"SELECT count(*) FROM chunks WHERE embedding_model = :model AND embedding_vec IS NOT NULL "
                f"AND {CENTRED_COLUMN} IS NULL"
            ),
            {"model": embedding_model},
        )
        or 0
    )
