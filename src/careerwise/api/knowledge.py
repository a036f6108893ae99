"""Read-only access to the knowledge base's passages, so a citation on the page opens its source.

The articles are Summer's published knowledge base, not anyone's private data: no login is needed.
A ``tool_result`` or report source names a document and a section (``id`` is the document id), so the
page looks passages up by those; ``/api/knowledge/chunks/{id}`` serves one passage by its own id.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel

from careerwise.api.deps import KnowledgeDep
from careerwise.api.error_models import errors
from careerwise.errors import NotFoundError
from careerwise.store import Chunk, Document

router = APIRouter(tags=["knowledge"])
MAX_CHUNKS = 50


class ChunkOut(BaseModel):
    id: int
    document_id: str
    document_title: str
    title: str
    section: str
    text: str


class ChunkList(BaseModel):
    chunks: list[ChunkOut]


def _out(chunk: Chunk, document: Document) -> ChunkOut:
    return ChunkOut(
        id=chunk.id,
        document_id=chunk.document_id,
        document_title=document.title,
        title=chunk.title,
        section=chunk.section,
        text=chunk.text,
    )


@router.get("/api/knowledge/chunks/{chunk_id}", responses=errors(404))
async def get_chunk(chunk_id: Annotated[int, Path(ge=1, le=2**63 - 1)], knowledge: KnowledgeDep) -> ChunkOut:
    found = await knowledge.passage(chunk_id)
    if found is None:
        raise NotFoundError(f"passage {chunk_id} does not exist")
    return _out(*found)


@router.get("/api/knowledge/chunks", responses=errors(404))
async def find_chunks(
    knowledge: KnowledgeDep,
    document_id: Annotated[str, Query(min_length=1, max_length=200, description="A source's id.")],
    section: Annotated[str | None, Query(max_length=300, description="A source's section.")] = None,
) -> ChunkList:
    """The passages of one document (of one section of it, when ``section`` is given), in order."""
    rows = await knowledge.passages(document_id, section=section, limit=MAX_CHUNKS)
    if not rows:
        if section is None:
            raise NotFoundError(f"document {document_id!r} is not in the knowledge base")
        raise NotFoundError(f"document {document_id!r} has no section {section!r} in the knowledge base")
    return ChunkList(chunks=[_out(chunk, document) for chunk, document in rows])
