"""What ingestion writes and the index's load reads back (knowledge/ingest.py decides what changed):
a document replaced with its chunks in one transaction, so a failure leaves it as it was (its old
version, or nothing) and never half of it; stale documents deleted with their chunks in one
transaction; and the knowledge base's meta values (its version, the tokenizer its stored tokens
follow). Writing tokens or title vectors back is best effort: a failure is logged and reported, never
raised."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import delete, select, text
from sqlalchemy.exc import SQLAlchemyError

from careerwise.store.db import Database
from careerwise.store.models import Chunk, Document, KnowledgeMeta

__all__ = ["KnowledgeWrites"]

log = logging.getLogger(__name__)
_SET_TOKENS = text("UPDATE chunks SET lexical_tokens = :tokens WHERE id = :id")
_TOKEN_BATCH = 1000  # rows per UPDATE sent when writing tokens back
# written only while the document still has the titles the vectors were made from (an ingest may have
# replaced them since they were read)
_SET_TITLE_VECTORS = text(
    "UPDATE documents SET title_vectors = :vectors, title_model = :model "
    "WHERE id = :id AND title = :title AND alt_title = :alt_title"
)


class KnowledgeWrites:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def meta(self, key: str) -> str | None:
        """The meta value stored under ``key``, or None."""
        async with self.db.session() as s:
            row = await s.get(KnowledgeMeta, key)
            return row.value if row else None

    async def documents(self) -> dict[str, Document]:
        """Every stored document, by id."""
        async with self.db.session() as s:
            return {d.id: d for d in (await s.scalars(select(Document))).all()}

    async def titles(self) -> list[tuple[str, str, str, bytes | None, str | None]]:
        """Every document's (id, title, alt title, title vectors, the model that made them), by id."""
        async with self.db.session() as s:
            rows = await s.execute(
                select(
                    Document.id,
                    Document.title,
                    Document.alt_title,
                    Document.title_vectors,
                    Document.title_model,
                ).order_by(Document.id)
            )
            return [(r[0], r[1], r[2], r[3], r[4]) for r in rows.all()]

    async def store_title_vectors(self, rows: Sequence[tuple[str, str, str, bytes]], *, model: str) -> bool:
        """Writes each (document id, title, alt title, vectors) as made by ``model``, where the document
        still has that title and alt title, in one transaction. False when that failed (logged)."""
        try:
            async with self.db.session() as s, s.begin():
                await s.execute(
                    _SET_TITLE_VECTORS,
                    [
                        {"id": i, "title": t, "alt_title": a, "vectors": v, "model": model}
                        for i, t, a, v in rows
                    ],
                )
        except SQLAlchemyError:
            log.exception(
                "knowledge: could not store the title vectors of %d documents; next load retries", len(rows)
            )
            return False
        return True

    async def delete_documents(self, ids: Sequence[str]) -> None:
        """Deletes the documents ``ids`` and their chunks, in one transaction."""
        async with self.db.session() as s, s.begin():
            await s.execute(delete(Chunk).where(Chunk.document_id.in_(ids)))
            await s.execute(delete(Document).where(Document.id.in_(ids)))

    async def replace_document(
        self,
        document_id: str,
        fields: dict[str, Any],
        chunks: list[Chunk],
        *,
        vectors: tuple[Any, Callable[[list[int]], Any]] | None = None,
    ) -> None:
        """The document ``document_id`` (created when new) given ``fields`` and ``chunks`` in place of
        its old chunks, in one transaction. ``vectors``: a statement and the parameters it takes for the
        new chunks' ids, run once they have ids (PostgreSQL: pgvector's column)."""
        async with self.db.session() as s, s.begin():
            await s.execute(delete(Chunk).where(Chunk.document_id == document_id))
            row = await s.get(Document, document_id)
            if row is None:
                row = Document(id=document_id)
                s.add(row)
            for name, value in fields.items():
                setattr(row, name, value)
            await s.flush()
            s.add_all(chunks)
            if chunks and vectors is not None:
                statement, parameters = vectors
                await s.flush()
                await s.execute(statement, parameters([c.id for c in chunks]))

    async def set_version(self, key: str, version: str, *, tokenizer_key: str, tokenizer: str) -> None:
        """Stores ``version`` under ``key``, in the same transaction ``tokenizer`` under
        ``tokenizer_key`` when nothing is stored there yet (an existing marker is left as it is)."""
        async with self.db.session() as s, s.begin():
            row = await s.get(KnowledgeMeta, key)
            if row is None:
                s.add(KnowledgeMeta(key=key, value=version))
            else:
                row.value = version
            if await s.get(KnowledgeMeta, tokenizer_key) is None:
                s.add(KnowledgeMeta(key=tokenizer_key, value=tokenizer))

    async def store_tokens(
        self, tokens: Sequence[tuple[int, str]], *, tokenizer_key: str, tokenizer: str
    ) -> bool:
        """Writes each (chunk id, tokens) and marks the stored tokens as ``tokenizer``'s, in one
        transaction. False when that failed (logged; nothing written)."""
        try:
            async with self.db.session() as s, s.begin():
                for start in range(0, len(tokens), _TOKEN_BATCH):
                    part = tokens[start : start + _TOKEN_BATCH]
                    await s.execute(_SET_TOKENS, [{"id": i, "tokens": t} for i, t in part])
                marker = await s.get(KnowledgeMeta, tokenizer_key)
                if marker is None:
                    s.add(KnowledgeMeta(key=tokenizer_key, value=tokenizer))
                else:
                    marker.value = tokenizer
        except SQLAlchemyError:
            log.exception(
                "knowledge: could not store the BM25 tokens of %d chunks; next load retries", len(tokens)
            )
            return False
        return True
