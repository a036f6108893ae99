"""Hostile inputs against a real ``careerwise serve`` (one process, SQLite, the fake provider), by
named section. Each section starts what it needs and returns its table; another section (crash
recovery, canaries, bookings) is one more entry in ``SECTIONS``.

``uploads``: zip bombs with honest and lying directories, XML entity and element floods, traversal,
encrypted and nested members, huge and malformed PDFs, as anonymous resume uploads and as admin
knowledge uploads. For each: the status, the seconds to the answer, the server's added resident memory
(its peak during the request over its resident memory before, where the kernel lets us reset the peak;
else the growth of its resident memory), and whether anything was stored (rows in the database, files
in ``uploads/`` or its staging folder). The goal per shape: a 4xx within 5 s, at most 100 MB added,
nothing stored.

``recovery`` (bench/_hostile_recovery.py), ``canary`` (bench/_hostile_canary.py), ``bookings`` and
``schemathesis`` (bench/_hostile_api.py): each module says what it measures and its goal.

    python -m bench hostile                          # every section
    python -m bench.hostile canary bookings          # the sections named
"""

from __future__ import annotations

import asyncio
import io
import os
import sqlite3
import struct
import sys
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench import _hostile_api, _hostile_canary, _hostile_recovery
from bench._serve import data_dir_with_corpus, proc_kb, serve_on_fake_llm
from bench.common import table
from tests.fixtures import hostile_files as hostile

MB = 1024 * 1024
GOAL_SECONDS, GOAL_MB = 5.0, 100.0
TABLES = ("resumes", "messages", "conversations", "documents", "chunks")


# --------------------------------------------------------------------------- building the files


def _deflate_repeated(head: bytes, block: bytes, count: int, tail: bytes) -> tuple[bytes, int, int]:
    """A raw deflate stream of ``head + block * count + tail`` built without inflating it: after a
    full flush the compressor forgets its history, so ``block``'s compressed bytes repeat as they are.
    Returns (compressed, crc32, inflated size)."""
    c = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    start = c.compress(head) + c.flush(zlib.Z_FULL_FLUSH)
    one = c.compress(block) + c.flush(zlib.Z_FULL_FLUSH)
    end = c.compress(tail) + c.flush(zlib.Z_FINISH)
    crc = zlib.crc32(head)
    for _ in range(count):
        crc = zlib.crc32(block, crc)
    crc = zlib.crc32(tail, crc)
    return start + one * count + end, crc, len(head) + len(block) * count + len(tail)


def _zip(members: list[tuple[str, bytes, int, int, int]]) -> bytes:
    """A zip of already deflated members: (name, compressed, crc, real size, declared size)."""
    out, central = io.BytesIO(), io.BytesIO()
    for name, data, crc, _real, declared in members:
        encoded = name.encode()
        offset = out.tell()
        sizes = (crc, len(data), declared, len(encoded))
        out.write(struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 8, 0, 0, *sizes, 0) + encoded + data)
        central.write(
            struct.pack(
                "<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, 8, 0, 0, *sizes, 0, 0, 0, 0, 0, offset
            )
            + encoded
        )
    start, size = out.tell(), central.tell()
    out.write(central.getvalue())
    out.write(struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(members), len(members), size, start, 0))
    return out.getvalue()


def _small(name: str, body: bytes) -> tuple[str, bytes, int, int, int]:
    c = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    data = c.compress(body) + c.flush()
    return name, data, zlib.crc32(body), len(body), len(body)


def big_bomb(inflated: int, *, lying: bool) -> bytes:
    """A Word document whose word/document.xml inflates to ``inflated`` bytes of whitespace."""
    head = hostile.document_xml(hostile.RESUME_LINES).replace(b"</w:body></w:document>", b"")
    data, crc, real = _deflate_repeated(head, b" " * MB, inflated // MB, b"</w:body></w:document>")
    return _zip(
        [
            _small("[Content_Types].xml", hostile.CONTENT_TYPES),
            _small("_rels/.rels", hostile.RELS),
            ("word/document.xml", data, crc, real, 4096 if lying else real),
        ]
    )


def many_inflating_members(count: int, each: int) -> bytes:
    members = [_small("[Content_Types].xml", hostile.CONTENT_TYPES), _small("_rels/.rels", hostile.RELS)]
    members.append(_small("word/document.xml", hostile.document_xml(hostile.RESUME_LINES)))
    data, crc, real = _deflate_repeated(b"", b"\x00" * MB, each // MB, b"")
    members += [(f"word/media/image{i}.png", data, crc, real, real) for i in range(count)]
    return _zip(members)


def nested_elements(depth: int) -> bytes:
    return hostile.docx(
        hostile.document_xml(hostile.RESUME_LINES, filler=b"<w:r>" * depth + b"</w:r>" * depth)
    )


def attribute_flood(attributes: int) -> bytes:
    attrs = b" ".join(b'a%d=""' % i for i in range(attributes))
    return hostile.docx(hostile.document_xml(hostile.RESUME_LINES, filler=b"<w:p " + attrs + b"/>"))


def dtd_only() -> bytes:
    return hostile.docx(
        hostile.document_xml(
            hostile.RESUME_LINES, prolog='<!DOCTYPE w:document SYSTEM "http://127.0.0.1:9/x.dtd">'
        )
    )


def pdf_garbage() -> bytes:
    return b"%PDF-1.7\n" + os.urandom(256 * 1024) + b"\n%%EOF"


def pdf_truncated() -> bytes:
    return hostile.pdf_pages(3)[:-400]


def pdf_self_kids() -> bytes:
    """A page tree whose /Kids holds itself."""
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [2 0 R 2 0 R] /Count 2 >>",
    ]
    return _pdf(objs)


def pdf_deep_array(depth: int) -> bytes:
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /X " + b"[" * depth + b"]" * depth + b" >>",
    ]
    return _pdf(objs)


def pdf_stream_bomb(inflated: int) -> bytes:
    """One page whose content stream inflates to ``inflated`` bytes of spaces."""
    data, _crc, _real = _deflate_repeated(b"", b" " * MB, inflated // MB, b"")
    wrapped = b"\x78\x9c" + data + b"\x00\x00\x00\x00"  # zlib framing; the checksum is left wrong on purpose
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(wrapped) + wrapped + b"\nendstream",
    ]
    return _pdf(objs)


def _pdf(objs: list[bytes]) -> bytes:
    out = io.BytesIO(b"%PDF-1.7\n")
    out.seek(0, io.SEEK_END)
    offsets = []
    for n, body in enumerate(objs, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % n + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1))
    for off in offsets:
        out.write(b"%010d 00000 n \n" % off)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref))
    return out.getvalue()


@dataclass(frozen=True)
class Shape:
    name: str
    filename: str
    make: Callable[[], bytes]
    knowledge: bool = False  # an admin knowledge upload, else an anonymous resume upload


SHAPES = [
    Shape("zip bomb, honest directory (2 GB)", "cv.docx", lambda: big_bomb(2048 * MB, lying=False)),
    Shape("zip bomb, lying directory (2 GB said 4 KB)", "cv.docx", lambda: big_bomb(2048 * MB, lying=True)),
    Shape("zip bomb, honest directory (100 MB)", "cv.docx", lambda: big_bomb(100 * MB, lying=False)),
    Shape("zip bomb, 200 members of 8 MB", "cv.docx", lambda: many_inflating_members(200, 8 * MB)),
    Shape("lying directory within the budget", "cv.docx", lambda: hostile.lying_bomb_docx(MB)),
    Shape("element flood (2 M empty paragraphs)", "cv.docx", lambda: hostile.element_flood_docx(2_000_000)),
    Shape("element nesting (100 k deep)", "cv.docx", lambda: nested_elements(100_000)),
    Shape("attribute flood (1 M on one element)", "cv.docx", lambda: attribute_flood(1_000_000)),
    Shape("entity expansion (billion laughs)", "cv.docx", hostile.entity_docx),
    Shape("external entity (file:///etc/passwd)", "cv.docx", hostile.external_entity_docx),
    Shape("external DTD", "cv.docx", dtd_only),
    Shape("traversal name (../)", "cv.docx", hostile.traversal_docx),
    Shape("absolute name (/etc/...)", "cv.docx", lambda: hostile.traversal_docx("/etc/cron.d/evil")),
    Shape("backslash name (..\\)", "cv.docx", lambda: hostile.traversal_docx("..\\..\\evil.txt")),
    Shape("encrypted member", "cv.docx", hostile.encrypted_docx),
    Shape("archive inside the document", "cv.docx", lambda: hostile.nested_zip_docx(3)),
    Shape("5,000 members", "cv.docx", lambda: hostile.many_members_docx(5000)),
    Shape("PDF, 10,000 pages", "cv.pdf", lambda: hostile.pdf_pages(10_000)),
    Shape("PDF, random bytes after the header", "cv.pdf", pdf_garbage),
    Shape("PDF, truncated", "cv.pdf", pdf_truncated),
    Shape("PDF, page tree that holds itself", "cv.pdf", pdf_self_kids),
    Shape("PDF, array nested 100 k deep", "cv.pdf", lambda: pdf_deep_array(100_000)),
    Shape("PDF, content stream bomb (1 GB)", "cv.pdf", lambda: pdf_stream_bomb(1024 * MB)),
    Shape("knowledge PDF, 10,000 pages", "handbook.pdf", lambda: hostile.pdf_pages(10_000), knowledge=True),
    Shape("knowledge PDF, random bytes", "handbook.pdf", pdf_garbage, knowledge=True),
    Shape("knowledge PDF, page tree that holds itself", "handbook.pdf", pdf_self_kids, knowledge=True),
    Shape("knowledge text, binary", "notes.md", lambda: b"\x00\x01" * 4096, knowledge=True),
]


# --------------------------------------------------------------------------- measuring


def _reset_peak(pid: int) -> bool:
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # resets VmHWM to the current VmRSS
    except OSError:
        return False
    return True


def _stored(data_dir: Path) -> tuple[tuple[int, ...], list[str]]:
    with sqlite3.connect(data_dir / "careerwise.db") as db:
        rows = tuple(int(db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]) for t in TABLES)
    files = [
        str(p.relative_to(data_dir))
        for folder in ("uploads", "uploads-incoming")
        if (data_dir / folder).exists()
        for p in (data_dir / folder).rglob("*")
        if p.is_file()
    ]
    return rows, sorted(files)


def _post(client: httpx.Client, admin: httpx.Client, shape: Shape, data: bytes) -> int:
    if shape.knowledge:
        files = {"files": (shape.filename, data, "application/octet-stream")}
        return admin.post("/api/admin/knowledge/documents", files=files).status_code
    return client.post("/api/resumes", files={"file": (shape.filename, data)}).status_code


def _uploads() -> list[str]:
    data_dir = data_dir_with_corpus()
    asyncio.run(_hostile_api.accounts(data_dir))
    built = [(shape, shape.make()) for shape in SHAPES]
    rows: list[list[object]] = []
    met = 0
    peak_known = True
    with (
        serve_on_fake_llm(data_dir, log_prefix="cw-bench-hostile-") as server,
        httpx.Client(base_url=server.url, timeout=120) as client,
        httpx.Client(base_url=server.url, timeout=120) as admin,
    ):
        r = admin.post(
            "/api/auth/login",
            json={"email": _hostile_api.ACCOUNTS["admin"], "password": _hostile_api.PASSWORD},
        )
        r.raise_for_status()
        pid = server.proc.pid
        for shape, data in built:
            before = _stored(data_dir)
            rss = proc_kb(pid, "VmRSS")
            peak_known = _reset_peak(pid) and peak_known
            t0 = time.perf_counter()
            status = _post(client, admin, shape, data)
            took = time.perf_counter() - t0
            after_kb = proc_kb(pid, "VmHWM" if peak_known else "VmRSS")
            added = max(0.0, (after_kb - rss) / 1024)
            stored = _stored(data_dir) != before
            ok = 400 <= status < 500 and took <= GOAL_SECONDS and added <= GOAL_MB and not stored
            met += ok
            rows.append(
                [shape.name, f"{len(data) / 1024:,.0f}", status, f"{took:.2f}", f"{added:.1f}",
                 "yes" if stored else "no", "ok" if ok else "MISSED"]
            )  # fmt: skip
    memory_note = "peak RSS during the request" if peak_known else "RSS growth (the peak could not be reset)"
    return [
        f"## Hostile uploads: {len(SHAPES)} shapes, {met} met the goal\n",
        table(["shape", "KB sent", "status", "s", "MB added", "stored", "goal"], rows),
        "",
        f"Goal per shape: a 4xx within {GOAL_SECONDS:g} s, at most {GOAL_MB:g} MB added ({memory_note}), "
        "nothing stored. Load average at the end: {:.2f} {:.2f} {:.2f}.".format(*os.getloadavg()),
    ]


# the named sections, in the order they run
SECTIONS: dict[str, Callable[[], list[str]]] = {
    "uploads": _uploads,
    "recovery": _hostile_recovery.run,
    "canary": _hostile_canary.run,
    "bookings": _hostile_api.bookings,
    "schemathesis": _hostile_api.schemathesis,
}


def run(names: Sequence[str] = ()) -> list[str]:
    """Every section, or the ones named (``python -m bench.hostile canary bookings``)."""
    unknown = set(names) - set(SECTIONS)
    if unknown:
        raise SystemExit(
            f"no such section: {', '.join(sorted(unknown))}; the sections: {', '.join(SECTIONS)}"
        )
    lines: list[str] = []
    for name, section in SECTIONS.items():
        if names and name not in names:
            continue
        lines.extend(section())
        lines.append("")
    return lines


if __name__ == "__main__":
    print("\n".join(run(sys.argv[1:])), flush=True)
