"""Seed 004 end to end: four layers, one value. With ``use_full_retrieval_range`` on and
``configured_top_k=12`` while the model asks for ``top_k=5``, the SSE ``tool_call`` event, the stored
trace row, the dashboard's API and the dashboard page in Chromium all show 12 (and 5 requested, with the
reason), and the tool returned 12 chunks; with the override off, all show 5. A retriever that fails to
load is not silent: /readyz says 503, the dashboard shows a failed state, and it is counted."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from careerwise.cli.admin import load_trace
from careerwise.knowledge.embeddings import Vector
from careerwise.knowledge.index import Hit, IndexedChunk
from careerwise.services import Services
from careerwise.store import Database
from tests.auth_helpers import PASSWORD
from tests.conftest import LiveServer, client, parse_sse
from tests.e2e.conftest import screenshot
from tests.fakes.fake_llm import Call, FakeLLM, text, tool_calls
from tests.integration.test_admin_api import ADMIN, admin_client, run_async


def browser_login(context: BrowserContext, server: LiveServer, email: str) -> None:
    """Log the browser in through the API (the chat page's own form is not under test here)."""
    r = context.request.post(f"{server.url}/api/auth/login", data={"email": email, "password": PASSWORD})
    assert r.status == 200, r.text()


def stored_trace(server: LiveServer, trace_id: str) -> dict[str, Any]:
    """The trace as stored: what `careerwise traces show --json` prints (a handle of this thread's own)."""

    async def run() -> dict[str, Any]:
        db = Database(server.services.db.url)
        try:
            data = await load_trace(db, trace_id)
            assert data is not None
            return data
        finally:
            await db.dispose()

    return run_async(run)


def watch_console(page: Page) -> list[str]:
    """Collects script errors and Content-Security-Policy violations; a test asserts there are none."""
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"pageerror: {exc}"))
    page.on("console", lambda msg: problems.append(msg.text) if msg.type == "error" else None)
    return problems


@pytest.mark.parametrize(("override", "expected"), [(True, 12), (False, 5)])
def test_four_layers_show_the_same_effective_top_k(
    override: bool,
    expected: int,
    fake_llm: FakeLLM,
    live_server: Callable[..., LiveServer],
    context: BrowserContext,
    page: Page,
) -> None:
    server = live_server()
    with admin_client(server) as c:
        r = c.put("/api/admin/assistants/summer/settings/use_full_retrieval_range", json={"value": override})
        assert r.status_code == 200
        assert (
            c.put("/api/admin/assistants/summer/settings/configured_top_k", json={"value": 12}).status_code
            == 200
        )
        fake_llm.script(
            tool_calls(Call("searchKnowledge", {"query": "薪水談判 技巧", "top_k": 5}, id="call_topk")),
            text("先探底，再錨定，最後交換條件。"),
        )
        r = c.post("/api/chat", json={"message": "怎麼談薪水？"})
        assert r.status_code == 200
        events = parse_sse(r.text)

        # layer 1: the SSE stream. One tool_call event, final from the start (no "5 then 12")
        calls = [d for n, d in events if n == "tool_call"]
        assert len(calls) == 1
        sse = calls[0]
        assert sse["requested_arguments"]["top_k"] == 5
        assert sse["effective_arguments"]["top_k"] == expected
        reason = sse["reason"]
        if override:
            assert reason == "use_full_retrieval_range: configured_top_k=12 replaces 5"
        else:
            assert reason == "as requested"
        result = next(d for n, d in events if n == "tool_result")
        assert result["returned"] == expected == len(result["sources"])
        assert fake_llm.requests[1]["messages"][-1]["content"].count("source=") == expected
        trace_id = next(d for n, d in events if n == "done")["trace_id"]

        # layer 2: the stored trace (tool_calls row and the stored event)
        stored = stored_trace(server, trace_id)
        (row,) = stored["tool_calls"]
        assert row["requested_arguments"]["top_k"] == 5 and row["effective_arguments"]["top_k"] == expected
        assert row["reason"] == reason and row["returned"] == expected
        stored_event = next(e for e in stored["events"] if e["type"] == "tool_call")
        assert stored_event["effective_arguments"] == sse["effective_arguments"]

        # layer 3: the dashboard's API
        timeline = c.get(f"/api/admin/turns/{trace_id}").json()
        (api_call,) = timeline["tool_calls"]
        assert api_call["effective_arguments"] == sse["effective_arguments"]
        assert api_call["requested_arguments"] == sse["requested_arguments"]
        assert api_call["reason"] == reason and api_call["result"]["returned"] == expected
        listed = c.get("/api/admin/turns", params={"path": "A"}).json()["items"]
        assert listed[0]["tool_calls"][0]["effective_arguments"]["top_k"] == expected

    # layer 4: the dashboard page in Chromium
    browser_login(context, server, ADMIN)
    problems = watch_console(page)
    page.goto(f"{server.url}/admin#turn/{trace_id}")
    row_el = page.locator('[data-test="tool-call"]')
    expect(row_el).to_have_count(1)
    expect(row_el.locator('[data-test="effective-top_k"]')).to_have_text(str(expected))
    expect(row_el.locator('[data-test="requested-top_k"]')).to_have_text("5")
    expect(row_el.locator('[data-test="reason"]')).to_have_text(reason)
    expect(row_el.locator('[data-test="returned"]')).to_have_text(str(expected))
    expect(row_el.locator('[data-test="effective"]')).to_contain_text(f'"top_k":{expected}')
    expect(page.locator('svg.timeline [data-test="span"]')).to_have_count(len(timeline["spans"]))
    if override:
        screenshot(page, "admin-timeline")
    page.goto(f"{server.url}/admin#turns")
    summary = f"searchKnowledge top_k {expected}" + (" (asked 5)" if override else "")
    expect(page.locator("#turns-table tbody tr").first).to_contain_text(summary)
    assert problems == []


class FailingReranker:
    """A retriever part that cannot start: its ``prepare`` (run while the index loads) raises, as the
    seed's retriever whose initialisation failed for 10% of conversations."""

    def prepare(self, chunks: Sequence[IndexedChunk]) -> None:
        raise RuntimeError("reranker model file is missing")

    name = "failing"

    def rerank(self, query: str, qvec: Vector, hits: Sequence[Hit]) -> list[Hit]:
        raise AssertionError("never reached: the index did not load")


@pytest.fixture
def broken_server(make_server_services: Callable[..., Services]) -> Iterator[LiveServer]:
    services = make_server_services()
    services.kb.reranker = FailingReranker()  # injected into the services, no module global touched
    server = LiveServer(services).start()
    yield server
    server.stop()


def test_a_broken_retriever_shows_on_readyz_and_on_the_dashboard_and_is_counted(
    fake_llm: FakeLLM, broken_server: LiveServer, context: BrowserContext, page: Page
) -> None:
    server = broken_server
    with client(server) as anon:
        ready = anon.get("/readyz")
        assert ready.status_code == 503
        knowledge = ready.json()["checks"]["knowledge"]
        assert knowledge["state"] == "failed" and "reranker model file is missing" in knowledge["error"]
        # the provider profile and the deep design it picks (the tests declare the fake's concurrency)
        llm = ready.json()["checks"]["llm"]
        assert llm["profile"]["concurrency"] == 3 and llm["deep_design"]["design"] == "full"
    with admin_client(server) as c:
        fake_llm.script(text("先整理你的作品集。"))
        events = parse_sse(c.post("/api/chat", json={"message": "轉職前要準備什麼？"}).text)
        degraded = [d for n, d in events if n == "degraded"]
        assert [d["reason"] for d in degraded] == ["knowledge_unavailable"]
        status = c.get("/api/admin/status").json()
        assert status["ok"] is False
        assert status["knowledge"]["state"] == "failed"
        assert "reranker model file is missing" in status["knowledge"]["error"]
        assert status["last_24h"]["knowledge_degraded_turns"] == 1
        assert status["retrieval_failures"]["unavailable"] == 1
        assert status["retrieval_failures"]["readiness"] >= 1  # the /readyz above
        assert status["llm"]["deep_design"] == "full" and status["llm"]["profile"]["source"] == "default"
        # a re-index tries again and says why it still fails
        r = c.post("/api/admin/knowledge/reindex")
        assert r.status_code == 503 and "reranker model file is missing" in r.json()["error"]["message"]

    browser_login(context, server, ADMIN)
    problems = watch_console(page)
    page.goto(f"{server.url}/admin#knowledge")
    health = page.locator("#health")
    expect(health).to_have_class("health bad")
    expect(page.locator('[data-test="knowledge-state"]')).to_have_text("Knowledge base: failed")
    expect(page.locator('[data-test="knowledge-error"]')).to_contain_text("reranker model file is missing")
    expect(page.locator('[data-test="retrieval-failures"]')).to_contain_text("1 without the knowledge base")
    expect(page.locator('[data-test="llm-profile"]')).to_contain_text("deep design full")
    expect(page.locator('[data-test="llm-profile"]')).to_contain_text("3 at a time")
    expect(page.locator('[data-test="kb-status"]')).to_contain_text("index failed")
    page.fill("#retrieval-test input[name=query]", "薪水談判")
    page.click("#retrieval-test button[type=submit]")
    expect(page.locator("#retrieval-out .error")).to_contain_text("reranker model file is missing")
    screenshot(page, "admin-knowledge-broken")
    page.goto(f"{server.url}/admin#turns")
    expect(page.locator("#turns-table tbody tr").first).to_contain_text("knowledge_unavailable")
    # the only console errors are the 503s the page asked for and showed
    assert all("503" in p for p in problems), problems
