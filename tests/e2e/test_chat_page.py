"""The chat page in real Chromium against a real server and the scripted fake provider: accounts,
streaming, the knowledge-base line with the effective top_k, sources, the thinking indicator and the
report, stop, notices, feedback, the language switch and the phone layout."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
from playwright.sync_api import Browser, Page, expect

from tests.conftest import LiveServer
from tests.e2e.chat_page import LAST_ANSWER, Watch, ask, open_chat, wait_finished
from tests.e2e.conftest import screenshot
from tests.fakes.fake_llm import Call, FakeLLM, error, text, tool_calls
from tests.fixtures.resume_files import resume_docx
from tests.integration.test_deep_answers import FAST, responder
from tests.integration.test_resumes import responder as resume_responder

PASSWORD = "correct horse battery"
ANSWER = (
    "談薪水的關鍵是**先探後錨**：先弄清楚對方的預算範圍，再用市場行情定出你的數字，"
    "最後拿福利和彈性來交換。記得把每個要求都連到你能帶來的成果上。"
)


def anon_conversation_ids(page: Page) -> list[str]:
    ids: list[str] = page.evaluate(
        "JSON.parse(sessionStorage.getItem('cw.anon.conversations') || '[]').map(c => c.id)"
    )
    return ids


def test_sign_up_log_out_log_in_and_the_conversation_list(
    page: Page, fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    fake_llm.default = text("好的，我們一步一步來。")
    server = live_server()
    watch = Watch(server.url).attach(page)
    open_chat(page, server.url)
    expect(page.locator("#anon-note")).to_be_visible()

    page.click("#login-open")
    page.click("#auth-switch")  # to sign-up
    page.fill("#auth-email", "mei@example.com")
    page.fill("#auth-password", PASSWORD)
    page.fill("#auth-name", "小美")
    screenshot(page, "chat-login")
    page.click("#auth-submit")
    expect(page.locator("#who")).to_have_text("小美")
    expect(page.locator("#logout")).to_be_visible()
    expect(page.locator("#anon-note")).to_be_hidden()

    ask(page, "面試要怎麼準備")
    wait_finished(page, 1)
    ask(page, "怎麼談薪水？")
    wait_finished(page, 2)
    conversations = page.locator("#conversations .conv")
    expect(conversations).to_have_count(1)
    expect(conversations.first).to_contain_text("面試要怎麼準備")
    page.click("#new-chat")
    ask(page, "履歷要寫幾頁")
    wait_finished(page, 1)
    expect(conversations).to_have_count(2)
    expect(conversations.first).to_contain_text("履歷要寫幾頁")  # newest first

    page.click("#logout")
    expect(page.locator("#login-open")).to_be_visible()
    expect(page.locator("#conversations .conv")).to_have_count(0)

    page.click("#login-open")
    page.fill("#auth-email", "mei@example.com")
    page.fill("#auth-password", "wrong password")
    page.click("#auth-submit")
    expect(page.locator("#auth-error")).to_be_visible()
    page.fill("#auth-password", PASSWORD)
    page.click("#auth-submit")
    expect(page.locator("#who")).to_have_text("小美")
    expect(conversations).to_have_count(2)

    # open the older conversation: its four messages come back from the server, rendered
    conversations.nth(1).locator(".open").click()
    expect(page.locator(".msg")).to_have_count(4)
    expect(conversations.nth(1)).to_have_class("conv current")
    expect(page.locator(".msg.assistant .answer.rendered p").first).to_have_text("好的，我們一步一步來。")
    # delete takes two clicks (no browser dialog)
    conversations.nth(1).locator(".delete").click()
    expect(conversations).to_have_count(2)
    conversations.nth(1).locator(".delete").click()
    expect(conversations).to_have_count(1)
    expect(page.locator(".msg")).to_have_count(0)
    assert watch.dialogs == [] and watch.foreign == []


def test_a_simple_question_streams_with_the_search_line_and_its_sources(
    page: Page, fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    fake_llm.script(
        tool_calls(Call("searchKnowledge", {"query": "薪水談判技巧", "top_k": 3})),
        text(ANSWER, chunk_size=2, delay=0.08),
    )
    # the administrator's full-retrieval setting: the model asks for top_k 3, the search runs with 5
    server = live_server(use_full_retrieval_range=True, configured_top_k=5)
    watch = Watch(server.url).attach(page)
    open_chat(page, server.url)
    ask(page, "怎麼談薪水？")

    answer = page.locator(LAST_ANSWER)
    expect(answer.locator(".search").first).to_have_text("查詢知識庫：薪水談判技巧（top_k 5）")
    # the text grows while the provider is still dripping chunks: sample it as it changes
    lengths: list[int] = []
    while len(lengths) < 6:
        handle = page.wait_for_function(
            """last => {
                const a = [...document.querySelectorAll('.msg.assistant')].pop();
                const body = a.querySelector('.answer');
                if (a.dataset.messageId) return -1;  // finished
                const n = body.textContent.length;
                return n > last ? n : false;
            }""",
            arg=lengths[-1] if lengths else 0,
        )
        n = handle.json_value()
        assert n != -1, f"the answer finished before it was seen growing: {lengths}"
        lengths.append(n)
        if len(lengths) == 3:
            expect(answer.locator(".sources .source").first).to_be_visible()
            screenshot(page, "chat-streaming")
    assert lengths == sorted(lengths) and len(set(lengths)) == len(lengths)
    assert lengths[-1] < len(ANSWER)
    expect(answer.locator(".answer.streaming")).to_have_count(1)  # still text, not yet HTML
    wait_finished(page, 1)

    # finished: the server's HTML replaced the streamed text (the Markdown bold is now <strong>)
    expect(answer.locator(".answer.rendered strong")).to_have_text("先探後錨")
    expect(answer.locator(".answer")).to_contain_text("記得把每個要求都連到你能帶來的成果上。")
    sources = answer.locator(".sources .source")
    assert 1 <= sources.count() <= 5
    expect(answer.locator(".search-result")).to_have_text("找到 5 段資料")

    # a source opens its passage from the knowledge base
    title = sources.first.text_content() or ""
    sources.first.click()
    dialog = page.locator("#source")
    expect(dialog).to_be_visible()
    expect(dialog.locator(".doc-title")).to_have_text(title.split(" › ")[0])
    assert len(dialog.locator(".passage").first.text_content() or "") > 20
    page.click("#source-close")

    # thumbs up on the finished answer is stored with the answer
    answer.locator(".rate-up").click()
    expect(answer.locator(".rate-up")).to_have_attribute("aria-pressed", "true")
    conversation = anon_conversation_ids(page)[0]
    with httpx.Client(base_url=server.url) as c:
        stored = c.get(f"/api/conversations/{conversation}").json()["messages"][-1]
    assert stored["rating"] == "up" and stored["searches"] == [{"query": "薪水談判技巧", "top_k": 5}]
    assert watch.dialogs == [] and watch.foreign == []


def test_a_complex_question_locks_the_input_behind_the_indicator_then_shows_the_report(
    page: Page, fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    # the three agents answer after a pause, so the page sits in its thinking state for a while
    fake_llm.responder = responder({}, agent_delay=1.5)
    server = live_server(**FAST)
    watch = Watch(server.url).attach(page)
    open_chat(page, server.url)
    ask(page, "該不該離職？")  # routed by the real cascade: a decision question is complex

    answer = page.locator(LAST_ANSWER)
    thinking = answer.locator(".thinking")
    expect(thinking).to_be_visible()
    expect(thinking.locator(".thinking-text")).to_have_text("Summer 正在思考⋯")
    expect(page.locator("#message")).to_be_disabled()
    expect(page.locator("#send")).to_be_hidden()
    expect(page.locator("#stop")).to_be_visible()
    expect(thinking.locator(".progress li").first).to_be_visible()  # the progress events
    screenshot(page, "chat-thinking")

    wait_finished(page, 1)
    expect(thinking).to_be_hidden()
    expect(page.locator("#message")).to_be_enabled()
    sections = answer.locator(".report-section")
    expect(sections).to_have_count(4)
    expect(sections.locator("h3")).to_have_text(["市場分析", "成長建議", "實戰準備", "行動建議"])
    expect(answer.locator(".badge")).to_have_text(["風險：中", "風險：低", "風險：高"])
    expect(sections.first.locator(".section-body.rendered")).to_contain_text("29,500")
    citation = sections.first.locator(".citations .source").first
    expect(citation).to_be_visible()
    answer.evaluate("a => a.scrollIntoView()")  # the report's top in the picture
    screenshot(page, "chat-report")
    citation.click()
    expect(page.locator("#source .passage").first).to_be_visible()
    page.click("#source-close")
    assert watch.dialogs == [] and watch.foreign == []


def test_stop_cancels_the_answer_and_it_is_stored_as_cancelled(
    page: Page, fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    fake_llm.script(text("這是一個很長的回答，" * 40, chunk_size=2, delay=0.15))
    server = live_server()
    open_chat(page, server.url)
    ask(page, "面試要怎麼準備")
    answer = page.locator(LAST_ANSWER)
    page.wait_for_function(
        "() => ([...document.querySelectorAll('.msg.assistant .answer')].pop() || {}).textContent?.length > 6"
    )
    page.click("#stop")
    expect(answer.locator(".notice.cancelled")).to_have_text("已停止")
    expect(page.locator("#send")).to_be_visible()
    expect(page.locator("#message")).to_be_enabled()
    shown = answer.locator(".answer").text_content() or ""
    assert 0 < len(shown) < len("這是一個很長的回答，" * 40)

    conversation = anon_conversation_ids(page)[0]
    with httpx.Client(base_url=server.url) as c:
        deadline = time.monotonic() + 15
        status = "pending"
        while status == "pending" and time.monotonic() < deadline:
            status = c.get(f"/api/conversations/{conversation}").json()["messages"][-1]["status"]
            time.sleep(0.1)
    assert status == "cancelled"
    assert fake_llm.closed_early == 1  # the provider's stream was cut too

    # the conversation goes on after a stop
    fake_llm.script(text("好，繼續。"))
    ask(page, "繼續")
    wait_finished(page, 1)
    expect(page.locator(LAST_ANSWER).locator(".answer")).to_have_text("好，繼續。")


def test_errors_and_degraded_answers_show_one_line(
    page: Page, fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    server = live_server()
    open_chat(page, server.url)
    fake_llm.script(error(500), error(500))  # the provider fails, and fails again on the retry
    ask(page, "面試要怎麼準備")
    answer = page.locator(LAST_ANSWER)
    expect(answer.locator(".notice.error")).to_have_count(1)
    expect(page.locator("#send")).to_be_visible()
    notice = answer.locator(".notice.error").text_content() or ""
    assert notice and "\n" not in notice.strip()

    # a provider that refuses tools: the answer comes without the knowledge base, and says so
    fake_llm.script(
        error(400, {"error": {"message": "tools are not supported by this model"}}), text("直接回答。")
    )
    ask(page, "怎麼談薪水？")
    wait_finished(page, 2)
    expect(page.locator(LAST_ANSWER).locator(".notice.degraded")).to_have_count(1)
    expect(page.locator(LAST_ANSWER).locator(".answer")).to_have_text("直接回答。")


def test_the_english_switch_changes_every_label_and_is_remembered(
    page: Page, fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    fake_llm.script(
        tool_calls(Call("searchKnowledge", {"query": "salary negotiation"})), text("Anchor high.")
    )
    server = live_server()
    open_chat(page, server.url)
    expect(page.locator("#send")).to_have_text("送出")
    page.click("#lang")
    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(page.locator("#send")).to_have_text("Send")
    expect(page.locator("#login-open")).to_have_text("Log in")
    assert "negotiate" in (page.get_attribute("#message", "placeholder") or "")
    ask(page, "How do I negotiate salary?")
    wait_finished(page, 1)
    expect(page.locator(LAST_ANSWER).locator(".search")).to_have_text(
        "Searching the knowledge base: salary negotiation (top_k 3)"
    )
    page.reload()
    page.wait_for_selector("body[data-ready=true]")
    expect(page.locator("#send")).to_have_text("Send")
    page.click("#lang")
    expect(page.locator("#send")).to_have_text("送出")


def test_the_page_works_on_a_phone_sized_screen(
    browser: Browser, fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    interview = "面試前先做三件事：**讀懂職缺**、用 STAR+ 準備 6 個故事、把自我介紹練成 30 秒、1 分鐘、2 分鐘三個版本。"
    fake_llm.script(tool_calls(Call("searchKnowledge", {"query": "面試準備"})), text(interview, chunk_size=4))
    server = live_server()
    context = browser.new_context(viewport={"width": 390, "height": 844}, locale="zh-TW", has_touch=True)
    try:
        page = context.new_page()
        watch = Watch(server.url).attach(page)
        open_chat(page, server.url)
        ask(page, "面試要怎麼準備")
        wait_finished(page, 1)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"the page scrolls sideways: {width} px wide"
        for selector in ("#message", "#send", "#menu", "#login-open", LAST_ANSWER):
            box = page.locator(selector).bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, selector
            assert box["y"] + min(box["height"], 10) <= 844, selector
        sidebar = page.locator("#sidebar")
        assert (sidebar.bounding_box() or {"x": 0.0})["x"] < 0  # the list is a drawer, closed
        screenshot(page, "chat-phone")
        page.click("#menu")
        expect(page.locator("#new-chat")).to_be_in_viewport()
        page.click("#new-chat")
        page.wait_for_function("() => document.getElementById('sidebar').getBoundingClientRect().right <= 0")
        assert watch.dialogs == [] and watch.foreign == []
    finally:
        context.close()


def test_a_resume_upload_is_reviewed_in_the_conversation(
    page: Page, fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    fake_llm.responder = resume_responder()
    server = live_server(deep_step_timeout=5.0, deep_turn_timeout=20.0)
    watch = Watch(server.url).attach(page)
    open_chat(page, server.url)
    page.set_input_files(
        "#resume",
        files=[{"name": "resume.docx", "mimeType": "application/octet-stream", "buffer": resume_docx()}],
    )
    answer = page.locator(LAST_ANSWER)
    expect(page.locator(".msg.user").last).to_have_text("你正在上傳履歷：resume.docx")
    wait_finished(page, 1)
    expect(answer.locator(".report-section h3").first).to_have_text("總評")
    expect(page.locator("#message")).to_be_enabled()
    assert any("/api/resumes?stream=1" in u for u in watch.requests)
    conversation = anon_conversation_ids(page)[0]
    with httpx.Client(base_url=server.url) as c:
        stored = c.get(f"/api/conversations/{conversation}").json()["messages"]
    assert stored[-1]["report"]["sections"][0]["heading"] == "總評"
    assert watch.dialogs == [] and watch.foreign == []
