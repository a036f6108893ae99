"""Hostile uploads over real HTTP: every class of hostile resume gets its 4xx and clear message, costs
no LLM call and stores nothing; a knowledge upload refused by the page limit, or one of whose files
cannot be read, leaves no file in ``uploads/`` (nor in its staging folder) and no document row.
tests/unit/test_untrusted_parsing.py has the classes one by one and the worker's limits."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import func, select

from careerwise.store import Conversation, Database, Document, Message, Resume
from tests.conftest import LiveServer, on_db, parse_sse
from tests.fakes.fake_llm import FakeLLM
from tests.fixtures import hostile_files as hostile
from tests.integration.test_admin_api import admin_client

MB = 1024 * 1024
LIMITS = {"upload_max_inflated_bytes": MB, "upload_max_xml_elements": 5000, "upload_max_archive_members": 50}

# (name, file, status, code, words in the message)
RESUMES: list[tuple[str, Callable[[], bytes], int, str, str]] = [
    (
        "bomb-lying-directory",
        lambda: hostile.lying_bomb_docx(3 * MB),
        413,
        "resume_too_large",
        "unpacks to more",
    ),
    ("bomb-honest-directory", lambda: hostile.bomb_docx(3 * MB), 413, "resume_too_large", "unpacks to more"),
    ("element-flood", lambda: hostile.element_flood_docx(10_000), 400, "upload_too_complex", "XML elements"),
    ("entity-declarations", hostile.entity_docx, 400, "resume_unreadable", "DTD or entities"),
    ("traversal-name", hostile.traversal_docx, 400, "resume_unreadable", "points outside it"),
    ("encrypted-member", hostile.encrypted_docx, 400, "resume_unreadable", "encrypted"),
    ("nested-archive", hostile.nested_zip_docx, 400, "resume_unreadable", "an archive inside it"),
    ("too-many-members", lambda: hostile.many_members_docx(60), 400, "upload_too_complex", "parts"),
]


def counts(server: LiveServer) -> dict[str, int]:
    async def work(db: Database) -> dict[str, int]:
        out: dict[str, int] = {}
        async with db.session() as s:
            for model in (Resume, Message, Conversation, Document):
                out[model.__tablename__] = int(await s.scalar(select(func.count()).select_from(model)) or 0)
        return out

    result: dict[str, int] = on_db(server, work)
    return result


def files_in(folder: Path) -> list[str]:
    return (
        sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
        if folder.exists()
        else []
    )


def test_hostile_resumes_get_a_4xx_with_a_clear_message_and_nothing_is_stored(
    live_server: Callable[..., LiveServer], fake_llm: FakeLLM
) -> None:
    server = live_server(**LIMITS)
    before = counts(server)
    with httpx.Client(base_url=server.url, timeout=30) as c:
        for name, make, status, code, words in RESUMES:
            r = c.post("/api/resumes", files={"file": ("cv.docx", make())}, data={"target_role": "PM"})
            assert r.status_code == status, (name, r.text)
            error: dict[str, Any] = r.json()["error"]
            assert error["code"] == code and words in error["message"], (name, error)
    assert counts(server) == before
    assert fake_llm.requests == []


def test_a_knowledge_pdf_over_the_page_limit_is_refused_and_leaves_nothing_behind(
    live_server: Callable[..., LiveServer],
) -> None:
    server = live_server(knowledge_max_pdf_pages=3)
    data_dir = server.services.settings.data_dir
    before = counts(server)
    with admin_client(server) as c:
        r = c.post(
            "/api/admin/knowledge/documents",
            files={"files": ("handbook.pdf", hostile.pdf_pages(5), "application/pdf")},
        )
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["code"] == "document_unreadable"
    assert "handbook.pdf: the PDF has 5 pages; the limit is 3" in error["message"]
    assert str(data_dir) not in error["message"]
    assert files_in(data_dir / "uploads") == [] and files_in(data_dir / "uploads-incoming") == []
    assert counts(server) == before


def test_a_knowledge_file_that_cannot_be_read_is_reported_and_not_kept_for_the_next_bulk_ingest(
    live_server: Callable[..., LiveServer],
) -> None:
    server = live_server()
    data_dir = server.services.settings.data_dir
    with admin_client(server) as c:
        r = c.post(
            "/api/admin/knowledge/documents",
            files=[
                ("files", ("broken.md", b"\x00\x01binary", "text/markdown")),
                ("files", ("fine.md", b"# Fine\n\nfine text here", "text/markdown")),
            ],
        )
    name, done = parse_sse(r.text)[-1]
    assert name == "done" and done["report"]["added"] == ["fine"]
    assert (
        list(done["report"]["failed"]) == ["broken.md"] and "binary" in done["report"]["failed"]["broken.md"]
    )
    assert files_in(data_dir / "uploads") == ["fine.md"] and files_in(data_dir / "uploads-incoming") == []
