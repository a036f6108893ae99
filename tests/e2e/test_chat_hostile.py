"""Hostile model output in real Chromium: no dialog, no request to another origin, no markup while
streaming, nothing active after the swap to the server's HTML.

The page is tested with the Content-Security-Policy bypassed, so what is proven is the page's own
discipline (text while streaming, sanitized HTML after); a control shows the same browser would have
run the dialog and made the request if the markup had reached the DOM. A second test shows the policy
alone blocks that markup when it is in force.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Browser, BrowserContext, Page

from tests.conftest import LiveServer
from tests.e2e.chat_page import Watch, ask, open_chat, wait_finished
from tests.fakes.fake_llm import FakeLLM, text
from tests.hostile_outputs import EVIL, HOSTILE_OUTPUTS

# records any element that appears inside streamed (text-only) content
RECORD_STREAMED_ELEMENTS = """
window.__streamedElements = [];
new MutationObserver((records) => {
  for (const r of records) {
    for (const n of r.addedNodes) {
      if (n.nodeType === 1 && n.parentElement && n.parentElement.closest('.streaming')) {
        window.__streamedElements.push(n.outerHTML);
      }
    }
  }
}).observe(document, { subtree: true, childList: true });
"""

ACTIVE_MARKUP = f"""() => {{
  const box = document.createElement('div');
  box.innerHTML = '<img src="http://{EVIL}/control.gif"><img src="x" onerror="alert(\\'control\\')">';
  document.body.append(box);
}}"""

INSPECT_DOM = """() => {
  const log = document.getElementById('log');
  const bad = [];
  for (const node of document.querySelectorAll('*')) {
    for (const attr of node.attributes) {
      if (attr.name.startsWith('on')) bad.push(`${node.tagName} ${attr.name}`);
      if (attr.name === 'style') bad.push(`${node.tagName} style`);
    }
  }
  for (const tag of ['iframe', 'object', 'embed', 'form', 'base', 'meta', 'link', 'style', 'svg', 'video',
                     'audio', 'input', 'math', 'details', 'script']) {
    for (const node of log.querySelectorAll(tag)) bad.push(`${tag} in the answers`);
  }
  for (const img of log.querySelectorAll('img')) {
    if (new URL(img.src, location.href).origin !== location.origin) bad.push(`img ${img.src}`);
  }
  for (const a of log.querySelectorAll('a[href]')) {
    const scheme = new URL(a.href, location.href).protocol;
    if (!['http:', 'https:', 'mailto:'].includes(scheme)) bad.push(`a ${a.href}`);
    if (a.rel !== 'noopener noreferrer nofollow') bad.push(`a rel ${a.rel}`);
  }
  return bad;
}"""


@pytest.fixture
def unprotected(browser: Browser) -> Iterator[BrowserContext]:
    """A context that ignores the page's Content-Security-Policy."""
    context = browser.new_context(viewport={"width": 1280, "height": 860}, locale="zh-TW", bypass_csp=True)
    yield context
    context.close()


def test_hostile_outputs_open_no_dialog_and_call_no_other_host(
    unprotected: BrowserContext, fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    assert len(HOSTILE_OUTPUTS) >= 30
    fake_llm.script(*[text(output, chunk_size=5, delay=0.01) for _, output in HOSTILE_OUTPUTS])
    server = live_server()
    page: Page = unprotected.new_page()
    page.set_default_timeout(30_000)
    page.add_init_script(RECORD_STREAMED_ELEMENTS)
    watch = Watch(server.url).attach(page)
    open_chat(page, server.url)

    # the control: in this context markup that reaches the DOM does run and does call out
    with page.expect_event("dialog"), page.expect_request(lambda r: EVIL in r.url):
        page.evaluate(ACTIVE_MARKUP)
    assert any(EVIL in u for u in watch.foreign) and watch.dialogs == ["alert: control"]
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    watch.requests.clear()
    watch.dialogs.clear()

    for n, (name, _output) in enumerate(HOSTILE_OUTPUTS, 1):
        ask(page, "面試要怎麼準備")
        wait_finished(page, n)
        answer = page.locator(".msg.assistant").nth(n - 1)
        assert answer.get_attribute("data-status") == "ok", name
        assert watch.dialogs == [], (name, watch.dialogs)
        assert watch.foreign == [], (name, watch.foreign)
    streamed_elements = page.evaluate("() => window.__streamedElements")
    assert streamed_elements == []  # while streaming, model output was only ever text
    assert page.evaluate(INSPECT_DOM) == []
    # the answers are there, as text: the visible words survived, the markup did not
    log_text = page.locator("#log").inner_text()
    assert "先說結論。" in log_text and "點我看薪資表" in log_text and "<script>" in log_text
    assert len(fake_llm.requests) == len(HOSTILE_OUTPUTS)
    assert watch.dialogs == [] and watch.foreign == []


def test_the_content_security_policy_alone_blocks_injected_markup(
    page: Page, live_server: Callable[..., LiveServer]
) -> None:
    server = live_server()
    watch = Watch(server.url).attach(page)
    open_chat(page, server.url)
    # the browser reports both refusals on the console: the image from another host, the inline handler
    with (
        page.expect_console_message(lambda m: "img-src" in m.text and EVIL in m.text),
        page.expect_console_message(lambda m: "script-src" in m.text),
    ):
        page.evaluate(ACTIVE_MARKUP)
    # Chromium reports the image as a request that failed with "csp": it never left the browser
    assert watch.foreign == [f"http://{EVIL}/control.gif"] and watch.failures[watch.foreign[0]] == "csp"
    assert watch.sent_foreign == [] and watch.dialogs == []
