"""The dashboard's pages in Chromium, under the app's Content-Security-Policy: the gate for visitors who
are not administrators, then turns, a timeline, charts, the knowledge base (upload with progress,
retrieval test), settings (a refused value, a change and its audit row) and API keys, with screenshots."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import BrowserContext, Page, expect

from tests.conftest import LiveServer, parse_sse
from tests.e2e.conftest import screenshot
from tests.e2e.test_topk_dashboard import browser_login, watch_console
from tests.fakes.fake_llm import Call, FakeLLM, text, tool_calls
from tests.integration.test_admin_api import ADMIN, USER, admin_client, make_user

HOSTILE = "<b>怎麼談薪水</b><img src=x>"  # a question the lexical stage routes to the simple career path
HOSTILE_ANSWER = '<img src=x onerror="document.title=1">先探底，再錨定。'


def test_visitors_who_are_not_admins_are_told_so(
    live_server: Callable[..., LiveServer], context: BrowserContext, page: Page
) -> None:
    server = live_server()
    make_user(server, USER)
    problems = watch_console(page)
    page.goto(f"{server.url}/admin")
    expect(page.locator('[data-test="denied"]')).to_contain_text("You are not logged in.")
    expect(page.locator('[data-test="denied"] a')).to_have_attribute("href", "/")
    expect(page.locator("#app")).to_be_hidden()
    browser_login(context, server, USER)
    page.reload()
    expect(page.locator('[data-test="denied"]')).to_contain_text(
        f"This account ({USER}) is not an administrator."
    )
    expect(page.locator("#app")).to_be_hidden()
    # the anonymous visit's /api/auth/me answered 401, which the console reports; nothing else
    assert all("401" in p for p in problems), problems


def test_dashboard_pages(
    fake_llm: FakeLLM,
    live_server: Callable[..., LiveServer],
    context: BrowserContext,
    page: Page,
    tmp_path: Path,
) -> None:
    server = live_server()
    with admin_client(server) as c:
        c.put("/api/admin/assistants/summer/settings/use_full_retrieval_range", json={"value": True})
        fake_llm.script(
            tool_calls(Call("searchKnowledge", {"query": "薪水談判 技巧", "top_k": 5})),
            text(HOSTILE_ANSWER),
            tool_calls(Call("searchKnowledge", {"query": "面試 準備"})),
            text("準備三個故事。"),
            text("穿整齊就好。"),
            text("你好！我是 Summer。"),
        )
        done = []
        for message in (HOSTILE, "面試怎麼準備", "面試要穿什麼？", "你好"):
            r = c.post("/api/chat", json={"message": message})
            done.append(next(d for n, d in parse_sse(r.text) if n == "done"))
        # one turn while the index is down (a degradation for the chart), then loaded again
        server.services.kb.mark_failed("RuntimeError: test: the index is gone")
        fake_llm.script(text("先整理作品集。"))
        r = c.post("/api/chat", json={"message": "轉職前要準備什麼？"})
        assert [d["reason"] for n, d in parse_sse(r.text) if n == "degraded"] == ["knowledge_unavailable"]
        assert c.post("/api/admin/knowledge/reindex").status_code == 200
        c.post(f"/api/messages/{done[0]['message_id']}/feedback", json={"rating": "up"})
        c.post(f"/api/messages/{done[2]['message_id']}/feedback", json={"rating": "down"})
    browser_login(context, server, ADMIN)
    problems = watch_console(page)
    page.on("dialog", lambda d: d.accept())

    # --- turns: model and user text is text, never markup ---------------------------------------
    page.goto(f"{server.url}/admin")
    rows = page.locator("#turns-table tbody tr")
    expect(rows).to_have_count(5)
    expect(page.locator('[data-test="turn-count"]')).to_have_text("5 turns · 1–5")
    hostile_row = rows.filter(has_text="<b>怎麼談薪水</b>")
    expect(hostile_row).to_have_count(1)
    expect(page.locator("#turns-table img, #turns-table b")).to_have_count(0)
    expect(hostile_row).to_contain_text("searchKnowledge top_k 12 (asked 5)")
    page.select_option("#turn-filters select[name=intent]", "greeting")
    page.click("#turn-filters button[type=submit]")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("你好")
    page.select_option("#turn-filters select[name=intent]", "")
    page.click("#turn-filters button[type=submit]")
    expect(rows).to_have_count(5)
    screenshot(page, "admin-turns")
    hostile_row.click()
    expect(page).to_have_url(f"{server.url}/admin#turn/{done[0]['trace_id']}")
    expect(page.locator('[data-test="question"]')).to_have_text(HOSTILE)
    expect(page.locator('[data-test="effective-top_k"]')).to_have_text("12")
    # the routing record's layer-2 stages: the lexical stage was sure of this one, so it is the only row
    stages = page.locator('[data-test="route-stages"] tbody tr')
    expect(stages).to_have_count(1)
    expect(stages.first).to_have_attribute("data-stage", "lexical")
    expect(stages.first).to_contain_text("career")
    expect(stages.first.locator("td").nth(6)).to_have_text("sure")  # the verdict column
    expect(page.locator("#view-turn .answer")).to_have_text(HOSTILE_ANSWER)
    expect(page.locator("#view-turn img")).to_have_count(0)
    assert page.title() == "Admin · CareerWise"  # the onerror never ran

    # --- charts ------------------------------------------------------------------------------------
    page.click("#tabs a[href='#charts']")
    cards = page.locator("#charts-out .card")
    expect(cards).to_have_count(6)
    expect(page.locator('[data-test="stats-summary"]')).to_contain_text("5 turns")
    tool_rate = page.locator('.card[data-chart="Tool-call rate"] [data-test="bar"]')
    expect(tool_rate).to_contain_text("40.0% (2 of 5; 2 calls)")
    override = page.locator('.card[data-chart="top_k override rate"] [data-test="bar"]')
    # the second call gave no top_k: the default applied, then the override; not counted as overriding
    expect(override).to_contain_text("50.0% (1 of 2)")
    expect(page.locator('.card[data-chart="top_k override rate"] .note')).to_contain_text("1 call(s)")
    layers = page.locator('.card[data-chart="Messages per routing layer"] [data-test="bar"]')
    expect(layers.filter(has_text="rules")).to_contain_text("20.0% (1)")
    feedback = page.locator('.card[data-chart="Feedback"] [data-test="bar"]')
    expect(feedback.nth(0)).to_contain_text("1")
    expect(feedback.nth(1)).to_contain_text("1")
    today = page.locator('.card[data-chart="Degradations per day"] [data-test="day"]').last
    expect(today).to_have_attribute("data-total", "1")
    screenshot(page, "admin-charts")

    # --- knowledge base: upload with progress, retrieval test ------------------------------------
    page.click("#tabs a[href='#knowledge']")
    expect(page.locator("#documents tbody tr")).to_have_count(33)
    doc = tmp_path / "remote-work-rituals.md"
    doc.write_text(
        "# 遠距團隊的儀式感\n\n## 週五展示\n每週五下午的十五分鐘展示，讓遠距團隊看見彼此的進度。\n",
        encoding="utf-8",
    )
    page.set_input_files("#view-knowledge input[type=file]", str(doc))
    page.click("#view-knowledge form button[type=submit]")
    expect(page.locator('[data-test="upload-result"]')).to_contain_text("added 1")
    expect(page.locator("#upload-progress")).to_have_js_property("value", 100)
    expect(page.locator("#documents tbody tr")).to_have_count(34)
    expect(page.locator('#documents tr[data-doc="remote-work-rituals"]')).to_contain_text("遠距團隊的儀式感")
    page.fill("#retrieval-test input[name=query]", "薪水談判 技巧")
    page.fill("#retrieval-test input[name=top_k]", "5")
    page.click("#retrieval-test button[type=submit]")
    record = page.locator("#topk-record")
    expect(record.locator('[data-test="effective"]')).to_contain_text('"top_k":12')
    expect(record.locator('[data-test="requested"]')).to_contain_text('"top_k":5')
    expect(record.locator('[data-test="reason"]')).to_have_text(
        "use_full_retrieval_range: configured_top_k=12 replaces 5"
    )
    expect(page.locator('#ranked [data-test="chunk"]')).to_have_count(12)
    page.click("#documents-section > summary")  # folded, so the screenshot shows the retrieval test
    expect(page.locator("#documents")).to_be_hidden()
    screenshot(page, "admin-knowledge")
    page.click("#documents-section > summary")
    page.locator('#documents tr[data-doc="remote-work-rituals"] [data-test="delete"]').click()
    expect(page.locator("#documents tbody tr")).to_have_count(33)

    # --- settings: a refused value is explained; a change is audited with the admin's email -------
    page.click("#tabs a[href='#settings']")
    row = page.locator('#settings-table tr[data-key="configured_top_k"]')
    row.locator("input").fill("0")
    row.locator('[data-test="save"]').click()
    expect(row.locator('[data-test="setting-error"]')).not_to_be_empty()
    row.locator("input").fill("9")
    row.locator('[data-test="save"]').click()
    expect(page.locator('#settings-table tr[data-key="configured_top_k"] input')).to_have_value("9")
    expect(page.locator('#settings-table tr[data-key="configured_top_k"] td.source-database')).to_have_text(
        "database"
    )
    audit = page.locator('#audit [data-test="audit-row"]')
    expect(audit).to_have_count(2)
    expect(audit.first).to_contain_text(ADMIN)
    expect(audit.first).to_contain_text("configured_top_k")
    screenshot(page, "admin-settings")

    # --- API keys: shown once, then revoked -------------------------------------------------------
    page.click("#tabs a[href='#keys']")
    page.fill("#view-keys input[name=name]", "weekly report")
    page.click("#view-keys button[type=submit]")
    token = page.locator('[data-test="token"]')
    expect(token).to_have_text(re.compile(r"^cw_[\w-]{40,}$"))
    expect(page.locator("#keys tbody tr")).to_have_count(1)
    screenshot(page, "admin-keys")
    page.locator("#keys tbody tr button.danger").click()
    expect(page.locator("#keys tbody tr")).to_contain_text("revoked")
    assert problems == []


def test_assistants_page(live_server: Callable[..., LiveServer], context: BrowserContext, page: Page) -> None:
    """List, create (a bad id is explained), edit the persona, disable, and open one's settings."""
    server = live_server()
    make_user(server, ADMIN, admin=True)
    browser_login(context, server, ADMIN)
    problems = watch_console(page)
    page.goto(f"{server.url}/admin#assistants")
    rows = page.locator("#assistants tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Summer")
    expect(rows.first).to_contain_text("(built-in)")

    form = page.locator("#assistant-form")
    form.locator("input[name=id]").fill("Coach Li")  # refused by the browser's own check first
    form.locator("input[name=name]").fill("Li")
    form.locator('[data-test="save-assistant"]').click()
    expect(form.locator('[data-test="assistant-error"]')).to_contain_text("lower-case")
    form.locator("input[name=id]").fill("coach-li")
    form.locator("input[name=description]").fill("Resume reviews, short and direct")
    form.locator('input[name=domain][value="resume"]').check()
    form.locator("textarea[name=system_prompt]").fill(
        "You are Li, a resume reviewer. Answer in two sentences."
    )
    form.locator('[data-test="save-assistant"]').click()
    expect(rows).to_have_count(2)
    li = page.locator('#assistants tr[data-assistant="coach-li"]')
    expect(li).to_contain_text("resume")
    expect(li).to_contain_text("You are Li")
    expect(li).to_contain_text(ADMIN)

    # a second one with the same id: the server's 409 is shown
    form = page.locator("#assistant-form")
    form.locator("input[name=id]").fill("coach-li")
    form.locator("input[name=name]").fill("Li again")
    form.locator('[data-test="save-assistant"]').click()
    expect(form.locator('[data-test="assistant-error"]')).to_contain_text("already exists")

    li.locator('[data-test="edit"]').click()
    form = page.locator("#assistant-form")
    expect(form.locator("input[name=id]")).to_have_attribute("readonly", "")
    form.locator("input[name=name]").fill("Li Wen")
    form.locator('[data-test="save-assistant"]').click()
    expect(li).to_contain_text("Li Wen")
    li.locator("button.danger").click()  # disable
    expect(li.locator('[data-test="state"]')).to_have_text("disabled")
    expect(page.locator('#assistants tr[data-assistant="summer"] button.danger')).to_be_disabled()
    screenshot(page, "admin-assistants")

    li.locator('[data-test="settings"]').click()
    expect(page.locator("#assistant")).to_have_value("coach-li")
    expect(page.locator('#settings-table tr[data-key="llm_provider"] select')).to_have_value("primary")
    page.locator('#settings-table tr[data-key="llm_model"] input').fill("bigger-model")
    page.locator('#settings-table tr[data-key="llm_model"] [data-test="save"]').click()
    expect(page.locator('#settings-table tr[data-key="llm_model"] td.source-database')).to_have_text(
        "database"
    )
    audit = page.locator('#audit [data-test="audit-row"]')
    expect(audit.first).to_contain_text("llm_model")
    expect(audit).to_have_count(4)  # created, name, enabled, llm_model: every change of Li's
    # the taken id's 409, which the console reports; nothing else
    assert len(problems) == 1 and "409 (Conflict)" in problems[0], problems
