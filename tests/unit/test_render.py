"""careerwise.web.render: Markdown in, allow-listed HTML out."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from careerwise.web.render import (
    ALLOWED_ATTRIBUTES,
    ALLOWED_TAGS,
    LINK_REL,
    is_same_origin_path,
    render_markdown,
)
from tests.hostile_outputs import EVIL, HOSTILE_OUTPUTS


class Elements(HTMLParser):
    """Every start tag with its attributes, as a browser's parser would see them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs)))


def elements(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = Elements()
    parser.feed(html)
    parser.close()
    return parser.found


def test_markdown_becomes_html() -> None:
    html = render_markdown("## 三步驟\n\n1. **探**：先問預算\n2. *錨*：開價\n\n`code` 與 ~~刪除~~\n\n> 引言")
    assert "<h2>三步驟</h2>" in html
    assert "<ol>\n<li><strong>探</strong>：先問預算</li>\n<li><em>錨</em>：開價</li>\n</ol>" in html
    assert "<code>code</code>" in html and "<s>刪除</s>" in html and "<blockquote>" in html
    assert render_markdown("第一行\n第二行") == "<p>第一行<br>\n第二行</p>"  # a model's line breaks stay
    assert render_markdown("") == ""


def test_tables_keep_their_cells_but_not_their_inline_styles() -> None:
    html = render_markdown("| 項目 | 金額 |\n|:--|--:|\n| 月薪 | 50,000 |")
    assert "<td>50,000</td>" in html and "style" not in html


def test_raw_html_is_text_not_markup() -> None:
    html = render_markdown("<b>粗體</b><script>alert(1)</script>")
    assert html == "<p>&lt;b&gt;粗體&lt;/b&gt;&lt;script&gt;alert(1)&lt;/script&gt;</p>"


def test_links_get_rel_and_target_and_only_safe_schemes() -> None:
    html = render_markdown(
        "[a](https://example.org/x?y=1) [b](http://example.org) [c](mailto:hi@example.org)"
    )
    anchors = [attrs for tag, attrs in elements(html) if tag == "a"]
    assert [a["href"] for a in anchors] == [
        "https://example.org/x?y=1",
        "http://example.org",
        "mailto:hi@example.org",
    ]
    assert all(a["rel"] == LINK_REL == "noopener noreferrer nofollow" for a in anchors)
    assert all(a["target"] == "_blank" for a in anchors)
    for unsafe in (
        "javascript:alert(1)",
        "data:text/html,x",
        "vbscript:x",
        "ftp://example.org/x",
        "file:///etc/passwd",
    ):
        html = render_markdown(f"[x]({unsafe})")
        assert all("href" not in attrs for _, attrs in elements(html)), unsafe
    # relative and protocol-relative links are not links either: only http, https and mailto
    for other in ("/bookings", "//evil.example/x", "x.html"):
        assert "href" not in render_markdown(f"[x]({other})"), other


def test_images_only_from_this_site() -> None:
    assert '<img src="/static/chart.png" alt="圖表">' in render_markdown("![圖表](/static/chart.png)")
    for remote in (
        "https://evil.example/b.gif",
        "http://evil.example/b.gif",
        "//evil.example/b.gif",
        "data:image/png;base64,iVBORw0KGgo=",
        "relative.png",
    ):
        html = render_markdown(f"![追蹤]({remote})")
        assert "<img" not in html and "evil" not in html and "追蹤" in html, remote  # the alt text stays


@pytest.mark.parametrize(
    ("url", "same"),
    [
        ("/static/x.png", True),
        ("/a/b?c=d", True),
        ("//evil.example/x", False),
        ("/\\evil.example/x", False),
        ("https://evil.example/x", False),
        ("data:image/png;base64,AAA", False),
        ("x.png", False),
        ("/a\nb", False),
        ("", False),
    ],
)
def test_same_origin_paths(url: str, same: bool) -> None:
    assert is_same_origin_path(url) is same


@pytest.mark.parametrize(("name", "output"), HOSTILE_OUTPUTS, ids=[n for n, _ in HOSTILE_OUTPUTS])
def test_hostile_output_renders_to_inert_html(name: str, output: str) -> None:
    html = render_markdown(output)
    for tag, attrs in elements(html):
        assert tag in ALLOWED_TAGS, (tag, html)
        for attr, value in attrs.items():
            allowed = ALLOWED_ATTRIBUTES.get(tag, frozenset()) | ({"rel", "target"} if tag == "a" else set())
            assert attr in allowed, (tag, attr, html)
            if attr == "href":
                assert value is not None and re.match(r"^(https?|mailto):", value), html
            if attr == "src":
                assert value is not None and is_same_origin_path(value), html
    # nothing that reaches another host except a link, which the user must click
    for tag, attrs in elements(html):
        if tag != "a":
            assert not any(EVIL in (v or "") for v in attrs.values()), html
