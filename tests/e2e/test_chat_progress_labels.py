"""The chat page names the facets of a deep answer in its own language (issue 24: 「開始分析：market」 reached
the page): in real Chromium, against a real server and the scripted provider, in Chinese and after the
English switch."""

from __future__ import annotations

from collections.abc import Callable

from playwright.sync_api import Page

from tests.conftest import LiveServer
from tests.e2e.chat_page import LAST_ANSWER, Watch, ask, open_chat, wait_finished
from tests.fakes.fake_llm import FakeLLM
from tests.integration.test_deep_answers import FAST, responder

FACET_KEYS = ("market", "growth", "practice")


def test_the_progress_lines_name_each_facet_in_the_pages_language(
    page: Page, fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    fake_llm.responder = responder({})
    server = live_server(**FAST)
    watch = Watch(server.url).attach(page)
    open_chat(page, server.url)
    ask(page, "該不該離職？")  # routed by the real cascade: a decision question is complex

    steps = page.locator(LAST_ANSWER).locator(".progress li")
    wait_finished(page, 1)
    lines = steps.all_text_contents()
    assert "開始分析：市場分析" in lines and "分析完成：市場分析（3 項發現）" in lines, lines
    assert not any(key in line for line in lines for key in FACET_KEYS), lines

    page.click("#lang")  # the English switch relabels the lines already shown
    lines = steps.all_text_contents()
    assert "Analysis started: market analysis" in lines, lines
    assert not any(line.endswith(f": {key}") or f"{key}:" in line for line in lines for key in FACET_KEYS)
    assert watch.dialogs == [] and watch.foreign == []
