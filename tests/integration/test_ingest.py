"""Ingestion end to end with the real embedder: the file formats (Markdown, text, HTML, PDF), folders,
idempotency (hashes, re-chunking, --prune, the knowledge version), bad input reported per file with
nothing half-written, and what chunking keeps on every chunk. Documents are small: each test embeds a
handful of chunks."""

from __future__ import annotations

import itertools
import os
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from pypdf import PdfReader
from sqlalchemy import func, select

from careerwise.knowledge.chunking import chunk_document, split_sentences
from careerwise.knowledge.documents import MAX_FILE_BYTES, SourceDocument, load_document
from careerwise.knowledge.embeddings import Embedder, Matrix
from careerwise.knowledge.ingest import IngestReport, current_version, ingest_paths
from careerwise.knowledge.service import KnowledgeBase
from careerwise.store import Chunk, Database, Document

# --- helpers --------------------------------------------------------------------------------------


class CountingEmbedder:
    """The real embedder, counting the passages it embeds per call (one call per document)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.calls: list[int] = []

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        self.calls.append(len(texts))
        return self.inner.embed_passages(texts)


class FailingEmbedder(CountingEmbedder):
    """Fails on the ``fail_on``-th document: raises, or returns one vector too few (a broken model)."""

    def __init__(self, inner: Embedder, *, fail_on: int, short: bool = False) -> None:
        super().__init__(inner)
        self.fail_on, self.short = fail_on, short

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        vectors = super().embed_passages(texts)
        if len(self.calls) == self.fail_on:
            if self.short:
                return vectors[:-1]
            raise RuntimeError("the embedding engine crashed")
        return vectors


def pdf_bytes(lines: Sequence[str]) -> bytes:
    """A minimal valid one-page PDF (PDF 1.4, Helvetica) whose text is ``lines``, one per line."""

    def escape(s: str) -> str:
        return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")

    content = "BT /F1 12 Tf 16 TL 72 720 Td " + " ".join(f"({escape(line)}) Tj T*" for line in lines) + " ET"
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        "/Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        f"<< /Length {len(content.encode('latin-1'))} >>\nstream\n{content}\nendstream",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{n} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()  # each entry exactly 20 bytes
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


PDF_LINES = [
    "Salary negotiation checklist.",
    "Research the market range for the role before the interview.",
    "Ask about the whole package, not only the base salary.",
]

HTML = """<!doctype html><html><head><title>Remote work guide</title>
<style>p { color: red }</style><script>var tracking = "do not index me";</script></head>
<body><nav><a href="/">Home</a> navigation junk</nav>
<h1>Remote work</h1>
<p>Remote jobs need written communication skills.</p>
<h2>Interviews</h2>
<ul><li><p>Prepare a quiet room for video interviews.</p></li><li>Test the camera the day before.</li></ul>
<footer>copyright footer</footer></body></html>"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


async def chunks_of(db: Database, document_id: str) -> list[Chunk]:
    async with db.session() as s:
        rows = await s.scalars(select(Chunk).where(Chunk.document_id == document_id).order_by(Chunk.ord))
        return list(rows.all())


async def documents(db: Database) -> dict[str, Document]:
    async with db.session() as s:
        return {d.id: d for d in (await s.scalars(select(Document))).all()}


async def chunk_count(db: Database) -> int:
    async with db.session() as s:
        return int(await s.scalar(select(func.count()).select_from(Chunk)) or 0)


def assert_failed(report: IngestReport, path: Path, needle: str) -> None:
    problem = report.failed.get(str(path))
    assert problem is not None, f"{path} not reported: {report.failed}"
    assert str(path) in problem and needle in problem, problem


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = Database(f"sqlite+aiosqlite:///{tmp_path / 'kb.db'}")
    database.migrate()
    yield database
    await database.dispose()


@pytest.fixture
async def any_db(empty_db_url: str) -> AsyncIterator[Database]:
    """A fresh, migrated database on each backend."""
    database = Database(empty_db_url)
    yield database
    await database.dispose()


# --- formats and folders --------------------------------------------------------------------------


def test_the_hand_written_pdf_is_a_real_pdf(tmp_path: Path) -> None:
    path = tmp_path / "c.pdf"
    path.write_bytes(pdf_bytes(PDF_LINES))
    text = PdfReader(str(path)).pages[0].extract_text()
    assert [line.strip() for line in text.splitlines()] == PDF_LINES


def test_html_drops_chrome_keeps_headings_and_reads_nested_blocks_once(tmp_path: Path) -> None:
    doc = load_document(write(tmp_path / "remote.html", HTML))
    assert doc.title == "Remote work guide"  # <title> wins over the <h1>
    assert doc.text.splitlines()[0] == "# Remote work"
    assert "## Interviews" in doc.text
    assert doc.text.count("Prepare a quiet room") == 1  # <li><p>…</p></li> is one block
    for junk in ("do not index me", "navigation junk", "copyright footer", "color: red"):
        assert junk not in doc.text
    bare = load_document(
        write(tmp_path / "bare.htm", "<html><body><div>只有 div 的頁面。</div><div>Second line.</div>")
    )
    assert bare.text == "只有 div 的頁面。\n\nSecond line." and bare.title == "bare"


async def test_every_format_in_a_folder_is_ingested_and_searchable(
    db: Database, embedder: Embedder, tmp_path: Path
) -> None:
    folder = tmp_path / "kb"
    write(
        folder / "salary.md",
        '---\ntitle: "談薪水"\ndomain: market_salary\nlang: zh-TW\n---\n# 不會用到的標題\n\n## 開場\n\n先查行情，再開口。',
    )
    write(folder / "notes" / "habits.txt", "Keep a weekly log of what you shipped. It makes reviews easy.")
    write(folder / "notes" / "remote.html", HTML)
    (folder / "notes" / "checklist.pdf").write_bytes(pdf_bytes(PDF_LINES))
    (folder / "notes" / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n")  # not a document type: skipped
    write(folder / "notes" / "draft.docx", "not supported either")

    report = await ingest_paths(db, embedder, [folder])

    assert report.failed == {}  # unsupported files inside a folder are skipped, not failures
    assert sorted(report.added) == ["checklist", "habits", "remote", "salary"]
    docs = await documents(db)
    assert docs["salary"].title == "談薪水" and docs["salary"].domain == "market_salary"
    assert docs["salary"].lang == "zh-TW" and docs["habits"].lang == "en"
    assert docs["habits"].source_path == str(Path("notes") / "habits.txt")  # relative to the folder
    assert docs["remote"].title == "Remote work guide"
    assert docs["checklist"].source_path == str(Path("notes") / "checklist.pdf")
    pdf_chunks = await chunks_of(db, "checklist")
    assert "Research the market range" in " ".join(c.text for c in pdf_chunks)
    assert report.chunks_written == await chunk_count(db) >= 4
    assert report.version == await current_version(db) != "empty"

    kb = KnowledgeBase(db, embedder=embedder)
    await kb.load()
    assert kb.status().state == "ready" and kb.index is not None
    query = "research the market range before negotiating salary"
    qvec = embedder.embed_queries([query])[0]
    ungated = replace(kb.fusion, gate=False)
    hits = kb.index.search(query, qvec, top_k=1, candidates=4, fusion=ungated).hits
    assert hits[0].chunk.document_id == "checklist"


# --- idempotency ----------------------------------------------------------------------------------


async def test_reingest_skips_unchanged_rechunks_changed_and_prunes_removed(
    db: Database, embedder: Embedder, tmp_path: Path
) -> None:
    counting = CountingEmbedder(embedder)
    folder = tmp_path / "kb"
    write(folder / "a.md", "# 甲\n\n## 一\n\n第一版的內容。只有一句話而已。")
    write(folder / "b.md", "# B\n\n## One\n\nThe first version. Short.")
    first = await ingest_paths(db, counting, [folder])
    assert sorted(first.added) == ["a", "b"] and first.changed
    assert len(counting.calls) == 2
    v1 = await current_version(db)
    assert first.version == v1

    again = await ingest_paths(db, counting, [folder])
    assert sorted(again.unchanged) == ["a", "b"] and not again.changed
    assert len(counting.calls) == 2  # nothing embedded: skipped by hash
    assert again.version == await current_version(db) == v1

    old_ids = [c.id for c in await chunks_of(db, "a")]
    long_text = "".join(f"第{i}句改過的內容，比原本長很多。" for i in range(40))
    write(folder / "a.md", f"# 甲\n\n## 一\n\n{long_text}")
    changed = await ingest_paths(db, counting, [folder])
    assert changed.updated == ["a"] and changed.unchanged == ["b"]
    assert counting.calls[2:] == [len(await chunks_of(db, "a"))]  # only the changed document
    new = await chunks_of(db, "a")
    assert len(new) > 1 and not {c.id for c in new} & set(old_ids)  # re-chunked, the old chunks gone
    assert all("第一版" not in c.text for c in new)
    v2 = await current_version(db)
    assert changed.version == v2 != v1

    (folder / "b.md").unlink()
    kept = await ingest_paths(db, counting, [folder])  # without --prune a removed file stays
    assert not kept.changed and "b" in await documents(db)
    assert await current_version(db) == v2
    pruned = await ingest_paths(db, counting, [folder], prune=True)
    assert pruned.deleted == ["b"] and pruned.unchanged == ["a"]
    assert "b" not in await documents(db) and await chunks_of(db, "b") == []
    v3 = await current_version(db)
    assert pruned.version == v3 != v2
    nothing = await ingest_paths(db, counting, [folder], prune=True)
    assert not nothing.changed and await current_version(db) == v3
    assert len(counting.calls) == 3


async def test_prune_keeps_a_document_whose_file_failed_to_read(
    db: Database, embedder: Embedder, tmp_path: Path
) -> None:
    folder = tmp_path / "kb"
    write(folder / "a.md", "# A\n\nFirst document.")
    (folder / "c.pdf").write_bytes(pdf_bytes(PDF_LINES))
    await ingest_paths(db, embedder, [folder])
    (folder / "c.pdf").write_bytes(b"%PDF-1.4 truncated by a bad copy")
    report = await ingest_paths(db, embedder, [folder], prune=True)
    assert_failed(report, folder / "c.pdf", "PDF")
    assert report.deleted == [] and "c" in await documents(db)  # its last good version stays
    assert not report.changed


async def test_two_files_with_the_same_id_are_not_ingested_over_each_other(
    db: Database, embedder: Embedder, tmp_path: Path
) -> None:
    folder = tmp_path / "kb"
    write(folder / "x" / "intro.md", "# X\n\nThe first intro.")
    write(folder / "y" / "intro.md", "# Y\n\nThe second intro.")
    report = await ingest_paths(db, embedder, [folder])
    assert report.added == ["intro"]
    assert_failed(report, folder / "y" / "intro.md", "same document id")
    again = await ingest_paths(db, embedder, [folder])
    assert again.unchanged == ["intro"] and not again.changed  # stable, not rewritten every time
    assert (await documents(db))["intro"].title == "X"


# --- bad input ------------------------------------------------------------------------------------


def make_unreadable(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path.chmod(0)
    if os.geteuid() == 0:  # root reads anything: make reading it fail as it would for anyone else
        real = Path.read_bytes

        def read_bytes(self: Path) -> bytes:
            if self == path:
                raise PermissionError(13, "Permission denied", str(self))
            return real(self)

        monkeypatch.setattr(Path, "read_bytes", read_bytes)


async def test_bad_files_are_reported_one_by_one_and_the_rest_goes_in(
    any_db: Database, embedder: Embedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "kb"
    write(folder / "good.md", "# 好文件\n\n## 重點\n\n這份文件可以讀。")
    empty = write(folder / "empty.md", "")
    blank = write(folder / "only-front-matter.md", "---\ntitle: x\n---\n   \n")
    binary = folder / "blob.txt"
    binary.write_bytes(b"\x00\x01\x02\xff" * 100)
    latin1 = folder / "latin1.txt"
    latin1.write_bytes("café résumé".encode("latin-1"))
    huge = folder / "huge.md"
    with huge.open("wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)  # sparse: no 20 MB written to disk
    broken_pdf = folder / "broken.pdf"
    broken_pdf.write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\n%%EOF")
    unreadable = write(folder / "secret.md", "# Secret\n\nYou cannot read me.")
    make_unreadable(unreadable, monkeypatch)
    unsupported = write(tmp_path / "report.docx", "not a supported type")
    missing = tmp_path / "no-such-file.md"

    try:
        report = await ingest_paths(any_db, embedder, [folder, unsupported, missing])
    finally:
        unreadable.chmod(0o644)

    assert report.added == ["good"]
    assert_failed(report, empty, "no text")
    assert_failed(report, blank, "no text")
    assert_failed(report, binary, "binary")
    assert_failed(report, latin1, "UTF-8")
    assert_failed(report, huge, "limit")
    assert_failed(report, broken_pdf, "PDF")
    assert_failed(report, unreadable, "cannot read")
    assert_failed(report, unsupported, "unsupported file type .docx")
    assert report.failed[str(missing)] == "no such file or directory"
    assert len(report.failed) == 9
    assert set(await documents(any_db)) == {"good"}
    assert await chunk_count(any_db) == report.chunks_written == len(await chunks_of(any_db, "good")) >= 1


async def test_an_embedding_failure_leaves_nothing_half_written(
    any_db: Database, embedder: Embedder, tmp_path: Path
) -> None:
    folder = tmp_path / "kb"
    write(folder / "a.md", "# A\n\nThe first document. It is fine.")
    b = write(folder / "b.md", "# B\n\n## Part\n\n" + " ".join(f"Sentence {i} of b." for i in range(30)))
    write(folder / "c.md", "# C\n\nThe third document. Also fine.")
    before = await current_version(any_db)

    failing = FailingEmbedder(embedder, fail_on=2)
    report = await ingest_paths(any_db, failing, [folder])

    assert report.added == ["a", "c"]  # the one after the failure still went in
    assert_failed(report, b, "the embedding engine crashed")
    assert set(await documents(any_db)) == {"a", "c"}
    assert await chunks_of(any_db, "b") == []  # no document row, no chunks: nothing half-written
    assert await chunk_count(any_db) == report.chunks_written
    assert report.version == await current_version(any_db) != before  # a and c changed it

    # an update that fails keeps the previous version whole, and the next ingest tries again
    retry = await ingest_paths(any_db, embedder, [folder])
    assert retry.added == ["b"] and sorted(retry.unchanged) == ["a", "c"]
    good_b = [(c.ord, c.text) for c in await chunks_of(any_db, "b")]
    assert len(good_b) > 1
    write(folder / "b.md", b.read_text(encoding="utf-8") + " A new last sentence.")
    short = FailingEmbedder(embedder, fail_on=1, short=True)  # one vector too few for b's chunks
    version = await current_version(any_db)
    broken = await ingest_paths(any_db, short, [folder])
    assert_failed(broken, b, "vectors for")
    assert not broken.changed and await current_version(any_db) == version
    assert [(c.ord, c.text) for c in await chunks_of(any_db, "b")] == good_b
    assert (await ingest_paths(any_db, embedder, [folder])).updated == ["b"]


async def test_long_titles_headings_and_odd_front_matter_fit_the_columns(
    any_db: Database, embedder: Embedder, tmp_path: Path
) -> None:
    """PostgreSQL enforces the columns' sizes (title and section 300, lang 10, id 200); SQLite does not."""
    long_heading = "很長的標題" * 80
    path = write(
        tmp_path / ("n" * 230 + ".md"),
        f"---\nlang: traditional-chinese\ndomain: resume\n---\n# {long_heading}\n\n## {long_heading}\n\n內容。",
    )
    report = await ingest_paths(any_db, embedder, [path])
    assert report.failed == {} and len(report.added) == 1
    doc_id = report.added[0]
    assert len(doc_id) <= 200
    doc = (await documents(any_db))[doc_id]
    assert len(doc.title) == 300 and doc.lang == "zh-TW" and doc.domain == "resume"
    (chunk,) = await chunks_of(any_db, doc_id)
    assert len(chunk.section) == 300 and chunk.domain == "resume"


# --- chunking -------------------------------------------------------------------------------------


ZH_DOC = """---
title: 面試準備
domain: interview_practice
---
# 這個 H1 不是標題（front matter 的 title 才是）

開場白。

## 說故事

{body}
"""

EN_DOC = """---
domain: interview_practice
---
# Interview prep

## Telling the story

{body}
"""


async def test_chunks_keep_sentences_overlap_title_section_domain_and_source(
    db: Database, embedder: Embedder, tmp_path: Path
) -> None:
    zh = "".join(
        f"第{i}個重點是先把故事講清楚，再談結果！" if i % 3 == 0 else f"第{i}個重點：「準備好數字。」"
        for i in range(48)
    )
    en = " ".join(f"Point {i} is to tell the story first, then the result." for i in range(14))
    root = tmp_path / "kb"
    zh_path = write(root / "sub" / "prep.md", ZH_DOC.format(body=zh))
    en_path = write(root / "sub" / "prep-en.md", EN_DOC.format(body=en))
    report = await ingest_paths(db, embedder, [root])
    assert sorted(report.added) == ["prep", "prep-en"]

    docs = await documents(db)
    assert docs["prep"].source_path == str(Path("sub") / "prep.md")
    assert docs["prep-en"].source_path == str(Path("sub") / "prep-en.md")
    cases = [
        ("prep", zh_path, zh, "面試準備", "說故事", ""),
        ("prep-en", en_path, en, "Interview prep", "Telling the story", " "),
    ]
    for doc_id, path, body, title, section, joiner in cases:
        assert docs[doc_id].domain == "interview_practice" and docs[doc_id].title == title
        rows = await chunks_of(db, doc_id)
        drafts = chunk_document(load_document(path, root=root))
        assert [(r.ord, r.title, r.section, r.domain, r.text) for r in rows] == [
            (d.ord, d.title, d.section, d.domain, d.text) for d in drafts
        ]  # what was stored is what chunking produced
        assert all(r.title == title and r.domain == "interview_practice" for r in rows)
        assert all(len(np.frombuffer(r.embedding, dtype=np.float32)) == embedder.dim for r in rows)
        if doc_id == "prep":
            assert rows[0].section == "" and rows[0].text == "開場白。"  # text before the first ##
            rows = rows[1:]
        assert len(rows) >= 3 and all(r.section == section for r in rows)
        sentences = split_sentences(body)
        for r in rows:
            pieces = split_sentences(r.text)
            assert all(p in sentences for p in pieces), r.text  # sentences are never cut
            assert r.text == joiner.join(pieces)  # 中文 joined without spaces, English with one
        for a, b in itertools.pairwise(rows):
            last = split_sentences(a.text)[-1]
            assert b.text.startswith(last) and b.text != last, (a.text, b.text)  # one sentence overlap
        stored = {p for r in rows for p in split_sentences(r.text)}
        assert stored == set(sentences)  # and every sentence is somewhere


def test_english_sentences_in_a_chinese_document_keep_their_space() -> None:
    body = (
        "## 段落\n\n" + "這是中文的句子，說明一個重點。" * 5 + "\n\nThe English part. It has two sentences."
    )
    doc = SourceDocument(id="x", title="標題", text=body, source_path="x.md", lang="zh-TW")
    assert "part. It has" in " ".join(c.text for c in chunk_document(doc))


def test_sentence_boundaries_in_mixed_chinese_and_english() -> None:
    text = "先說結論。Then the details! 「真的嗎？」他問。Is it? Yes… 最後一句"
    assert split_sentences(text) == [
        "先說結論。",
        "Then the details!",
        "「真的嗎？」",
        "他問。",
        "Is it?",
        "Yes… 最後一句",
    ]
