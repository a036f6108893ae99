"""Model output to safe HTML: Markdown rendered on the server, then sanitized by an allow-list.

Model output is untrusted (a prompt-injected passage can make the model write anything), so two layers
stand between it and the page, and either alone would stop the known attacks:

1. markdown-it-py with raw HTML disabled: ``<script>`` in the text comes out as the visible characters
   ``&lt;script&gt;``; links with a ``javascript:``/``vbscript:``/``file:``/``data:`` destination are
   not made into links; Markdown images whose source is not this site become their alt text, so an
   answer cannot make the browser fetch a "beacon" from another host.
2. nh3 (the ammonia sanitizer) with an allow-list of tags and attributes: no ``style``, no event handlers,
   no ``class``; ``href`` only with http, https or mailto; ``src`` only as a path on this site; every link
   gets ``rel="noopener noreferrer nofollow"`` and ``target="_blank"``.

The page's Content-Security-Policy (careerwise.api.security_headers) is the third layer: even markup that
got through both could neither run a script nor load anything from another origin.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

import nh3
from markdown_it import MarkdownIt
from markdown_it.token import Token

__all__ = ["ALLOWED_ATTRIBUTES", "ALLOWED_TAGS", "LINK_REL", "is_same_origin_path", "render_markdown"]

ALLOWED_TAGS: frozenset[str] = frozenset(
    {
        "a",
        "blockquote",
        "br",
        "code",
        "del",
        "em",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "hr",
        "img",
        "li",
        "ol",
        "p",
        "pre",
        "s",
        "span",
        "strong",
        "table",
        "tbody",
        "td",
        "th",
        "thead",
        "tr",
        "ul",
    }
)
ALLOWED_ATTRIBUTES: dict[str, frozenset[str]] = {
    "a": frozenset({"href", "title"}),
    "img": frozenset({"src", "alt", "title"}),
    "ol": frozenset({"start"}),
}
LINK_REL = "noopener noreferrer nofollow"
LINK_SCHEMES: frozenset[str] = frozenset({"http", "https", "mailto"})
# removed with everything inside them (other unknown tags lose the tag and keep their text)
DROPPED_WITH_CONTENT: frozenset[str] = frozenset(
    {"script", "style", "iframe", "object", "embed", "svg", "math", "template", "noscript", "textarea"}
)


def is_same_origin_path(url: str) -> bool:
    """True for a path on this site ("/static/x.png"); false for anything a browser would resolve to
    another origin or another scheme: "//host/x", "/\\host/x" (browsers read a backslash as a slash),
    "https://…", "data:…", and relative paths, whose meaning depends on the page they land in."""
    url = url.strip()
    if not url.startswith("/") or url.startswith(("//", "/\\")):
        return False
    if any(ord(ch) < 0x20 or ch == "\\" for ch in url):
        return False
    parts = urlsplit(url)
    return not parts.scheme and not parts.netloc


def _is_allowed_link(url: str) -> bool:
    url = url.strip()
    if any(ord(ch) < 0x20 for ch in url):
        return False
    parts = urlsplit(url)
    if parts.scheme.lower() not in LINK_SCHEMES:
        return False
    return parts.scheme.lower() == "mailto" or bool(parts.netloc)


def _attribute_filter(tag: str, attribute: str, value: str) -> str | None:
    # do not let this raise: nh3 would report the exception through sys.unraisablehook
    if attribute == "href":
        return value if tag == "a" and _is_allowed_link(value) else None
    if attribute == "src":
        return value if tag == "img" and is_same_origin_path(value) else None
    return value


def _render_image(
    self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any
) -> str:  # markdown-it's renderer-rule signature
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    if is_same_origin_path(src):
        return str(self.image(tokens, idx, options, env))
    # an image from elsewhere is never fetched: its alt text stands in for it
    alt = self.renderInlineAsText(token.children or [], options, env)
    return f"<span>{html.escape(alt)}</span>" if alt else ""


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "breaks": True, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.add_render_rule("image", _render_image)
    return md


@lru_cache(maxsize=1)
def _cleaner() -> nh3.Cleaner:
    return nh3.Cleaner(
        tags=set(ALLOWED_TAGS),
        clean_content_tags=set(DROPPED_WITH_CONTENT),
        attributes={tag: set(attrs) for tag, attrs in ALLOWED_ATTRIBUTES.items()},
        attribute_filter=_attribute_filter,
        url_schemes=set(LINK_SCHEMES),
        link_rel=LINK_REL,
        set_tag_attribute_values={"a": {"target": "_blank"}},
        strip_comments=True,
    )


def render_markdown(text: str) -> str:
    """Markdown from the model (or anyone) to HTML that is safe to put into the page."""
    if not text:
        return ""
    return _cleaner().clean(_markdown().render(text)).strip()
