"""Resume review over real HTTP (uvicorn) with the scripted fake provider: uploads (PDF, DOCX), refusals
(unreadable, empty, unsupported, too many pages, 50 MB), the comparison with the last version, contact
masking in what is stored and sent, deletion, the chat path, and the degradation ladder.

The fake answers by the system prompt of each step (structure, scoring, rewrites), never by order.
"""

from __future__ import annotations

import json
import select
import socket
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from sqlalchemy import select as sql_select

from careerwise.resume.contact import has_contact
from careerwise.services import Services
from careerwise.store import Database, Message, Resume, ResumeReview, TraceEvent
from tests.auth_helpers import create_user, login
from tests.conftest import SERVER_STACKS, LiveServer, parse_sse
from tests.fakes.fake_llm import FakeLLM, Reply, error, text
from tests.fixtures.resume_files import RESUME_EN, RESUME_ZH, make_pdf, resume_docx, resume_pdf

PHONE, EMAIL, LINE_ID = "0912-345-678", "ming.wang@example.com", "mingwang_88"
NO_LIMITS = {"anonymous_chat_per_minute": 0, "user_chat_per_minute": 0}

# a resume without headings, dates, schools or lists: only the model can tell its sections apart
NO_CUES = """陳小華
我在餐廳做過外場服務，也在便利商店打工
熟悉收銀與排班，喜歡和客人聊天
會用 Excel 和 Word 做簡單的表格
希望找到穩定的行政工作"""
LABELS_NO_CUES = {"labels": ["contact", "experience", "experience", "skills", "summary"]}
# the short paste: Skills inline, no Education, no figure
SHORT = """Jordan Lee
Summary: Junior backend developer who enjoys building small web services.
Experience: Intern at Northwind Apps, worked on the REST API and wrote unit tests.
Skills: Python, Django, PostgreSQL, Git
Target role: backend engineer"""


def scoring(experience: int = 2) -> dict[str, Any]:
    return {
        "sections": [
            {"section": "summary", "relevance": 4, "wording": 3, "comment": "方向清楚〔2〕"},
            {
                "section": "experience",
                "relevance": experience,
                "wording": experience,
                "comment": "多是職責，少了成果數字〔1〕",
            },
            {"section": "skills", "relevance": 3, "comment": "可補上產品工具"},
            {"section": "education", "relevance": 4, "comment": ""},
        ]
    }


REWRITES = {
    "rewrites": [
        {"rewrite": "經營公司社群與每月電子報，讓開信率提升 X%", "why": "以動詞開頭並寫出成果〔1〕"},
        {"rewrite": "規劃辦公室採購流程，每季節省 30% 成本", "why": "加上成果"},
        {"rewrite": "用 HubSpot 經營數位行銷五年，轉往產品經理", "why": "更具體"},
    ]
}
STEPS = (
    ("structure", ("履歷結構分析器", "resume structure parser")),
    ("scoring", ("正在做履歷健檢", "reviewing a resume")),
    ("rewrites", ("各改寫成一行更有力", "Rewrite each of the resume lines")),
)


def step_of(body: dict[str, Any]) -> str:
    system = str(body["messages"][0]["content"])
    return next((step for step, marks in STEPS if any(m in system for m in marks)), "other")


def as_json(value: object) -> Reply:
    return text(json.dumps(value, ensure_ascii=False), chunks=3)


def responder(overrides: dict[str, Reply | Callable[[], Reply]] | None = None, *, experience: int = 2):  # type: ignore[no-untyped-def]
    replies: dict[str, Reply | Callable[[], Reply]] = {
        "structure": as_json(LABELS_NO_CUES),
        "scoring": as_json(scoring(experience)),
        "rewrites": as_json(REWRITES),
        "other": text("好的。"),
    } | (overrides or {})

    def respond(body: dict[str, Any]) -> Reply:
        reply = replies[step_of(body)]
        return reply() if callable(reply) else reply

    return respond


def server_for(live_server: Callable[..., LiveServer], **overrides: Any) -> LiveServer:
    return live_server(**(NO_LIMITS | {"deep_step_timeout": 5.0, "deep_turn_timeout": 20.0} | overrides))


async def upload(
    client: httpx.AsyncClient,
    data: bytes,
    filename: str,
    *,
    role: str | None = "產品經理",
    conversation_id: str | None = None,
    stream: bool = False,
) -> httpx.Response:
    fields = {k: v for k, v in {"target_role": role, "conversation_id": conversation_id}.items() if v}
    return await client.post(
        "/api/resumes" + ("?stream=1" if stream else ""), files={"file": (filename, data)}, data=fields
    )


def headings(report: dict[str, Any]) -> list[str]:
    return [s["heading"] for s in report["sections"]]


def section(report: dict[str, Any], start: str) -> str:
    return str(next(s["body"] for s in report["sections"] if s["heading"].startswith(start)))


async def stored(
    services: Services,
) -> tuple[list[Resume], list[ResumeReview], list[TraceEvent], list[Message]]:
    """What the server stored, read through a handle of this test's own event loop (asyncpg
    connections belong to the loop that opened them: the server's pool is on uvicorn's)."""
    db = Database(services.settings.resolved_database_url)
    try:
        async with db.session() as s:
            resumes = list((await s.scalars(sql_select(Resume).order_by(Resume.version))).all())
            reviews = list((await s.scalars(sql_select(ResumeReview))).all())
            events = list((await s.scalars(sql_select(TraceEvent))).all())
            messages = list((await s.scalars(sql_select(Message).where(Message.trace_id.is_not(None)))).all())
    finally:
        await db.dispose()
    return resumes, reviews, events, messages


# --------------------------------------------------------------------------- uploads


async def test_a_pdf_upload_gets_a_scored_report_with_rewrites_and_no_contact_detail_leaves_the_process(
    live_server: Callable[..., LiveServer], fake_llm: FakeLLM
) -> None:
    fake_llm.responder = responder()
    server = server_for(live_server)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        r = await upload(client, resume_pdf(), "王小明_履歷.pdf")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["status"] == "ok" and body["error"] is None and body["degraded"] == []
    report = body["report"]
    assert report["path"] == "resume" and report["title"] == "履歷健檢報告"
    assert headings(report) == [
        "總評",
        "聯絡資訊 5/5",
        "自我介紹 3/5",
        "經歷 2/5",
        "技能 4/5",
        "學歷 5/5",
        "改寫建議",
    ]
    assert "目標職位：產品經理" in section(report, "總評")
    assert "多是職責，少了成果數字〔1〕" in section(report, "經歷")
    rewrites = section(report, "改寫建議")
    assert "改寫：經營公司社群與每月電子報，讓開信率提升 [X]%" in rewrites
    # the figure the line does not state became a placeholder; the rewrite naming a tool the resume
    # does not mention was replaced by the rules' template of that line
    assert "30%" not in rewrites and "改寫：規劃辦公室採購流程，每季節省 [X]% 成本" in rewrites
    assert "HubSpot" not in rewrites and "改寫：五年數位行銷經驗" in rewrites
    cited = {src["id"] for s in report["sections"] for src in s["sources"]}
    assert cited and all(c.startswith("b-resume-") for c in cited), cited
    assert body["resume"]["version"] == 1 and body["resume"]["kind"] == "pdf" and body["resume"]["pages"] == 1
    assert body["resume"]["contact"] == {"emails": 1, "phones": 1, "line_ids": 1, "addresses": 1, "links": 0}
    assert body["review"]["scoring_source"] == "llm" and body["review"]["structure_source"] == "headings"
    # quantified 3 and length 2 counted by rules, relevance and wording 2 judged by the model
    assert body["review"]["scores"]["experience"] == {
        "score": 2,
        "quantified": 3,
        "relevance": 2,
        "wording": 2,
        "length": 2,
        "comment": "多是職責，少了成果數字〔1〕",
    }

    # the provider saw the resume, never its contact details; the headings made the structure step moot,
    # and each step's reply was constrained by a schema
    assert [step_of(b) for b in fake_llm.requests] == ["scoring", "rewrites"]
    formats = [b["response_format"]["json_schema"]["schema"] for b in fake_llm.requests]
    assert [
        i["properties"]["section"]["const"] for i in formats[0]["properties"]["sections"]["prefixItems"]
    ] == [
        "summary",
        "experience",
        "skills",
        "education",
    ]
    assert formats[1]["properties"]["rewrites"]["minItems"] == 3
    sent = json.dumps(fake_llm.requests, ensure_ascii=False)
    assert "粉專追蹤數一年成長 40%" in sent
    for detail in (PHONE, EMAIL, LINE_ID, "忠孝東路"):
        assert detail not in sent
    # nor does anything stored: the resume text, the review, the trace events
    resumes, reviews, events, messages = await stored(server.services)
    assert len(resumes) == 1 and len(reviews) == 1
    assert not has_contact(resumes[0].text) and "手機： [contact]" in resumes[0].text
    assert reviews[0].trace_id == body["trace_id"]
    dump = json.dumps([e.payload for e in events] + [reviews[0].report], ensure_ascii=False)
    for detail in (PHONE, EMAIL, LINE_ID, "忠孝東路"):
        assert detail not in dump
    # the conversation keeps the file's name as the user's message, never the resume's text
    assert [m.content for m in messages if m.role == "user"] == ["（上傳履歷：王小明_履歷.pdf，273 字）"]
    types = [e.type for e in events if e.trace_id == body["trace_id"]]
    assert types[0] == "route" and types[-1] == "done" and "report" in types and "progress" in types


async def test_a_docx_upload_streams_progress_the_report_and_what_was_stored(
    live_server: Callable[..., LiveServer], fake_llm: FakeLLM
) -> None:
    fake_llm.responder = responder()
    server = server_for(live_server)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        r = await upload(client, resume_docx(), "resume.docx", stream=True)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = parse_sse(r.text)
    names = [n for n, _ in events]
    assert names[0] == "route" and names[-2:] == ["resume", "done"], names
    assert names.count("report") == 1 and names.count("progress") >= 4
    route = events[0][1]
    assert route["intent"] == "resume" and route["layer"] == "upload" and route["flow"] == "resume-upload"
    report = next(d for n, d in events if n == "report")
    assert headings(report)[:2] == ["總評", "聯絡資訊 5/5"]
    stored_frame = next(d for n, d in events if n == "resume")
    assert stored_frame["resume"]["kind"] == "docx" and stored_frame["resume"]["version"] == 1
    assert events[-1][1]["status"] == "ok" and events[-1][1]["path"] == "resume"


async def test_an_english_resume_gets_english_headings(
    live_server: Callable[..., LiveServer], fake_llm: FakeLLM
) -> None:
    fake_llm.responder = responder({"scoring": text("sorry"), "rewrites": as_json({"rewrites": []})})
    server = server_for(live_server)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        r = await upload(client, RESUME_EN.encode(), "resume.txt", role="product manager")
    body = r.json()
    assert body["report"]["title"] == "Resume review"
    assert [d["reason"] for d in body["degraded"]] == ["resume_scoring_fallback", "resume_rewrites_failed"]
    # the failed rewrite step still leaves a rewrite of each weakest line: the rules' template, no figure
    rewrites = section(body["report"], "Suggested rewrites")
    assert (
        "Original: Responsible for social media and the monthly newsletter\n  Rewrite: Managed social media "
        "and the monthly newsletter, raising [metric] from [X] to [X] ([X]%)"
    ) in rewrites
    assert "Overall score:" in section(body["report"], "Overall") and "(estimated by rules)" in section(
        body["report"], "Overall"
    )
    assert any(h.startswith("Experience ") for h in headings(body["report"]))


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("filename", "make", "status", "code", "words"),
    [
        ("cv.pdf", lambda: b"%PDF-1.7\n1 0 obj << /Type /Catalog", 400, "resume_unreadable", "damaged"),
        ("cv.docx", lambda: resume_docx()[:600], 400, "resume_unreadable", "damaged"),
        ("cv.pdf", lambda: b"just some text pretending", 400, "resume_unreadable", "named .pdf"),
        ("cv.txt", lambda: b"", 400, "resume_empty", "empty"),
        ("scan.pdf", lambda: make_pdf([[], []]), 400, "resume_empty", "scanned"),
        ("photo.png", lambda: b"\x89PNG\r\n\x1a\n" + bytes(200), 415, "resume_unsupported_type", "PNG image"),
        (
            "old.doc",
            lambda: b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(200),
            415,
            "resume_unsupported_type",
            ".docx",
        ),
        ("long.pdf", lambda: resume_pdf(pages=6), 400, "resume_too_many_pages", "6 pages"),
        ("big.txt", lambda: ("經歷 " * 7000).encode(), 400, "resume_too_long", "characters"),
    ],
)
async def test_files_we_cannot_review_get_a_clear_error_and_cost_no_llm_call(
    live_server: Callable[..., LiveServer],
    fake_llm: FakeLLM,
    filename: str,
    make: Callable[[], bytes],
    status: int,
    code: str,
    words: str,
) -> None:
    fake_llm.responder = responder()
    server = server_for(live_server)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        r = await upload(client, make(), filename)
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["code"] == code and words in err["message"], err
    assert fake_llm.requests == []


async def test_a_request_that_is_not_a_multipart_upload_is_refused(
    live_server: Callable[..., LiveServer], fake_llm: FakeLLM
) -> None:
    server = server_for(live_server)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        r = await client.post("/api/resumes", json={"file": "王小明"})
        assert r.status_code == 415 and "multipart/form-data" in r.json()["error"]["message"]
        r = await client.post("/api/resumes", files={"resume": ("cv.txt", RESUME_ZH.encode())})
        assert r.status_code == 400 and "field 'file'" in r.json()["error"]["message"]
        r = await upload(client, RESUME_ZH.encode(), "cv.txt", conversation_id="0" * 32)
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"


def _head(port: int, length_header: str) -> bytes:
    return (
        f"POST /api/resumes HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: multipart/form-data; boundary=XyZ\r\n{length_header}\r\n\r\n"
    ).encode()


PART = b'--XyZ\r\nContent-Disposition: form-data; name="file"; filename="big.pdf"\r\n\r\n%PDF-1.7\n'


def _response(sock: socket.socket) -> tuple[int, dict[str, Any]]:
    data = b""
    sock.settimeout(10)
    while b"\r\n\r\n" not in data or not data.rstrip().endswith(b"}"):
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body[body.index(b"{") :])


@pytest.mark.parametrize("stack", SERVER_STACKS)  # the parsers read a refused body differently
def test_a_50_mb_upload_with_a_content_length_is_refused_before_its_body_is_read(
    live_server: Callable[..., LiveServer], fake_llm: FakeLLM, stack: dict[str, Any]
) -> None:
    server = server_for(live_server, **stack)
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(_head(server.port, f"Content-Length: {50 * 1024 * 1024}") + PART + bytes(64 * 1024))
        status, body = _response(sock)  # answered with 64 KB of the 50 MB sent
    assert status == 413
    assert (
        body["error"]["code"] == "resume_too_large"
        and "50.0 MB; the limit is 5.0 MB" in body["error"]["message"]
    )


@pytest.mark.parametrize("stack", SERVER_STACKS)  # the parsers read a refused body differently
def test_a_50_mb_upload_without_a_length_is_cut_off_at_the_limit(
    live_server: Callable[..., LiveServer], fake_llm: FakeLLM, stack: dict[str, Any]
) -> None:
    server = server_for(live_server, **stack)
    block = bytes(256 * 1024)
    frame = f"{len(block):X}\r\n".encode() + block + b"\r\n"
    sent = 0
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(_head(server.port, "Transfer-Encoding: chunked"))
        sock.sendall(f"{len(PART):X}\r\n".encode() + PART + b"\r\n")
        sock.settimeout(5)
        while sent < 50 * 1024 * 1024:
            if select.select([sock], [], [], 0)[0]:
                break  # the server has answered
            try:
                sock.sendall(frame)
            except (BrokenPipeError, ConnectionResetError, TimeoutError):
                break
            sent += len(block)
        status, body = _response(sock)
    assert status == 413 and body["error"]["code"] == "resume_too_large"
    assert sent < 25 * 1024 * 1024, f"the server read {sent} bytes before refusing"


# --------------------------------------------------------------------------- versions, comparison, deletion


IMPROVED = RESUME_ZH.replace("負責社群經營與每月電子報", "經營公司社群與每月電子報，開信率從 18% 提升到 27%")


async def test_a_second_upload_is_compared_with_the_first_and_both_can_be_deleted(
    db_overrides: dict[str, Any], live_server: Callable[..., LiveServer], fake_llm: FakeLLM
) -> None:
    server = server_for(live_server, **db_overrides)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        fake_llm.responder = responder(experience=2)
        first = (await upload(client, resume_pdf(), "v1.pdf")).json()
        conversation = first["conversation_id"]
        assert first["resume"]["version"] == 1 and "與上一版比較" not in headings(first["report"])
        fake_llm.responder = responder(experience=4)
        second = (await upload(client, resume_docx(IMPROVED), "v2.docx", conversation_id=conversation)).json()
        assert second["resume"]["version"] == 2 and second["conversation_id"] == conversation
        comparison = section(second["report"], "與上一版比較")
        assert "- 經歷：2 → 4（+2）" in comparison and "- 技能：4 → 4（持平）" in comparison
        assert "- 整體：3.8 → 4.2（+0.4）" in comparison
        again = (
            await upload(client, resume_docx(IMPROVED), "v2-again.docx", conversation_id=conversation)
        ).json()
        assert "這份履歷的內容和第 2 版相同" in section(again["report"], "與上一版比較")

        listed = (await client.get("/api/resumes", params={"conversation_id": conversation})).json()[
            "resumes"
        ]
        assert [(r["version"], r["filename"], r["review"]["overall"]) for r in listed] == [
            (1, "v1.pdf", 3.8),
            (2, "v2.docx", 4.2),
            (3, "v2-again.docx", 4.2),
        ]
        one = (
            await client.get(f"/api/resumes/{listed[0]['id']}", params={"conversation_id": conversation})
        ).json()
        assert one["review"]["report"]["path"] == "resume"
        assert (await client.get("/api/resumes")).status_code == 400  # no account and no conversation named

        r = await client.delete(f"/api/resumes/{listed[0]['id']}", params={"conversation_id": conversation})
        assert r.json() == {"deleted": 1}
        r = await client.delete(f"/api/resumes/{listed[0]['id']}", params={"conversation_id": conversation})
        assert r.status_code == 404
        assert (await client.delete("/api/resumes", params={"conversation_id": conversation})).json() == {
            "deleted": 2
        }
        assert (await client.get("/api/resumes", params={"conversation_id": conversation})).json() == {
            "resumes": []
        }
    resumes, reviews, events, messages = await stored(server.services)
    assert resumes == [] and reviews == []
    reports = [e.payload for e in events if e.type == "report"]
    assert len(reports) == 3 and all(p == {"type": "report", "redacted": "resume deleted"} for p in reports)
    assert messages and not any("粉專" in m.content or "v1.pdf" in m.content for m in messages)


async def test_a_users_resumes_are_theirs_alone(
    live_server: Callable[..., LiveServer], fake_llm: FakeLLM
) -> None:
    fake_llm.responder = responder()
    server = server_for(live_server)
    await create_user(server.services, "ming@example.com")
    await create_user(server.services, "other@example.com")
    async with (
        httpx.AsyncClient(base_url=server.url, timeout=30) as ming,
        httpx.AsyncClient(base_url=server.url, timeout=30) as other,
    ):
        await login(ming, "ming@example.com")
        await login(other, "other@example.com")
        mine = (await upload(ming, resume_pdf(), "cv.pdf")).json()["resume"]
        assert [r["id"] for r in (await ming.get("/api/resumes")).json()["resumes"]] == [mine["id"]]
        assert mine["conversation_id"] is None  # owned by the account, not the conversation
        assert (await other.get("/api/resumes")).json() == {"resumes": []}
        assert (await other.get(f"/api/resumes/{mine['id']}")).status_code == 404
        assert (await other.delete(f"/api/resumes/{mine['id']}")).status_code == 404
        assert (await ming.delete("/api/resumes")).json() == {"deleted": 1}
        assert (await ming.get("/api/resumes")).json() == {"resumes": []}


# --------------------------------------------------------------------------- the chat path


async def test_a_resume_pasted_in_the_chat_is_reviewed_and_stored_for_the_conversation(
    live_server: Callable[..., LiveServer], fake_llm: FakeLLM
) -> None:
    fake_llm.responder = responder()
    server = server_for(live_server)
    message = "以下是我的履歷，目標職位：產品經理\n" + RESUME_ZH
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        body = (await client.post("/api/chat", json={"message": message, "mode": "full"})).json()
        assert body["route"]["intent"] == "resume" and body["route"]["flow"] == "resume"
        assert body["path"] == "resume" and body["report"]["path"] == "resume"
        assert "目標職位：產品經理" in section(body["report"], "總評")
        listed = (
            await client.get("/api/resumes", params={"conversation_id": body["conversation_id"]})
        ).json()
        assert [(r["kind"], r["version"]) for r in listed["resumes"]] == [("chat", 1)]
        sent = json.dumps(fake_llm.requests, ensure_ascii=False)
        assert PHONE not in sent and EMAIL not in sent

        fake_llm.reset()
        asked = (
            await client.post("/api/chat", json={"message": "可以幫我看履歷嗎？", "mode": "full"})
        ).json()
    assert asked["path"] == "resume-howto" and "上傳 PDF" in asked["answer"] and asked["report"] is None
    assert fake_llm.requests == []


# --------------------------------------------------------------------------- degradation


async def test_an_unreachable_model_still_gives_a_review_by_rules_and_says_so(
    live_server: Callable[..., LiveServer], fake_llm: FakeLLM
) -> None:
    fake_llm.responder = lambda body: error(503)
    server = server_for(live_server, llm_retries=0)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        body = (await upload(client, resume_pdf(), "cv.pdf")).json()
    assert [d["reason"] for d in body["degraded"]] == ["resume_scoring_fallback", "resume_rewrites_failed"]
    assert len(fake_llm.requests) == 1  # the later model steps are skipped, not tried and failed
    report = body["report"]
    assert "（規則估算）" in section(report, "總評")
    assert (
        section(report, "經歷") == "量化 3、相關性 1、用詞 2、長度 2"
    )  # 1 of 4 lines has a figure, 2 open with 負責/協助
    assert (
        "原句：負責社群經營與每月電子報\n  改寫：主責社群經營與每月電子報，讓[成果指標]從 [X] 提升到 [X]"
        in section(report, "改寫建議")
    )
    assert body["review"]["scoring_source"] == "rules" and body["review"]["structure_source"] == "headings"


async def test_a_resume_without_cues_is_labelled_by_the_model_and_a_wrong_count_retried_with_the_reason(
    live_server: Callable[..., LiveServer], fake_llm: FakeLLM
) -> None:
    replies = iter([as_json({"labels": ["contact", "skills"]}), as_json(LABELS_NO_CUES)])
    fake_llm.responder = responder({"structure": lambda: next(replies)})
    server = server_for(live_server)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        body = (await upload(client, NO_CUES.encode(), "cv.txt")).json()
    assert body["degraded"] == [] and body["review"]["structure_source"] == "llm"
    asked = [b for b in fake_llm.requests if step_of(b) == "structure"]
    assert asked[0]["response_format"]["json_schema"]["schema"]["properties"]["labels"]["maxItems"] == 5
    assert "2 labels for 5 blocks" in asked[1]["messages"][-1]["content"]
    assert [h.split(" ")[0] for h in headings(body["report"])[1:5]] == [
        "聯絡資訊",
        "自我介紹",
        "經歷",
        "技能",
    ]


async def test_a_short_pasted_resume_is_reviewed_saying_what_is_missing_and_capped_without_figures(
    live_server: Callable[..., LiveServer], fake_llm: FakeLLM
) -> None:
    five = {
        "sections": [
            {"section": k, "relevance": 5, **({"wording": 5} if k != "skills" else {}), "comment": "ok"}
            for k in ("summary", "experience", "skills")
        ]
    }
    fake_llm.responder = responder(
        {
            "scoring": as_json(five),
            "rewrites": as_json(
                {
                    "rewrites": [
                        {
                            "rewrite": "Built the REST API at Northwind Apps and wrote unit tests for 12 services"
                        },
                        {"rewrite": "Junior backend developer building small web services for 3 teams"},
                    ]
                }
            ),
        }
    )
    server = server_for(live_server)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        body = (
            await client.post(
                "/api/chat", json={"message": "Please review my resume.\n" + SHORT, "mode": "full"}
            )
        ).json()
    assert body["path"] == "resume" and body["report"] is not None, body["answer"]
    overall = section(body["report"], "Overall")
    assert "Missing sections: Education" in overall and "- Education: school, field" in overall
    assert "no quantified achievement" in overall and "Overall score: 3.0 / 5" in overall
    assert {h for h in headings(body["report"]) if h.startswith(("Summary", "Experience"))} == {
        "Summary 3/5",
        "Experience 3/5",
    }  # the model gave 5s; without a figure they are capped
    assert "Skills " in " ".join(headings(body["report"]))
    rewrites = section(body["report"], "Suggested rewrites")
    assert "12" not in rewrites and "3 teams" not in rewrites
    assert "Rewrite: Built the REST API at Northwind Apps and wrote unit tests for [X] services" in rewrites
    assert "Rewrite: Junior backend developer building small web services for [X] teams" in rewrites
