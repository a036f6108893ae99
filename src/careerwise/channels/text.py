"""A finished turn as text: the answer, a report, the sources, in plain text (LINE) or Markdown (OpenAI
clients), and plain text cut into messages that fit a chat platform's limits."""

from __future__ import annotations

import re

from careerwise.events import Source
from careerwise.markdown_text import plain
from careerwise.reply import TurnReply
from careerwise.reports import report_text

__all__ = [
    "plain",
    "reply_plain_text",
    "source_label",
    "sources_block",
    "split_messages",
    "utf16_len",
]


def utf16_len(s: str) -> int:
    """Length as LINE (and JavaScript) count it: UTF-16 code units, so an emoji counts as 2."""
    return len(s.encode("utf-16-le")) // 2


def _prefix(s: str, units: int) -> str:
    """The longest prefix of ``s`` that is at most ``units`` UTF-16 code units long."""
    if utf16_len(s) <= units:
        return s
    used = 0
    for i, ch in enumerate(s):
        used += 2 if ord(ch) > 0xFFFF else 1
        if used > units:
            return s[:i]
    return s


# --------------------------------------------------------------------------- a finished turn


def source_label(source: Source) -> str:
    title = source.title or source.id
    return f"{title} — {source.section}" if source.section and source.section != title else title


def sources_block(sources: list[Source], zh: bool, *, markdown: bool = False) -> str:
    """``參考資料：`` / ``Sources:`` and one line per source; document titles appear once."""
    labels: list[str] = []
    for source in sources:
        label = source_label(source)
        if label not in labels:
            labels.append(label)
    bullet = "- " if markdown else "・"
    head = "參考資料：" if zh else "Sources:"
    return "\n".join([head, *(bullet + label for label in labels)])


def reply_plain_text(reply: TurnReply, zh: bool) -> str:
    """Everything the user should read about a finished turn, as plain text: notices (a degraded
    service), the answer, a report, an error line, then the sources."""
    parts = [d.message.strip() for d in reply.degraded]
    answer = plain(reply.answer)
    if answer:
        parts.append(answer)
    if reply.report is not None:
        parts.append(report_text(reply.report, zh))
    if reply.error is not None:
        parts.append(reply.error.message.strip())
    sources = reply.sources()
    if sources:
        parts.append(sources_block(sources, zh))
    return "\n\n".join(p for p in parts if p)


# --------------------------------------------------------------------------- splitting into messages


def _fit(paragraph: str, limit: int) -> list[str]:
    """One paragraph as pieces of at most ``limit`` units: whole lines where possible, else hard cuts."""
    if utf16_len(paragraph) <= limit:
        return [paragraph]
    pieces: list[str] = []
    current = ""
    for line in paragraph.split("\n"):
        while utf16_len(line) > limit:
            if current:
                pieces.append(current)
                current = ""
            head = _prefix(line, limit)
            pieces.append(head)
            line = line[len(head) :]
        candidate = f"{current}\n{line}" if current else line
        if utf16_len(candidate) <= limit:
            current = candidate
        else:
            pieces.append(current)
            current = line
    if current:
        pieces.append(current)
    return [p for p in pieces if p.strip()]


def split_messages(
    text: str, *, limit: int = 5000, max_messages: int = 5, overflow_note: str = "…"
) -> list[str]:
    """``text`` as at most ``max_messages`` messages of at most ``limit`` UTF-16 units each, cut between
    paragraphs (then lines, then anywhere only if one line is longer than a message). Whatever does not
    fit in ``max_messages`` is dropped and the last message ends with ``overflow_note``."""
    if limit < 1 or max_messages < 1:
        raise ValueError("limit and max_messages must be positive")
    pieces: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text.strip()):
        if paragraph.strip():
            pieces.extend(_fit(paragraph.strip("\n"), limit))
    messages: list[str] = []
    current = ""
    for piece in pieces:
        candidate = f"{current}\n\n{piece}" if current else piece
        if utf16_len(candidate) <= limit:
            current = candidate
        else:
            messages.append(current)
            current = piece
    if current:
        messages.append(current)
    if len(messages) > max_messages:
        messages = messages[:max_messages]
        note = "\n\n" + overflow_note
        room = max(0, limit - utf16_len(note))
        messages[-1] = _prefix(messages[-1], room).rstrip() + note
    return messages
