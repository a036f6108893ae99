"""A resume file to plain text: PDF (pypdf), DOCX (python-docx) or a text file, within limits.

The kind is decided by the file's first bytes, never by its name or the declared content type alone; a
name that promises one kind over content of another is called out. Every refusal is a user error with
a stable code and one clear sentence (the API maps it to 400, 413 or 415):

* ``resume_too_large`` (413): more bytes than ``max_bytes``, or a DOCX that inflates to more than
  ``archive.max_inflated_bytes`` (counted as it inflates; the zip's declared sizes are never trusted);
* ``resume_unsupported_type`` (415): an image, an old .doc, a spreadsheet, an archive, any binary;
* ``resume_unreadable`` (400): a corrupt or password-protected PDF/DOCX, or text in no known encoding;
  a DOCX with a part named outside it, an archive inside it, or XML with a DTD or entity declarations;
* ``upload_too_complex`` (400): a DOCX with more parts or XML elements than ``archive`` allows;
* ``resume_too_many_pages`` (400): a PDF over ``max_pages``;
* ``resume_empty`` (400): nothing to read (an empty file, a scanned PDF without a text layer);
* ``resume_too_long`` (400): more than ``max_chars`` characters of text.

Extraction parses what a stranger sent: the service calls :func:`extract_resume` in a limited worker
process (``careerwise.untrusted.ParseWorkers``), never in the app's own.
"""

from __future__ import annotations

import io
import logging
import re
import unicodedata
import zipfile
from dataclasses import dataclass, field
from typing import Literal

from careerwise.errors import PayloadTooLargeError, UnsupportedMediaTypeError, UserInputError
from careerwise.untrusted import (
    ArchiveLimits,
    ArchiveRefusedError,
    InflatedTooLargeError,
    XmlRefusedError,
    count_elements,
    declared_pages,
    inflate_members,
    stored_zip,
)

log = logging.getLogger(__name__)

Kind = Literal["pdf", "docx", "text"]
MIN_TEXT_CHARS = 20  # fewer non-blank characters than this is not a resume to review


class ResumeFileError(UserInputError):
    """A resume file we cannot use (400); ``code`` says why."""

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message)
        self.code = code


class ResumeTooLargeError(PayloadTooLargeError):
    code = "resume_too_large"


class ResumeTypeError(UnsupportedMediaTypeError):
    code = "resume_unsupported_type"


@dataclass(frozen=True)
class ExtractLimits:
    max_bytes: int = 5 * 1024 * 1024
    max_pages: int = 5
    max_chars: int = 12_000
    archive: ArchiveLimits = field(default_factory=ArchiveLimits)


@dataclass(frozen=True)
class ExtractedResume:
    text: str
    kind: Kind
    pages: int | None = None

    @property
    def chars(self) -> int:
        return len(self.text)


def too_large(size: int, limit: int) -> ResumeTooLargeError:
    return ResumeTooLargeError(
        f"the file is {_mb(size)}; the limit is {_mb(limit)}. Upload a shorter file or paste the text"
    )


def _mb(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MB" if n >= 1024 * 1024 else f"{n / 1024:.0f} KB"


# --------------------------------------------------------------------------- sniffing

_OTHER_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"),
    (b"\xd0\xcf\x11\xe0", "an old Word/Excel file (.doc/.xls)"),
    (b"{\\rtf", "an RTF file"),
    (b"Rar!", "a RAR archive"),
    (b"7z\xbc\xaf", "a 7-Zip archive"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"%!PS", "a PostScript file"),
)
_NAMED_KINDS = {".pdf": "pdf", ".docx": "docx"}


def sniff(data: bytes) -> Kind:
    """The kind of ``data`` from its first bytes; ``ResumeTypeError`` for anything we do not read."""
    head = data[:1024]
    if head.lstrip(b"\x00\t\n\r ").startswith(b"%PDF-") or b"%PDF-" in head:
        return "pdf"
    if data.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                names = set(z.namelist())
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            raise ResumeFileError(
                "the file looks like a Word document (.docx) but it is damaged and cannot be opened",
                code="resume_unreadable",
            ) from exc
        if "word/document.xml" in names:
            return "docx"
        what = "an Excel workbook" if "xl/workbook.xml" in names else "a ZIP archive"
        raise ResumeTypeError(f"the file is {what}; upload a PDF, a Word .docx or a text file")
    for magic, what in _OTHER_MAGIC:
        if data.startswith(magic):
            hint = (
                "save it as .docx or PDF" if "Word" in what else "upload a PDF, a Word .docx or a text file"
            )
            raise ResumeTypeError(f"the file is {what}; {hint}")
    if b"\x00" in head and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ResumeTypeError("the file is binary, not a PDF, a Word .docx or a text file")
    return "text"


# --------------------------------------------------------------------------- per kind


def _pdf(data: bytes, limits: ExtractLimits) -> tuple[str, int]:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ResumeFileError(
                "the PDF is password-protected; remove the password or paste the text",
                code="resume_unreadable",
            )
        pages = declared_pages(reader) or 0
        if pages <= limits.max_pages:
            pages = len(reader.pages)
        if pages > limits.max_pages:
            raise ResumeFileError(
                f"the PDF has {pages} pages; the limit is {limits.max_pages}. A resume is one or two pages",
                code="resume_too_many_pages",
            )
        texts = [page.extract_text() or "" for page in reader.pages]
    except ResumeFileError:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError, OSError) as exc:
        # pypdf reports damage with many exception types; each is the file's fault, not ours
        log.info("resume: an unreadable PDF (%s: %s)", type(exc).__name__, exc)
        raise ResumeFileError(
            "the PDF is damaged and cannot be read; export it again or paste the text",
            code="resume_unreadable",
        ) from exc
    return "\n".join(texts), pages


def _checked_docx(data: bytes, limits: ArchiveLimits) -> bytes:
    """The document as a zip python-docx may open: every member inflated within the budget, every
    XML part free of DTDs and within the element budget, and a directory that tells the truth."""
    what = "the Word document"
    try:
        members = inflate_members(data, limits, what=what)
        budget = limits.max_xml_elements
        for name, body in members.items():
            if name.endswith((".xml", ".rels")):
                budget -= count_elements(
                    body, budget=budget, limit=limits.max_xml_elements, name=name, what=what
                )
    except InflatedTooLargeError as exc:
        raise ResumeTooLargeError(str(exc)) from exc
    except (ArchiveRefusedError, XmlRefusedError) as exc:
        log.info("resume: a refused DOCX (%s)", exc)
        raise ResumeFileError(str(exc), code="resume_unreadable") from exc
    return stored_zip(members)


def _docx(data: bytes, limits: ArchiveLimits) -> str:
    import docx
    from docx.opc.exceptions import PackageNotFoundError

    checked = _checked_docx(data, limits)
    try:
        document = docx.Document(io.BytesIO(checked))
        lines: list[str] = []
        for section in document.sections:
            lines.extend(p.text for p in section.header.paragraphs)
        lines.extend(p.text for p in document.paragraphs)
        for table in document.tables:
            for row in table.rows:
                cells = list(dict.fromkeys(c.text.strip() for c in row.cells if c.text.strip()))
                lines.append(" | ".join(cells))
    except (
        PackageNotFoundError,
        KeyError,
        ValueError,
        SyntaxError,  # lxml's XMLSyntaxError: nesting past its depth limit, a part python-docx cannot parse
        zipfile.BadZipFile,
        OSError,
        AttributeError,
    ) as exc:
        log.info("resume: an unreadable DOCX (%s: %s)", type(exc).__name__, exc)
        raise ResumeFileError(
            "the Word document is damaged and cannot be read; save it again or paste the text",
            code="resume_unreadable",
        ) from exc
    return "\n".join(lines)


def _text(data: bytes) -> str:
    if data.startswith(b"\xef\xbb\xbf"):
        encodings: tuple[str, ...] = ("utf-8-sig",)
    elif data.startswith((b"\xff\xfe", b"\xfe\xff")):
        encodings = ("utf-16",)
    else:
        encodings = ("utf-8", "cp950")  # cp950: Big5 as Windows writes it, still common in Taiwan
    for encoding in encodings:
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    raise ResumeFileError(
        "the text file is in an unknown encoding; save it as UTF-8 or paste the text",
        code="resume_unreadable",
    )


# --------------------------------------------------------------------------- cleaning

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u200b\ufeff]")
_SPACES = re.compile(r"[ \t\u00a0\u3000]+")
_BLANKS = re.compile(r"\n{3,}")


def clean_text(text: str) -> str:
    """Line breaks unified, control characters and repeated spaces removed, at most one blank line."""
    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))
    text = _CONTROL.sub("", text)
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    return _BLANKS.sub("\n\n", "\n".join(lines)).strip()


def check_text(text: str, limits: ExtractLimits, *, what: str = "the file") -> str:
    """The cleaned text, or the error for empty and over-long text (also used for pasted resumes)."""
    cleaned = clean_text(text)
    visible = len(re.sub(r"\s", "", cleaned))
    if visible < MIN_TEXT_CHARS:
        scanned = " (a scanned PDF has pictures of text, not text)" if what == "the PDF" else ""
        raise ResumeFileError(
            f"{what} has no text to review{scanned}; upload a file with text or paste the resume",
            code="resume_empty",
        )
    if len(cleaned) > limits.max_chars:
        raise ResumeFileError(
            f"{what} has {len(cleaned):,} characters of text; the limit is {limits.max_chars:,}",
            code="resume_too_long",
        )
    return cleaned


def extract_resume(data: bytes, *, filename: str | None, limits: ExtractLimits) -> ExtractedResume:
    """The text of a resume file, or a :class:`ResumeFileError` / 413 / 415 saying what is wrong."""
    if len(data) > limits.max_bytes:
        raise too_large(len(data), limits.max_bytes)
    if not data.strip():
        raise ResumeFileError("the file is empty; upload your resume or paste its text", code="resume_empty")
    kind = sniff(data)
    suffix = "." + filename.rsplit(".", 1)[-1].lower() if filename and "." in filename else ""
    named = _NAMED_KINDS.get(suffix)
    if named is not None and named != kind:
        raise ResumeFileError(
            f"the file is named {suffix} but its content is not a {named.upper()} (damaged or renamed?)",
            code="resume_unreadable",
        )
    pages: int | None = None
    if kind == "pdf":
        raw, pages = _pdf(data, limits)
        what = "the PDF"
    elif kind == "docx":
        raw, what = _docx(data, limits.archive), "the Word document"
    else:
        raw, what = _text(data), "the file"
    return ExtractedResume(text=check_text(raw, limits, what=what), kind=kind, pages=pages)
