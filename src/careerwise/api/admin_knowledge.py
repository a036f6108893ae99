"""Admin: the knowledge base. Documents, upload (with progress), re-index, delete, and a retrieval test
that runs a query through the searchKnowledge tool's own code path.

Upload progress is streamed in the upload's own response (Server-Sent Events) rather than kept as a
job in this process to be polled: a poll could land on another app process, which would not know the
job (shared/DESIGN.md principle 7). The ingest runs as a task of its own, so a browser that goes away
mid-upload does not leave half an ingest: the task finishes, reloads the index and logs its report.

Uploaded files are untrusted: each is saved to a staging folder outside ``uploads/`` and read there in
a limited worker process (``careerwise.untrusted``: memory, time and PDF page limits) before the
response starts. A file that cannot be read is reported and deleted; when none can, the upload is
refused with the first file's reason (4xx). Only a file whose document was stored moves to
``uploads/``, so a bulk ingest of that folder never reads a file that failed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any

from fastapi import File, Request, UploadFile
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from careerwise.api._strict import REQUEST_MODEL
from careerwise.api.admin_common import admin_router
from careerwise.api.admin_settings import known_assistant
from careerwise.api.deps import (
    AssistantSettingsDep,
    DatabaseDep,
    KnowledgeBaseDep,
    KnowledgeDep,
    ParseWorkersDep,
    SettingsDep,
    ToolsDep,
)
from careerwise.api.error_models import errors
from careerwise.assistant_settings import DEFAULT_ASSISTANT
from careerwise.config import Settings
from careerwise.errors import (
    KnowledgeUnavailableError,
    NotFoundError,
    PayloadTooLargeError,
    ToolArgumentsError,
    UnsupportedMediaTypeError,
    UserInputError,
)
from careerwise.events import ToolCallEvent, ToolResultEvent
from careerwise.knowledge.documents import (
    MAX_FILE_BYTES,
    SUPPORTED_SUFFIXES,
    SourceDocument,
    UnreadableDocumentError,
    load_document,
)
from careerwise.knowledge.ingest import IngestReport, bump_version, ingest_documents
from careerwise.knowledge.service import KnowledgeBase
from careerwise.store import as_utc
from careerwise.tools.search_knowledge import MAX_QUERY_CHARS, MAX_TOP_K
from careerwise.tools.search_knowledge import NAME as SEARCH_TOOL
from careerwise.tracing.background import KNOWLEDGE_UPLOAD_CLEANUP, count_failure
from careerwise.untrusted import ParseWorkers

log = logging.getLogger(__name__)
router = admin_router("admin: knowledge")
MAX_FILES = 50
_SAFE_NAME = re.compile(r"[^\w.\- ]+")


def knowledge_status(kb: KnowledgeBase) -> dict[str, Any]:
    st = kb.status()
    return {
        "state": st.state,
        "chunks": st.chunks,
        "version": st.version,
        "error": st.error,
        "backend": kb.backend,
    }


@router.get("/knowledge")
async def documents(kb: KnowledgeBaseDep, knowledge: KnowledgeDep) -> dict[str, Any]:
    found = await knowledge.documents()
    return {
        "status": knowledge_status(kb),
        "documents": [
            {
                "id": d.id,
                "title": d.title,
                "domain": d.domain,
                "lang": d.lang,
                "source_path": d.source_path,
                "chars": d.chars,
                "chunks": c.chunks,
                "updated_at": as_utc(d.updated_at).isoformat(),
            }
            for c in found
            for d in (c.document,)
        ],
    }


def uploads_dir(settings: Settings) -> Path:
    return settings.data_dir / "uploads"


def staging_root(settings: Settings) -> Path:
    """Where uploaded files wait while they are read and ingested: beside ``uploads/``, never in it."""
    return settings.data_dir / "uploads-incoming"


def _remove(path: Path) -> None:
    """Delete a staging folder; a failure is logged and counted (its files are never ingested: they
    are outside ``uploads/``)."""
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        return
    except OSError:
        log.exception("admin upload: could not remove the staging folder %s", path)
        count_failure(KNOWLEDGE_UPLOAD_CLEANUP)


async def _read_all(
    settings: Settings, workers: ParseWorkers, files: list[UploadFile], names: list[str], staging: Path
) -> tuple[list[tuple[Path, SourceDocument]], dict[str, UserInputError]]:
    """Each file saved in ``staging`` and read in a limited worker: the documents, and the refusals
    by file name (their files deleted at once)."""
    docs: list[tuple[Path, SourceDocument]] = []
    refused: dict[str, UserInputError] = {}
    for f, name in zip(files, names, strict=True):
        data = await f.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise PayloadTooLargeError(f"{name} is over the limit of {MAX_FILE_BYTES} bytes")
        path = staging / name
        await asyncio.to_thread(path.write_bytes, data)
        try:
            doc = await workers.run(
                settings.knowledge_parse_timeout,
                name,
                load_document,
                path,
                root=staging,
                max_pdf_pages=settings.knowledge_max_pdf_pages,
            )
        except UserInputError as exc:
            # the server's folder is no business of the browser's: file names only
            message = str(exc).replace(str(staging) + "/", "")
            refused[name] = exc if message == str(exc) else UnreadableDocumentError(message)
            log.info("admin upload: refused %s: %s", name, message)
            await asyncio.to_thread(path.unlink)
            continue
        if any(doc.id == other.id for _p, other in docs):
            raise UserInputError(f"{name} has the same document id {doc.id!r} as another file of the upload")
        docs.append((path, doc))
    return docs, refused


def _keep(report: IngestReport, docs: list[tuple[Path, SourceDocument]], folder: Path) -> None:
    """Move the files whose documents were stored into ``folder``; the others stay in staging, which
    the caller removes."""
    folder.mkdir(parents=True, exist_ok=True)
    for path, _doc in docs:
        if str(path) not in report.failed:
            os.replace(path, folder / path.name)


def _safe_name(raw: str | None) -> str:
    name = _SAFE_NAME.sub("-", Path((raw or "").replace("\\", "/")).name).strip(" .-")
    if not name:
        raise UserInputError(f"the file name {raw!r} is empty once cleaned; rename the file")
    suffix = Path(name).suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        kinds = ", ".join(sorted(SUPPORTED_SUFFIXES))
        raise UnsupportedMediaTypeError(f"{raw}: only these kinds of file can be ingested: {kinds}")
    return name


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def _report_view(report: IngestReport, folder: Path) -> dict[str, Any]:
    prefix = str(folder) + "/"
    return {
        "added": report.added,
        "updated": report.updated,
        "unchanged": report.unchanged,
        # the server's folder is no business of the browser's: file names only
        "failed": {Path(k).name: v.replace(prefix, "") for k, v in report.failed.items()},
        "chunks_written": report.chunks_written,
        "version": report.version,
    }


def _jobs(request: Request) -> set[asyncio.Task[Any]]:
    jobs: set[asyncio.Task[Any]] | None = getattr(request.app.state, "admin_jobs", None)
    if jobs is None:
        jobs = request.app.state.admin_jobs = set()
    return jobs


@router.post("/knowledge/documents", responses=errors(415))
async def upload(
    request: Request,
    settings: SettingsDep,
    db: DatabaseDep,
    kb: KnowledgeBaseDep,
    workers: ParseWorkersDep,
    files: Annotated[list[UploadFile], File(description="Markdown, text, HTML or PDF files.")],
) -> StreamingResponse:
    """Save the files, ingest them as ``careerwise ingest`` does, reload the index. The response is an
    SSE stream: ``progress`` events (``done`` of ``total`` files, the document just handled), then one
    ``done`` event with the ingest report and the knowledge status, or an ``error`` event."""
    if not files:
        raise UserInputError("choose at least one file")
    if len(files) > MAX_FILES:
        raise UserInputError(f"at most {MAX_FILES} files at once, got {len(files)}")
    names = [_safe_name(f.filename) for f in files]
    if len(set(names)) != len(names):
        raise UserInputError("two of the files have the same name")
    for f, name in zip(files, names, strict=True):
        if f.size is not None and f.size > MAX_FILE_BYTES:
            raise PayloadTooLargeError(f"{name} is {f.size} bytes; the limit is {MAX_FILE_BYTES} bytes")
    folder = uploads_dir(settings)
    root = staging_root(settings)
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=root))
    try:
        docs, refused = await _read_all(settings, workers, files, names, staging)
        if not docs:
            raise next(iter(refused.values()))
    except BaseException:
        await asyncio.to_thread(_remove, staging)
        raise

    queue: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()
    total = len(names)
    handled = 0

    def progress(item: str) -> None:
        nonlocal handled
        handled += 1
        queue.put_nowait(("progress", {"stage": "ingest", "done": handled, "total": total, "item": item}))

    async def job() -> None:
        try:
            for name in refused:
                progress(name)
            report = await ingest_documents(db, kb.embedder, docs, progress=progress)
            report.failed.update({name: str(exc) for name, exc in refused.items()})
            await asyncio.to_thread(_keep, report, docs, folder)
            queue.put_nowait(("progress", {"stage": "reindex", "done": handled, "total": total}))
            if report.changed:
                await kb.load()
            log.info(
                "admin upload: added %s, updated %s, unchanged %s, failed %s",
                report.added,
                report.updated,
                report.unchanged,
                list(report.failed),
            )
            queue.put_nowait(
                ("done", {"report": _report_view(report, staging), "knowledge": knowledge_status(kb)})
            )
        except Exception as exc:
            log.exception("admin upload: the ingest failed")
            queue.put_nowait(("error", {"message": f"the ingest failed: {type(exc).__name__}: {exc}"}))
        finally:
            await asyncio.to_thread(_remove, staging)  # what was not moved to uploads/ failed

    task = asyncio.create_task(job())
    jobs = _jobs(request)
    jobs.add(task)
    task.add_done_callback(jobs.discard)

    async def stream() -> AsyncIterator[bytes]:
        yield _sse("progress", {"stage": "saved", "done": 0, "total": total, "files": names})
        while True:
            kind, data = await queue.get()
            yield _sse(kind, data)
            if kind in ("done", "error"):
                return

    return StreamingResponse(stream(), media_type="text/event-stream", headers={"Cache-Control": "no-store"})


@router.delete("/knowledge/documents/{document_id}", responses=errors(404))
async def delete_document(
    document_id: str, settings: SettingsDep, db: DatabaseDep, kb: KnowledgeBaseDep, knowledge: KnowledgeDep
) -> dict[str, Any]:
    source = await knowledge.delete_document(document_id)
    if source is None:
        raise NotFoundError(f"no document {document_id!r}")
    # an uploaded copy goes too, or a later bulk ingest of the folder would bring the document back
    uploaded = uploads_dir(settings) / Path(source).name
    if Path(source).name == source and uploaded.is_file():
        await asyncio.to_thread(uploaded.unlink)
    version = await bump_version(db)
    await kb.load()
    return {"deleted": document_id, "version": version, "knowledge": knowledge_status(kb)}


@router.post("/knowledge/reindex")
async def reindex(kb: KnowledgeBaseDep) -> dict[str, Any]:
    """Rebuild the search index from the database (documents ingested by another process, or after a
    failed load). A load that fails again is a 503 that says why; /readyz shows the same state."""
    await kb.load()
    status = knowledge_status(kb)
    if status["state"] == "failed":
        raise KnowledgeUnavailableError(f"the knowledge index could not be loaded: {status['error']}")
    return {"knowledge": status}


class RetrievalTest(BaseModel):
    model_config = REQUEST_MODEL
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    top_k: int | None = Field(
        default=None, description="The top_k the model would ask for; omitted = the model gave none."
    )
    assistant_id: str = Field(default=DEFAULT_ASSISTANT, max_length=64)


@router.post("/knowledge/search", responses=errors(404))
async def retrieval_test(
    body: RetrievalTest, kb: KnowledgeBaseDep, tools: ToolsDep, assistants: AssistantSettingsDep
) -> dict[str, Any]:
    """The searchKnowledge tool as a turn runs it: the same resolve() (with the assistant's settings: the
    full-retrieval override, the default top_k, the rerank pool) and the same run(). ``tool_call`` and
    ``tool_result`` are the records a turn's stream would carry; ``model_input`` is what the model reads."""
    await known_assistant(assistants, body.assistant_id)
    tool = tools.get(SEARCH_TOOL)
    if tool is None:
        raise NotFoundError(f"the {SEARCH_TOOL} tool is not registered")
    settings = await assistants.for_turn(body.assistant_id, allow_disabled=True)  # + domains
    arguments: dict[str, Any] = {"query": body.query}
    if body.top_k is not None:
        arguments["top_k"] = body.top_k
    try:
        resolution = tool.resolve(arguments, settings)
    except ToolArgumentsError as exc:
        raise UserInputError(str(exc)) from exc
    loop = asyncio.get_running_loop()
    started = loop.time()
    output = await tool.run(resolution, settings)
    took = round(1000 * (loop.time() - started), 2)
    call = ToolCallEvent(
        call_id="retrieval-test",
        name=SEARCH_TOOL,
        requested_arguments=resolution.requested,
        effective_arguments=resolution.effective,
        reason=resolution.reason,
    )
    result = ToolResultEvent(
        call_id="retrieval-test",
        name=SEARCH_TOOL,
        ok=True,
        returned=output.returned,
        sources=output.sources,
        duration_ms=took,
    )
    return {
        "tool_call": call.model_dump(mode="json"),
        "tool_result": result.model_dump(mode="json"),
        "chunks": [{"rank": n, **src.model_dump(mode="json")} for n, src in enumerate(output.sources, 1)],
        "model_input": output.content,
        "max_top_k": MAX_TOP_K,
        "knowledge": knowledge_status(kb),
    }
