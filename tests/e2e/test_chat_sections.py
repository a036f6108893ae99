"""The chat page shows a deep report section by section (decision 0016): in real Chromium, against a real
server and the scripted provider running the compact design, whose later facets answer after a pause."""

from __future__ import annotations

import threading
from collections.abc import Callable

from playwright.sync_api import Page, expect

from tests.conftest import LiveServer
from tests.e2e.chat_page import LAST_ANSWER, Watch, ask, open_chat, wait_finished
from tests.fakes.fake_llm import FakeLLM
from tests.integration.test_deep_answers import AGENTS, COMPLEX, as_json, responder


def test_the_first_section_shows_before_the_report_and_the_report_replaces_the_sections_once(
    page: Page, fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    # the three facets show Summer's sentences before any call (practice's English article as she wrote
    # it); growth's call is held until the test has seen them, so the page holds them (and the thinking
    # indicator) while the rest of the report is still being written
    gate = threading.Event()
    growth = as_json(AGENTS["growth"])
    growth.gate = gate
    fake_llm.responder = responder({"growth": growth})
    server = live_server(deep_design="compact", deep_step_timeout=120.0, deep_turn_timeout=240.0)
    watch = Watch(server.url).attach(page)
    open_chat(page, server.url)
    ask(page, COMPLEX)  # routed by the real cascade: a decision question is complex

    answer = page.locator(LAST_ANSWER)
    sections = answer.locator(".report-section")
    first = sections.first
    expect(first.locator("h3")).to_have_text("市場分析", timeout=60_000)
    expect(first.locator(".section-body.streaming")).to_contain_text("- ")
    # the report has not arrived: the indicator is still up, the input locked, the three facets only
    expect(answer.locator(".thinking")).to_be_visible()
    expect(page.locator("#message")).to_be_disabled()
    expect(sections).to_have_count(3)
    expect(sections.locator("h3")).to_have_text(["市場分析", "成長建議", "實戰準備"])
    expect(answer.locator(".report-title")).to_have_count(0)
    gate.set()

    wait_finished(page, 1)
    expect(answer.locator(".thinking")).to_be_hidden()
    expect(sections).to_have_count(4)  # replaced by the report, not added to it
    expect(sections.locator("h3")).to_have_text(["市場分析", "成長建議", "實戰準備", "行動建議"])
    expect(answer.locator(".report-title")).to_have_count(1)
    expect(sections.first.locator(".section-body.rendered li")).not_to_have_count(0)
    assert watch.dialogs == [] and watch.foreign == []
