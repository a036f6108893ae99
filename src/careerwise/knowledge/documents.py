"""Reading source files into documents: Markdown (with optional front matter), text, HTML, PDF."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from careerwise.errors import UserInputError

SUPPORTED_SUFFIXES = {".md", ".markdown", ".txt", ".html", ".htm", ".pdf"}
MAX_FILE_BYTES = 20 * 1024 * 1024
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

    @property
    def sha256(self) -> str:
        payload = f"{self.title}\n{self.domain}\n{self.lang}\n{self.text}".encode()
        return hashlib.sha256(payload).hexdigest()


def _slug(path: Path) -> str:
    return (
        re.sub(r"[^A-Za-z0-9_-]+", "-", path.stem).strip("-").lower()
        or hashlib.md5(str(path).encode(), usedforsecurity=False).hexdigest()[:12]
    )


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


def _html_to_text(html: str) -> tuple[str, str | None]:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    for tag in soup(["script", "style", "nav", "footer"]):
        tag.decompose()
    title = soup.title.get_text(strip=True) if soup.title else None
    lines: list[str] = []
    for el in soup.find_all(["h1", "h2", "h3", "p", "li"]):
        text = el.get_text(" ", strip=True)
        if not text:
            continue
        level = {"h1": "# ", "h2": "## ", "h3": "### "}.get(el.name, "")
        lines.append(level + text)
    return "\n\n".join(lines), title


def _pdf_to_text(path: Path) -> str:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        reader = PdfReader(str(path))
        return "\n\n".join((page.extract_text() or "") for page in reader.pages)
    except (PdfReadError, ValueError, KeyError) as exc:
        raise UnreadableDocumentError(f"{path}: unreadable PDF ({exc})") from exc


def load_document(path: Path, *, root: Path | None = None) -> SourceDocument:
    """Read one file. Raises ``UnreadableDocumentError`` with a message naming the file."""
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise UnreadableDocumentError(f"{path}: unsupported file type {suffix or '(none)'}")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise UnreadableDocumentError(f"{path}: {size} bytes is over the {MAX_FILE_BYTES} byte limit")
    meta: dict[str, str] = {}
    title: str | None = None
    if suffix == ".pdf":
        text = _pdf_to_text(path)
    else:
        text = _decode(path.read_bytes(), path)
        if suffix in (".html", ".htm"):
            text, title = _html_to_text(text)
        else:
            m = _FRONT.match(text)
            if m:
                for line in m.group(1).splitlines():
                    key, _, value = line.partition(":")
                    if value:
                        meta[key.strip()] = value.strip()
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
    return SourceDocument(
        id=meta.get("id") or _slug(path),
        title=title,
        text=text,
        source_path=rel,
        domain=domain,
        lang=meta.get("lang") or _guess_lang(text),
    )
