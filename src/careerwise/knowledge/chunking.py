"""Split documents into overlapping chunks that respect Chinese and English sentence boundaries."""

from __future__ import annotations

import re
from dataclasses import dataclass

from careerwise.knowledge.documents import SourceDocument

# A sentence ends at Chinese full stops/marks (with closing quotes) or at English .!? before a space.
_SENTENCE_END = re.compile(r"(?<=[。！？；])[」』”’）)]*|(?<=[.!?])[\"')\]]*(?=\s)|\n")
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*$")


@dataclass(frozen=True)
class ChunkDraft:
    ord: int
    title: str
    section: str
    text: str
    domain: str


def split_sentences(text: str) -> list[str]:
    pieces: list[str] = []
    start = 0
    for m in _SENTENCE_END.finditer(text):
        end = m.end()
        piece = text[start:end].strip()
        if piece:
            pieces.append(piece)
        start = end
    tail = text[start:].strip()
    if tail:
        pieces.append(tail)
    return pieces


def _sections(text: str) -> list[tuple[str, str]]:
    """(heading, body) pairs; the text before the first ## heading gets an empty heading."""
    out: list[tuple[str, list[str]]] = [("", [])]
    for line in text.splitlines():
        m = _HEADING.match(line)
        if m and len(m.group(1)) >= 2:
            out.append((m.group(2), []))
        elif m:
            continue  # the H1 is the title, kept on every chunk already
        else:
            out[-1][1].append(line)
    return [(h, "\n".join(body).strip()) for h, body in out if "\n".join(body).strip()]


def chunk_document(
    doc: SourceDocument, *, target_chars: int = 320, overlap_sentences: int = 1
) -> list[ChunkDraft]:
    chunks: list[ChunkDraft] = []
    for heading, body in _sections(doc.text):
        sentences = split_sentences(body)
        current: list[str] = []
        size = 0
        for sentence in sentences:
            if current and size + len(sentence) > target_chars:
                chunks.append(_draft(doc, heading, current, len(chunks)))
                current = current[-overlap_sentences:] if overlap_sentences else []
                size = sum(len(s) for s in current)
            current.append(sentence)
            size += len(sentence)
        if current:
            chunks.append(_draft(doc, heading, current, len(chunks)))
    return chunks


def join_sentences(sentences: list[str]) -> str:
    """Chinese sentences join directly; a space goes wherever an ASCII sentence meets another
    sentence (English inside a Chinese article keeps its spaces, whatever the document's language)."""
    out = ""
    for sentence in sentences:
        if out and (out[-1].isascii() or sentence[0].isascii()) and not out[-1].isspace():
            out += " "
        out += sentence
    return out


def _draft(doc: SourceDocument, heading: str, sentences: list[str], ord_: int) -> ChunkDraft:
    return ChunkDraft(
        ord=ord_, title=doc.title, section=heading, text=join_sentences(sentences), domain=doc.domain
    )


def embedding_text(title: str, section: str, text: str) -> str:
    """What gets embedded: the chunk with its title and heading, so short chunks keep their topic."""
    head = f"{title} — {section}" if section else title
    return f"{head}\n{text}"


_BULLET = re.compile(r"^(?:[-*+>]|\d+[.)])\s+")
_ENDS_HAN = re.compile(r"[，。！？；：」』）]$")


def sentence_units(text: str, *, min_chars: int = 30) -> list[str]:
    """A chunk's sentences for sentence-level scoring: list markers dropped, and pieces shorter than
    ``min_chars`` merged into the next one, so that a bare "- 本薪" is not scored on its own."""
    units: list[str] = []
    buf = ""
    for piece in split_sentences(text):
        piece = _BULLET.sub("", piece).strip()
        if not piece:
            continue
        if buf:
            buf += ("" if _ENDS_HAN.search(buf) else " ") + piece
        else:
            buf = piece
        if len(buf) >= min_chars:
            units.append(buf)
            buf = ""
    if buf:
        if units and len(buf) < min_chars // 2:
            units[-1] += ("" if _ENDS_HAN.search(units[-1]) else " ") + buf
        else:
            units.append(buf)
    return units
