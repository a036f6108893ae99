"""The chat page's API over a real server: conversations and their owners, stored messages with their
server-rendered HTML and what the trace knows (searches, sources, the report), the knowledge-base
passages behind a citation, and the security headers on every response."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

import httpx
from sqlalchemy import func, select

from careerwise.events import ReportEvent
from careerwise.reports import StoredReport, message_markdown
from careerwise.store import Database, Message, Trace
from tests.conftest import LiveServer, client, parse_sse
from tests.fakes.fake_llm import Call, FakeLLM, stall, text, tool_calls
from tests.integration.test_deep_answers import COMPLEX, FAST, FixedRouter, responder

PASSWORD = "correct horse battery"


def signup(c: httpx.Client, email: str) -> dict[str, Any]:
    r = c.post("/api/auth/signup", json={"email": email, "password": PASSWORD})
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    return body


def chat(c: httpx.Client, message: str, conversation_id: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"message": message}
    if conversation_id:
        body["conversation_id"] = conversation_id
    r = c.post("/api/chat", json=body)
    assert r.status_code == 200, r.text
    return dict(parse_sse(r.text))["done"]


def count(server: LiveServer, model: type[Message] | type[Trace]) -> int:
    async def run() -> int:
        db = Database(server.services.settings.resolved_database_url)
        try:
            async with db.session() as s:
                return int(await s.scalar(select(func.count()).select_from(model)) or 0)
        finally:
            await db.dispose()

    return asyncio.run(run())


def test_a_users_conversations_are_theirs_alone(
    db_overrides: dict[str, Any], fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    fake_llm.default = text("先查行情，再開價。")
    server = live_server(**db_overrides)  # SQLite and PostgreSQL
    with client(server) as mei, client(server) as other, client(server) as anonymous:
        signup(mei, "mei@example.com")
        signup(other, "other@example.com")
        first = chat(mei, "怎麼談薪水？")
        second = chat(mei, "面試要怎麼準備")
        chat(mei, "那第二輪呢？", second["conversation_id"])

        listed = mei.get("/api/conversations").json()["conversations"]
        # newest activity first: the second conversation got the last message
        assert [c["id"] for c in listed] == [second["conversation_id"], first["conversation_id"]]
        assert listed[0]["title"] == "面試要怎麼準備" and listed[0]["updated_at"].endswith("Z")
        assert mei.get("/api/conversations", params={"limit": 1}).json()["conversations"] == listed[:1]

        detail = mei.get(f"/api/conversations/{second['conversation_id']}").json()
        assert [(m["role"], m["content"]) for m in detail["messages"]] == [
            ("user", "面試要怎麼準備"),
            ("assistant", "先查行情，再開價。"),
            ("user", "那第二輪呢？"),
            ("assistant", "先查行情，再開價。"),
        ]
        answer = detail["messages"][1]
        assert answer["status"] == "ok" and answer["html"] == "<p>先查行情，再開價。</p>"
        assert detail["messages"][0]["html"] is None  # the user's own text is shown as text

        # someone else, or nobody: the conversation and its messages do not exist for them
        assert other.get("/api/conversations").json()["conversations"] == []
        for c in (other, anonymous):
            for path in (
                f"/api/conversations/{first['conversation_id']}",
                f"/api/messages/{first['message_id']}",
            ):
                r = c.get(path)
                assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
            assert c.delete(f"/api/conversations/{first['conversation_id']}").status_code == 404
        # nor can they write into it
        r = other.post("/api/chat", json={"message": "hi", "conversation_id": first["conversation_id"]})
        assert r.status_code == 404
        assert anonymous.get("/api/conversations").status_code == 401

        messages_before = count(server, Message)
        assert mei.delete(f"/api/conversations/{first['conversation_id']}").status_code == 204
        assert mei.get(f"/api/conversations/{first['conversation_id']}").status_code == 404
        assert mei.get(f"/api/messages/{first['message_id']}").status_code == 404
        assert [c["id"] for c in mei.get("/api/conversations").json()["conversations"]] == [
            second["conversation_id"]
        ]
    # the messages and the trace went with it (the database cascades)
    assert count(server, Message) == messages_before - 2
    assert count(server, Trace) == 2


def test_an_anonymous_conversation_is_open_to_whoever_holds_its_id(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    fake_llm.default = text("好的。")
    server = live_server()
    with client(server) as tab, client(server) as elsewhere:
        created = tab.post("/api/conversations", json={"title": "薪水"})
        assert created.status_code == 201
        conv = created.json()
        assert re.fullmatch(r"[0-9a-f]{32}", conv["id"]) and conv["title"] == "薪水"
        done = chat(tab, "怎麼談薪水？", conv["id"])
        assert done["conversation_id"] == conv["id"]
        # the id is the key: another browser that has it can read and delete, one without it cannot list
        detail = elsewhere.get(f"/api/conversations/{conv['id']}").json()
        assert [m["role"] for m in detail["messages"]] == ["user", "assistant"]
        assert elsewhere.get(f"/api/messages/{done['message_id']}").json()["html"] == "<p>好的。</p>"
        assert elsewhere.get("/api/conversations").status_code == 401
        assert elsewhere.delete(f"/api/conversations/{conv['id']}").status_code == 204
        assert tab.get(f"/api/conversations/{conv['id']}").status_code == 404


def test_bad_ids_and_bodies_are_clear_4xx(live_server: Callable[..., LiveServer]) -> None:
    server = live_server()
    with client(server) as c:
        for path in (
            "/api/conversations/not-an-id",
            "/api/messages/ABCDEF",
            "/api/conversations/" + "g" * 32,
        ):
            r = c.get(path)
            assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_input", path
        missing = "0" * 32
        assert c.get(f"/api/conversations/{missing}").status_code == 404
        assert c.get(f"/api/messages/{missing}").status_code == 404
        assert c.delete(f"/api/conversations/{missing}").status_code == 404
        r = c.post("/api/conversations", json={"title": "x" * 201})
        assert r.status_code == 422 and "title" in r.json()["error"]["message"]
        assert c.post("/api/conversations", json={"owner": "me"}).status_code == 422
        assert (
            c.post("/api/conversations", content=b"{", headers={"content-type": "application/json"}).json()[
                "error"
            ]["code"]
            == "invalid_json"
        )
        signup(c, "limit@example.com")
        r = c.get("/api/conversations", params={"limit": 0})
        assert r.status_code == 422 and "limit" in r.json()["error"]["message"]


def test_a_conversation_with_an_answer_being_written_is_not_deleted(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    fake_llm.script(stall(3.0, after_chunks=["寫", "到", "一", "半"]))
    server = live_server()
    with client(server) as c, client(server) as other:
        conv = c.post("/api/conversations", json={}).json()
        with c.stream(
            "POST", "/api/chat", json={"message": "面試要怎麼準備", "conversation_id": conv["id"]}
        ) as r:
            frames = r.iter_text()  # kept: a dropped iterator closes the response, which cancels the turn
            assert "event: route" in next(frames)
            refused = other.delete(f"/api/conversations/{conv['id']}")
        assert refused.status_code == 409 and refused.json()["error"]["code"] == "conversation_busy"


def test_a_stored_answer_carries_its_search_sources_and_sanitized_html(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    hostile = (
        "**談薪水**先查行情。<script>alert(1)</script> [報告](https://example.org/a) "
        "[x](javascript:alert(1)) ![beacon](https://tracker.example/b.gif)"
    )
    fake_llm.script(tool_calls(Call("searchKnowledge", {"query": "薪水談判技巧", "top_k": 3})), text(hostile))
    # the administrator's full-retrieval setting: the model asks for 3, the search runs with 5
    server = live_server(use_full_retrieval_range=True, configured_top_k=5)
    with client(server) as c:
        done = chat(c, "怎麼談薪水？")
        view = c.get(f"/api/messages/{done['message_id']}").json()
    assert view["content"] == hostile and view["status"] == "ok"
    assert view["searches"] == [{"query": "薪水談判技巧", "top_k": 5}]
    assert 1 <= len(view["sources"]) <= 5 and all(s["id"] and s["title"] for s in view["sources"])
    assert len({(s["id"], s["section"]) for s in view["sources"]}) == len(view["sources"])
    html = view["html"]
    assert "<strong>談薪水</strong>" in html and "<script" not in html and "&lt;script&gt;" in html
    assert (
        '<a href="https://example.org/a" target="_blank" rel="noopener noreferrer nofollow">報告</a>' in html
    )
    assert "javascript:" not in html.replace("[x](javascript:alert(1))", "")  # only as visible text
    assert "tracker.example" not in html and "<img" not in html and "beacon" in html
    assert view["report"] is None and view["notices"] == [] and view["rating"] is None


def test_a_report_comes_back_with_rendered_sections_risks_and_citations(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    fake_llm.responder = responder({})
    server = live_server(**FAST)
    server.services.engine.router = FixedRouter("complex")
    with client(server) as c:
        r = c.post("/api/chat", json={"message": COMPLEX})
        events = parse_sse(r.text)
        streamed = dict(events)["report"]
        view = c.get(f"/api/messages/{dict(events)['done']['message_id']}").json()
    report = view["report"]
    assert report["title"] == streamed["title"] and report["path"] == "parallel"
    assert [s["heading"] for s in report["sections"]] == ["市場分析", "成長建議", "實戰準備", "行動建議"]
    assert [s["body"] for s in report["sections"]] == [s["body"] for s in streamed["sections"]]
    assert [s["risk_level"] for s in report["sections"]] == ["medium", "low", "high", None]
    assert all(s["html"].startswith(("<p>", "<ul>", "<ol>")) for s in report["sections"])
    assert "29,500" in report["sections"][0]["html"]
    assert report["sections"][0]["sources"] == streamed["sections"][0]["sources"] != []


def test_a_report_is_stored_as_its_structure_and_one_stored_before_still_displays(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    fake_llm.responder = responder({})
    server = live_server(**FAST)
    server.services.engine.router = FixedRouter("complex")
    with client(server) as c:
        events = dict(parse_sse(c.post("/api/chat", json={"message": COMPLEX}).text))
        streamed = ReportEvent.model_validate(events["report"])
        message_id = events["done"]["message_id"]
        view = c.get(f"/api/messages/{message_id}").json()

        async def stored(clear: bool) -> tuple[str, dict[str, Any] | None]:
            db = Database(server.services.settings.resolved_database_url)
            try:
                async with db.session() as s, s.begin():
                    row = await s.get(Message, message_id)
                    assert row is not None
                    found = (row.content, row.report)
                    if clear:  # as a row written before migration 0019: the text only
                        row.report = None
                return found
            finally:
                await db.dispose()

        content, report = asyncio.run(stored(clear=True))
        assert report == StoredReport.of(streamed).to_json()
        assert content == message_markdown(streamed) and content.startswith(f"# {streamed.title}\n\n## ")
        legacy = c.get(f"/api/messages/{message_id}").json()
    assert asyncio.run(stored(clear=False))[1] is None
    assert legacy == view and view["report"]["sections"]


def test_a_citation_opens_its_passage(fake_llm: FakeLLM, live_server: Callable[..., LiveServer]) -> None:
    fake_llm.script(tool_calls(Call("searchKnowledge", {"query": "薪水談判技巧"})), text("好。"))
    server = live_server()
    with client(server) as c:
        done = chat(c, "怎麼談薪水？")
        source = c.get(f"/api/messages/{done['message_id']}").json()["sources"][0]
        found = c.get(
            "/api/knowledge/chunks", params={"document_id": source["id"], "section": source["section"]}
        )
        assert found.status_code == 200
        chunks = found.json()["chunks"]
        assert chunks and all(ch["document_id"] == source["id"] for ch in chunks)
        assert all(ch["section"] == source["section"] and ch["title"] == source["title"] for ch in chunks)
        assert chunks[0]["text"] and chunks[0]["document_title"]
        one = c.get(f"/api/knowledge/chunks/{chunks[0]['id']}").json()
        assert one == chunks[0]
        whole = c.get("/api/knowledge/chunks", params={"document_id": source["id"]}).json()["chunks"]
        assert len(whole) >= len(chunks)

        r = c.get("/api/knowledge/chunks", params={"document_id": "no-such-article"})
        assert r.status_code == 404 and "no-such-article" in r.json()["error"]["message"]
        r = c.get("/api/knowledge/chunks", params={"document_id": source["id"], "section": "不存在的段落"})
        assert r.status_code == 404 and "不存在的段落" in r.json()["error"]["message"]
        assert c.get("/api/knowledge/chunks/999999").status_code == 404
        assert c.get("/api/knowledge/chunks/abc").status_code == 422
        assert c.get("/api/knowledge/chunks").status_code == 422


def test_every_response_carries_the_security_headers(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    server = live_server()
    with client(server) as c:
        responses = {
            "page": c.get("/"),
            "script": c.get("/static/chat.js"),
            "json": c.get("/healthz"),
            "error": c.get("/api/conversations"),
            "stream": c.post("/api/chat", json={"message": "面試要怎麼準備"}),
            "refused": c.post("/api/chat", json={"message": "x"}, headers={"Origin": "https://evil.example"}),
        }
        docs = c.get("/docs")
    for name, r in responses.items():
        csp = r.headers.get("content-security-policy", "")
        assert "default-src 'self'" in csp and "script-src 'self';" in csp, name
        assert "frame-ancestors 'none'" in csp and "object-src 'none'" in csp and "base-uri 'none'" in csp
        assert "unsafe-inline" not in csp and "style-src 'self';" in csp
        assert r.headers["x-content-type-options"] == "nosniff", name
        assert r.headers["referrer-policy"] == "same-origin", name
    assert responses["refused"].status_code == 403
    assert "cdn.jsdelivr.net" in docs.headers["content-security-policy"]


def test_the_page_has_no_inline_script_or_style(live_server: Callable[..., LiveServer]) -> None:
    server = live_server()
    with client(server) as c:
        page = c.get("/").text
        scripts = re.findall(r"<script\b[^>]*>(.*?)</script>", page, flags=re.S)
        assert scripts and all(s.strip() == "" for s in scripts)  # every script is a file
        assert all('src="/static/' in tag for tag in re.findall(r"<script\b[^>]*>", page))
        assert "<style" not in page and not re.search(r"\sstyle\s*=", page)
        assert not re.search(r"\son[a-z]+\s*=", page)  # no inline event handlers
        for asset in re.findall(r'(?:src|href)="(/static/[^"]+)"', page):
            assert c.get(asset).status_code == 200, asset


def test_many_anonymous_conversations_from_one_address_are_limited(
    live_server: Callable[..., LiveServer],
) -> None:
    server = live_server(anonymous_chat_per_minute=3)
    with client(server) as c:
        responses = [c.post("/api/conversations", json={}) for _ in range(4)]
        assert [r.status_code for r in responses] == [201, 201, 201, 429]
        r = responses[-1]
        assert "Retry-After" in r.headers and "new conversations" in r.json()["error"]["message"]
