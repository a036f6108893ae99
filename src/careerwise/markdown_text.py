"""The model's Markdown as plain text, for a chat app that shows characters as they are (LINE)."""

from __future__ import annotations

import re

__all__ = ["plain"]

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
    """``markdown`` without its markup: headings as their text, bullets as ``・``, emphasis and code
    marks dropped, a link as ``text (url)``, fences and rules removed, at most one blank line."""
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
