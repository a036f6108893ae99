"""Reading source files into documents: Markdown (with optional front matter), text, HTML, PDF."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from careerwise.errors import UserInputError
from careerwise.untrusted import declared_pages

SUPPORTED_SUFFIXES = {".md", ".markdown", ".txt", ".html", ".htm", ".pdf"}
MAX_FILE_BYTES = 20 * 1024 * 1024
MAX_PDF_PAGES = 300  # Settings.knowledge_max_pdf_pages for uploads; a longer PDF is refused, not cut
# the columns' sizes (store/models.py): PostgreSQL refuses longer values where SQLite would keep them
MAX_ID_CHARS, MAX_TITLE_CHARS, MAX_LANG_CHARS = 200, 300, 10
DOMAINS = ("market_salary", "growth_skills", "interview_practice", "resume", "other")
_FRONT = re.compile(r"\A---\s*\n(.*?)\n---\s*\n", re.S)


class UnreadableDocumentError(UserInputError):
    code = "document_unreadable"


@dataclass(frozen=True)
class SourceDocument:
    id: str
    title: str
    text: str
    source_path: str
    domain: str = "other"
    lang: str = "zh-TW"
    # the title in the knowledge base's other language (front matter ``alt_title``): embedded on its own
    # so that a question in that language finds the article (knowledge/titles.py); never shown, never
    # searched lexically, never part of a chunk
    alt_title: str = ""

    @property
    def sha256(self) -> str:
        alt = f"\n{self.alt_title}" if self.alt_title else ""  # a document without one keeps its old hash
        payload = f"{self.title}\n{self.domain}\n{self.lang}\n{self.text}{alt}".encode()
        return hashlib.sha256(payload).hexdigest()


def _slug(path: Path) -> str:
    """The document id from the file name alone, so that the same file gets the same id however its
    path is spelled. Letters of any script are kept ("薪水談判.md" -> "薪水談判"); a name with none
    gets a hash of the name."""
    slug = re.sub(r"[^\w-]+", "-", path.stem).strip("-").lower()
    if not slug:
        return hashlib.md5(path.name.encode(), usedforsecurity=False).hexdigest()[:12]
    if len(slug) > MAX_ID_CHARS:
        digest = hashlib.md5(slug.encode(), usedforsecurity=False).hexdigest()[:12]
        slug = f"{slug[: MAX_ID_CHARS - 13]}-{digest}"
    return slug


def _guess_lang(text: str) -> str:
    cjk = sum(1 for ch in text[:2000] if "\u4e00" <= ch <= "\u9fff")
    return "zh-TW" if cjk > 50 else "en"


def _decode(raw: bytes, path: Path) -> str:
    if b"\x00" in raw[:4096]:
        raise UnreadableDocumentError(f"{path}: looks like binary data, not text")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UnreadableDocumentError(f"{path}: not valid UTF-8 text ({exc.reason})") from exc


_HTML_BLOCKS = ["h1", "h2", "h3", "h4", "h5", "h6", "p", "li", "blockquote", "pre", "td", "th", "dt", "dd"]


def _html_to_text(html: str) -> tuple[str, str | None]:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    for tag in soup(["script", "style", "nav", "footer", "template", "noscript"]):
        tag.decompose()
    title = soup.title.get_text(strip=True) if soup.title else None
    if soup.title:
        soup.title.decompose()
    lines: list[str] = []
    for el in soup.find_all(_HTML_BLOCKS):
        if el.find_parent(_HTML_BLOCKS):
            continue  # inside a block taken whole already (<li><p>…</p></li>): not twice
        text = el.get_text(" ", strip=True)
        if not text:
            continue
        level = "#" * int(el.name[1]) + " " if el.name in ("h1", "h2", "h3", "h4", "h5", "h6") else ""
        lines.append(level + text)
    if not lines:  # text in bare <div>s and <span>s: one line per text line
        lines = [line.strip() for line in soup.get_text("\n").splitlines() if line.strip()]
    return "\n\n".join(lines), title or None


def _pdf_to_text(path: Path, max_pages: int) -> str:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(str(path))
        pages = declared_pages(reader) or 0
        if pages <= max_pages:
            pages = len(reader.pages)
        if pages > max_pages:
            raise UnreadableDocumentError(
                f"{path}: the PDF has {pages:,} pages; the limit is {max_pages:,}. Split it into shorter documents"
            )
        return "\n\n".join((page.extract_text() or "") for page in reader.pages)
    except (OSError, UnreadableDocumentError):
        raise
    except PdfReadError as exc:
        raise UnreadableDocumentError(f"{path}: unreadable PDF ({exc})") from exc
    except Exception as exc:  # pypdf fails on damaged files in many ways
        raise UnreadableDocumentError(f"{path}: unreadable PDF ({type(exc).__name__}: {exc})") from exc


def _front_value(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1].strip()  # YAML-style quotes: title: "…"
    return value


def load_document(
    path: Path, *, root: Path | None = None, max_pdf_pages: int = MAX_PDF_PAGES
) -> SourceDocument:
    """Read one file. Raises ``UnreadableDocumentError`` with a message naming the file. A file from a
    stranger is read in a limited worker (``careerwise.untrusted.ParseWorkers``), as the admin upload does."""
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise UnreadableDocumentError(f"{path}: unsupported file type {suffix or '(none)'}")
    try:
        return _load(path, suffix, root, max_pdf_pages)
    except OSError as exc:  # permissions, a file that vanished, an I/O error
        raise UnreadableDocumentError(f"{path}: cannot read the file ({exc.strerror or exc})") from exc


def _load(path: Path, suffix: str, root: Path | None, max_pdf_pages: int) -> SourceDocument:
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise UnreadableDocumentError(f"{path}: {size} bytes is over the {MAX_FILE_BYTES} byte limit")
    meta: dict[str, str] = {}
    title: str | None = None
    if suffix == ".pdf":
        text = _pdf_to_text(path, max_pdf_pages)
    else:
        text = _decode(path.read_bytes(), path)
        if suffix in (".html", ".htm"):
            text, title = _html_to_text(text)
        else:
            m = _FRONT.match(text)
            if m:
                for line in m.group(1).splitlines():
                    key, _, value = line.partition(":")
                    if value.strip():
                        meta[key.strip()] = _front_value(value)
                text = text[m.end() :]
    text = text.strip()
    if not text:
        raise UnreadableDocumentError(f"{path}: no text in the file")
    if title is None:
        heading = re.search(r"^#\s+(.+)$", text, re.M)
        title = meta.get("title") or (heading.group(1).strip() if heading else path.stem)
    domain = meta.get("domain", "other")
    if domain not in DOMAINS:
        domain = "other"
    rel = str(path.relative_to(root)) if root and path.is_relative_to(root) else str(path)
    lang = meta.get("lang", "")
    return SourceDocument(
        id=(meta.get("id") or _slug(path))[:MAX_ID_CHARS],
        title=title[:MAX_TITLE_CHARS],
        text=text,
        source_path=rel,
        domain=domain,
        lang=lang if 0 < len(lang) <= MAX_LANG_CHARS else _guess_lang(text),
        alt_title=meta.get("alt_title", "")[:MAX_TITLE_CHARS],
    )
