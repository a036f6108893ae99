"""The knowledge base's documents and passages as the API reads and removes them (ingest writes them:
knowledge/ingest.py)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete, func, select

from careerwise.store.db import Database
from careerwise.store.models import Chunk, Document

__all__ = ["DocumentCount", "KnowledgeStore"]


@dataclass(frozen=True)
class DocumentCount:
    document: Document
    chunks: int


class KnowledgeStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def passage(self, chunk_id: int) -> tuple[Chunk, Document] | None:
        """One passage with its document."""
        async with self.db.session() as s:
            row = (
                await s.execute(
                    select(Chunk, Document)
                    .join(Document, Document.id == Chunk.document_id)
                    .where(Chunk.id == chunk_id)
                )
            ).first()
        return (row[0], row[1]) if row is not None else None

    async def passages(
        self, document_id: str, *, section: str | None, limit: int
    ) -> list[tuple[Chunk, Document]]:
        """The passages of one document (of one section of it, when ``section`` is given), in order."""
        query = (
            select(Chunk, Document)
            .join(Document, Document.id == Chunk.document_id)
            .where(Chunk.document_id == document_id)
            .order_by(Chunk.ord)
            .limit(limit)
        )
        if section is not None:
            query = query.where(Chunk.section == section)
        async with self.db.session() as s:
            rows = (await s.execute(query)).all()
        return [(chunk, document) for chunk, document in rows]

    async def documents(self) -> list[DocumentCount]:
        """Every document with its number of passages, most recently updated first."""
        async with self.db.session() as s:
            counts = dict(
                (await s.execute(select(Chunk.document_id, func.count()).group_by(Chunk.document_id))).all()
            )
            docs = (await s.scalars(select(Document).order_by(Document.updated_at.desc(), Document.id))).all()
        return [DocumentCount(d, int(counts.get(d.id, 0))) for d in docs]

    async def delete_document(self, document_id: str) -> str | None:
        """Deletes the document and its passages; returns its source path (None: no such document)."""
        async with self.db.session() as s, s.begin():
            doc = await s.get(Document, document_id)
            if doc is None:
                return None
            source = doc.source_path
            await s.execute(delete(Chunk).where(Chunk.document_id == document_id))
            await s.delete(doc)
        return source
