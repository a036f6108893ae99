"""A finished turn as text: the answer, a report, the sources, in plain text (LINE) or Markdown (OpenAI
clients), and plain text cut into messages that fit a chat platform's limits."""

from __future__ import annotations

import re
from typing import Any

from careerwise.api.chat import FullReply

_RISK = {
    "low": ("風險：低", "low risk"),
    "medium": ("風險：中", "medium risk"),
    "high": ("風險：高", "high risk"),
}


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


# --------------------------------------------------------------------------- sources and reports


def sources_of(reply: FullReply) -> list[dict[str, Any]]:
    """The knowledge-base passages the answer drew on, each document section once, in order."""
    seen: set[tuple[str, str | None]] = set()
    out: list[dict[str, Any]] = []
    groups: list[list[dict[str, Any]]] = [r.get("sources") or [] for r in reply.tool_results if r.get("ok")]
    if reply.report:
        groups += [s.get("sources") or [] for s in reply.report.get("sections") or []]
    for group in groups:
        for src in group:
            key = (str(src.get("id")), src.get("section"))
            if key in seen:
                continue
            seen.add(key)
            out.append(
                {
                    "id": src.get("id"),
                    "title": src.get("title"),
                    "section": src.get("section"),
                    "score": src.get("score"),
                }
            )
    return out


def source_label(src: dict[str, Any]) -> str:
    title = str(src.get("title") or src.get("id") or "")
    section = src.get("section")
    return f"{title} — {section}" if section and section != title else title


def sources_block(sources: list[dict[str, Any]], zh: bool, *, markdown: bool = False) -> str:
    """``參考資料：`` / ``Sources:`` and one line per source; document titles appear once."""
    labels: list[str] = []
    for src in sources:
        label = source_label(src)
        if label not in labels:
            labels.append(label)
    bullet = "- " if markdown else "・"
    head = "參考資料：" if zh else "Sources:"
    return "\n".join([head, *(bullet + label for label in labels)])


def report_text(report: dict[str, Any], zh: bool, *, markdown: bool = False) -> str:
    """A structured report (title, sections with a heading, a body and maybe a risk level) as text."""
    lines: list[str] = []
    title = str(report.get("title") or "").strip()
    if title:
        lines.append(f"## {title}" if markdown else title)
    for section in report.get("sections") or []:
        heading = str(section.get("heading") or "").strip()
        risk = _RISK.get(str(section.get("risk_level")))
        if risk is not None:
            heading = f"{heading}（{risk[0]}）" if zh else f"{heading} ({risk[1]})"
        body = str(section.get("body") or "").strip()
        if not markdown:
            body = plain(body)
        lines.append("")
        lines.append(f"### {heading}" if markdown else f"【{heading}】")
        if body:
            lines.append(body)
    return "\n".join(lines).strip()


# --------------------------------------------------------------------------- Markdown to plain text

_FENCE = re.compile(r"^[ \t]*```.*$", re.MULTILINE)
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+(.*?)[ \t]*#*[ \t]*$", re.MULTILINE)
_BULLET = re.compile(r"^([ \t]*)[-*+][ \t]+", re.MULTILINE)
_BOLD = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_ITALIC = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])")
_CODE = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"\[([^\]\n]+)\]\((\S+?)\)")
_RULE = re.compile(r"^[ \t]*([-*_])([ \t]*\1){2,}[ \t]*$", re.MULTILINE)
_BLANKS = re.compile(r"\n{3,}")


def plain(markdown: str) -> str:
    """The model's Markdown as plain text for a chat app that shows characters as they are."""
    text = markdown.replace("\r\n", "\n")
    text = _FENCE.sub("", text)
    text = _RULE.sub("", text)
    text = _HEADING.sub(r"\1", text)
    text = _BULLET.sub(r"\1・", text)
    text = _BOLD.sub(r"\2", text)
    text = _ITALIC.sub(r"\1", text)
    text = _CODE.sub(r"\1", text)
    text = _LINK.sub(r"\1 (\2)", text)
    return _BLANKS.sub("\n\n", text).strip()


def reply_plain_text(reply: FullReply, zh: bool) -> str:
    """Everything the user should read about a finished turn, as plain text: notices (a degraded
    service), the answer, a report, an error line, then the sources."""
    parts = [str(d.get("message") or "").strip() for d in reply.degraded]
    answer = plain(reply.answer)
    if answer:
        parts.append(answer)
    if reply.report:
        parts.append(report_text(reply.report, zh))
    if reply.error:
        parts.append(str(reply.error.get("message") or "").strip())
    sources = sources_of(reply)
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
