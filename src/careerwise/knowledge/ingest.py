"""Idempotent ingestion: unchanged documents are skipped by content hash, changed ones re-chunked,
removed ones deleted with ``prune``. Every ingest that changes anything bumps the knowledge version."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from careerwise.knowledge.chunking import chunk_document, embedding_text
from careerwise.knowledge.documents import MAX_TITLE_CHARS, SUPPORTED_SUFFIXES, SourceDocument, load_document
from careerwise.knowledge.embeddings import Embedder
from careerwise.knowledge.lexical import TOKENIZER_VERSION, chunk_text, token_string
from careerwise.knowledge.pg_centring import CENTRING_TOLERANCE, CentringSync, sync_centring
from careerwise.knowledge.pg_index import SET_VECTOR, pgvector_applies, vector_rows
from careerwise.knowledge.titles import embed_titles, encode_vectors, title_texts
from careerwise.store import Chunk, Database
from careerwise.store.knowledge_writes import KnowledgeWrites

log = logging.getLogger(__name__)
VERSION_KEY = "version"
CENTRING_ENTRY = "(centred vectors)"  # IngestReport.failed key when sync_centring fails
TOKENIZER_KEY = "lexical_tokenizer"  # the lexical.TOKENIZER_VERSION that stored chunks' tokens follow


@dataclass
class IngestReport:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    chunks_written: int = 0
    version: str | None = None
    centring: CentringSync | None = None  # PostgreSQL: what happened to the centred vectors

    @property
    def changed(self) -> bool:
        """Whether the search index must reload: documents changed, or (PostgreSQL) the centring means
        did, since the loaded index scores with the means it read."""
        rebuilt = self.centring is not None and self.centring.action == "rebuilt"
        return bool(self.added or self.updated or self.deleted or rebuilt)


def expand_paths(paths: Iterable[Path]) -> tuple[list[tuple[Path, Path]], dict[str, str]]:
    """Files to read as (file, root) pairs, plus per-path problems (missing paths)."""
    files: list[tuple[Path, Path]] = []
    problems: dict[str, str] = {}
    for p in paths:
        if p.is_dir():
            files.extend(
                (f, p) for f in sorted(p.rglob("*")) if f.is_file() and f.suffix.lower() in SUPPORTED_SUFFIXES
            )
        elif p.is_file():
            files.append((p, p.parent))
        else:
            problems[str(p)] = "no such file or directory"
    return files, problems


async def current_version(db: Database) -> str:
    version = await KnowledgeWrites(db).meta(VERSION_KEY)
    return version if version is not None else "empty"


def log_progress(every: int = 5) -> Callable[[str], None]:
    """A progress callback for :func:`ingest_paths` that logs a line every ``every`` documents, so a
    first start that spends a minute or more embedding the corpus is never silent."""
    done = 0

    def report(_item: str) -> None:
        nonlocal done
        done += 1
        if done % every == 0:
            log.info("knowledge: %d documents embedded", done)

    return report


async def ingest_paths(
    db: Database,
    embedder: Embedder,
    paths: Iterable[Path],
    *,
    prune: bool = False,
    progress: Callable[[str], None] | None = None,
    recentre: bool = False,
    centring_tolerance: float = CENTRING_TOLERANCE,
) -> IngestReport:
    """Every file is reported on its own: one that cannot be read, or whose embedding or write fails,
    lands in ``failed`` (path -> problem) and the others still go in.

    On PostgreSQL the language-centred vectors are brought up to date at the end
    (``pg_centring.sync_centring``: new chunks centred with the stored means, or every chunk with new
    means when they moved beyond ``centring_tolerance``; ``recentre`` forces the latter)."""
    report = IngestReport()
    files, problems = expand_paths(paths)
    report.failed.update(problems)
    docs, failed_sources = _load_all(files, report, progress)
    return await _ingest(
        db,
        embedder,
        docs,
        report,
        failed_sources=failed_sources if prune else None,
        progress=progress,
        recentre=recentre,
        centring_tolerance=centring_tolerance,
    )


async def ingest_documents(
    db: Database,
    embedder: Embedder,
    docs: Sequence[tuple[Path, SourceDocument]],
    *,
    progress: Callable[[str], None] | None = None,
) -> IngestReport:
    """Documents read already (the admin upload reads each file in a limited worker process), written
    as :func:`ingest_paths` writes them: each on its own, a failure reported in ``failed``."""
    return await _ingest(
        db,
        embedder,
        list(docs),
        IngestReport(),
        failed_sources=None,
        progress=progress,
        recentre=False,
        centring_tolerance=CENTRING_TOLERANCE,
    )


def _load_all(
    files: list[tuple[Path, Path]], report: IngestReport, progress: Callable[[str], None] | None
) -> tuple[list[tuple[Path, SourceDocument]], set[str]]:
    docs: list[tuple[Path, SourceDocument]] = []
    failed_sources: set[str] = set()  # failed files' source paths: --prune keeps their documents
    by_id: dict[str, Path] = {}
    for f, root in files:
        try:
            doc = load_document(f, root=root)
            if doc.id in by_id:
                raise ValueError(
                    f"{f}: the same document id {doc.id!r} as {by_id[doc.id]}: rename one of them, "
                    "or give it an `id:` in its front matter"
                )
        except Exception as exc:  # noqa: BLE001 - a bad file is reported, never ends the ingest
            report.failed[str(f)] = str(exc) if str(f) in str(exc) else f"{f}: {exc}"
            failed_sources.add(str(f.relative_to(root)) if f.is_relative_to(root) else str(f))
            log.warning("ingest: skipped %s: %s", f, exc)
            if progress:
                progress(str(f))
            continue
        by_id[doc.id] = f
        docs.append((f, doc))
    return docs, failed_sources


async def _ingest(
    db: Database,
    embedder: Embedder,
    docs: list[tuple[Path, SourceDocument]],
    report: IngestReport,
    *,
    failed_sources: set[str] | None,
    progress: Callable[[str], None] | None,
    recentre: bool,
    centring_tolerance: float,
) -> IngestReport:
    """Write ``docs``; with ``failed_sources`` (a prune), delete the stored documents not among them
    except those whose files failed to load."""
    seen_ids = {doc.id for _f, doc in docs}
    existing = await KnowledgeWrites(db).documents()
    for f, doc in docs:
        old = existing.get(doc.id)
        if old is not None and old.sha256 == doc.sha256:
            report.unchanged.append(doc.id)
            if progress:
                progress(doc.id)
            continue
        try:
            written = await _write_document(db, embedder, doc)
        except Exception as exc:  # its transaction rolled back; the next file goes on
            report.failed[str(f)] = f"{f}: could not be embedded or stored ({type(exc).__name__}: {exc})"
            log.exception("ingest: %s failed", f)
            if progress:
                progress(doc.id)
            continue
        report.chunks_written += written
        (report.updated if old is not None else report.added).append(doc.id)
        if progress:
            progress(doc.id)
    if failed_sources is not None:
        stale = [
            doc_id
            for doc_id, row in existing.items()
            if doc_id not in seen_ids and row.source_path not in failed_sources
        ]
        if stale:
            await KnowledgeWrites(db).delete_documents(stale)
            report.deleted.extend(stale)
    try:
        if pgvector_applies(db, embedder.dim):
            await _update_centring(db, embedder, report, tolerance=centring_tolerance, force=recentre)
    except BaseException:
        # stopped here (cancelled, interrupted): the documents written are in, so the version moves
        # anyway, or caches and the other processes would go on serving the old knowledge base
        if report.changed:
            report.version = await bump_version(db)
        raise
    if report.changed:
        report.version = await bump_version(db)
    else:
        report.version = await current_version(db)
    return report


async def _update_centring(
    db: Database, embedder: Embedder, report: IngestReport, *, tolerance: float, force: bool
) -> None:
    """``sync_centring`` into ``report.centring``. Whatever it raises is reported as the
    ``CENTRING_ENTRY`` failure (logged, and counted among the ingest's failures) and the ingest goes on
    to bump the version: the documents are committed already, and the next load centres what is
    missing. Only a cancellation passes through (the caller still bumps the version)."""
    try:
        report.centring = await asyncio.to_thread(
            lambda: sync_centring(db.blocking_engine(), embedder.name, tolerance=tolerance, force=force)
        )
    except Exception as exc:  # not only SQLAlchemyError: any failure here is reported, never raised
        log.exception("ingest: could not update the centred vectors")
        report.failed[CENTRING_ENTRY] = f"centred vectors not updated ({type(exc).__name__}: {exc})"


async def _write_document(db: Database, embedder: Embedder, doc: SourceDocument) -> int:
    """Chunk, embed and store one document, replacing its old chunks; returns the chunks written. The
    embedding comes first and the write is one transaction: a failure in either leaves the document as
    it was (its old version, or nothing), never half of it."""
    drafts = chunk_document(doc)
    texts = [embedding_text(c.title, c.section, c.text) for c in drafts]
    vectors = await asyncio.to_thread(embedder.embed_passages, texts)
    titles = await asyncio.to_thread(embed_titles, embedder, title_texts(doc.title, doc.alt_title))
    tokens = await asyncio.to_thread(
        lambda: [token_string(chunk_text(c.title, c.section, c.text)) for c in drafts]
    )
    if len(vectors) != len(drafts):
        raise ValueError(f"the embedder returned {len(vectors)} vectors for {len(drafts)} chunks")
    chunk_rows = [
        Chunk(
            document_id=doc.id,
            ord=c.ord,
            title=c.title,
            section=c.section[:MAX_TITLE_CHARS],  # the column's size; a heading that long is rare
            domain=c.domain,
            text=c.text,
            embedding=vectors[i].tobytes(),
            embedding_model=embedder.name,
            lexical_tokens=tokens[i],
        )
        for i, c in enumerate(drafts)
    ]
    fields = {
        "title": doc.title,
        "source_path": doc.source_path,
        "domain": doc.domain,
        "lang": doc.lang,
        "sha256": doc.sha256,
        "chars": len(doc.text),
        "alt_title": doc.alt_title,
        "title_vectors": encode_vectors(titles),  # the ranking's title signal (knowledge/titles.py)
        "title_model": embedder.name,
    }
    # PostgreSQL: the vectors also go to pgvector's column, where they are searched
    pgvector = (
        (SET_VECTOR, lambda ids: vector_rows(ids, vectors)) if pgvector_applies(db, embedder.dim) else None
    )
    await KnowledgeWrites(db).replace_document(doc.id, fields, chunk_rows, vectors=pgvector)
    return len(drafts)


async def bump_version(db: Database) -> str:
    version = uuid.uuid4().hex[:12]
    # the first ingest also marks every stored token list as this tokenizer's. (An older marker stays:
    # the next load then redoes every chunk's tokens, old and new, and moves it forward.)
    await KnowledgeWrites(db).set_version(
        VERSION_KEY, version, tokenizer_key=TOKENIZER_KEY, tokenizer=TOKENIZER_VERSION
    )
    return version


async def chunk_tokens(db: Database, rows: Sequence[Chunk]) -> list[str]:
    """The BM25 tokens of ``rows`` (loaded ``Chunk`` rows), one ``token_string`` each, as stored at
    ingest. Rows without them (ingested before migration 0013), or all rows when the stored tokens
    follow another ``TOKENIZER_VERSION``, are tokenized here and written back, so that happens once
    rather than on every start. A failed write-back is logged and the load goes on with the tokens
    computed; the next load tries again."""
    writes = KnowledgeWrites(db)
    current = await writes.meta(TOKENIZER_KEY) == TOKENIZER_VERSION
    tokens = [r.lexical_tokens if current else None for r in rows]
    missing = [i for i, t in enumerate(tokens) if t is None]
    if not missing:
        return [t or "" for t in tokens]
    fresh = await asyncio.to_thread(
        lambda: [token_string(chunk_text(rows[i].title, rows[i].section, rows[i].text)) for i in missing]
    )
    for i, t in zip(missing, fresh, strict=True):
        tokens[i] = t
    stored = await writes.store_tokens(
        [(rows[i].id, tokens[i] or "") for i in missing],
        tokenizer_key=TOKENIZER_KEY,
        tokenizer=TOKENIZER_VERSION,
    )
    if stored:
        log.info("knowledge: tokenized and stored the BM25 tokens of %d chunks", len(missing))
    return [t or "" for t in tokens]
