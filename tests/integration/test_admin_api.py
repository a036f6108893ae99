"""The admin API over real HTTP (uvicorn, SQLite and PostgreSQL): who may call it, turn filters and
timelines read from the stored events, chart figures from scripted turns, settings that apply on the next
turn with their audit rows, the knowledge base (upload with progress, re-index, delete, retrieval test)
and API keys."""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import httpx
import pytest

from careerwise.api.admin_common import percentile
from careerwise.auth import AccountService
from careerwise.store import Database
from tests.auth_helpers import PASSWORD, login_sync
from tests.conftest import LiveServer, client, parse_sse
from tests.fakes.fake_llm import Call, FakeLLM, error, text, tool_calls

T = TypeVar("T")
ADMIN = "boss@example.com"
USER = "mei@example.com"


def run_async(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine on a fresh loop in a thread of its own: Playwright's sync API keeps a loop running
    in the test's thread, where ``asyncio.run`` is refused."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


def make_user(server: LiveServer, email: str, *, admin: bool = False) -> None:
    """A user in the server's database, through a handle of its own (asyncpg connections belong to one
    event loop: the server's are not shared with the test's)."""

    async def run() -> None:
        db = Database(server.services.db.url)
        try:
            accounts = AccountService(db, "x" * 40)
            await accounts.create_user(
                email=email, password=PASSWORD, display_name=email, role="admin" if admin else "user"
            )
        finally:
            await db.dispose()

    run_async(run)


@contextmanager
def admin_client(server: LiveServer) -> Iterator[httpx.Client]:
    make_user(server, ADMIN, admin=True)
    with client(server) as c:
        login_sync(c, ADMIN)
        yield c


def chat(c: httpx.Client, message: str) -> list[tuple[str, dict[str, Any]]]:
    r = c.post("/api/chat", json={"message": message})
    assert r.status_code == 200, r.text
    return parse_sse(r.text)


def first(events: list[tuple[str, dict[str, Any]]], name: str) -> dict[str, Any]:
    return next(d for n, d in events if n == name)


ROUTES = [
    ("GET", "/api/admin/status", None),
    ("GET", "/api/admin/turns", None),
    ("GET", "/api/admin/turns/0123456789abcdef0123456789abcdef", None),
    ("GET", "/api/admin/stats", None),
    ("GET", "/api/admin/knowledge", None),
    ("POST", "/api/admin/knowledge/reindex", None),
    ("POST", "/api/admin/knowledge/search", {"query": "薪水"}),
    ("DELETE", "/api/admin/knowledge/documents/x", None),
    ("GET", "/api/admin/assistants", None),
    ("GET", "/api/admin/assistants/summer/settings", None),
    ("PUT", "/api/admin/assistants/summer/settings/configured_top_k", {"value": 9}),
    ("DELETE", "/api/admin/assistants/summer/settings/configured_top_k", None),
    ("GET", "/api/admin/assistants/summer/audit", None),
    ("GET", "/api/admin/apikeys", None),
    ("POST", "/api/admin/apikeys", {"name": "x"}),
    ("DELETE", "/api/admin/apikeys/x", None),
]


def test_anonymous_callers_get_401_and_other_users_403(live_server: Callable[..., LiveServer]) -> None:
    server = live_server()
    make_user(server, USER)
    with client(server) as anon:
        for method, path, body in ROUTES:
            r = anon.request(method, path, json=body)
            assert r.status_code == 401, (method, path, r.text)
            assert r.json()["error"]["code"] == "not_authenticated"
        # the page itself is static (it holds no data) and tells the visitor to log in
        page = anon.get("/admin")
        assert page.status_code == 200 and "admin.js" in page.text
    with client(server) as user:
        login_sync(user, USER)
        for method, path, body in ROUTES:
            r = user.request(method, path, json=body)
            assert r.status_code == 403, (method, path, r.text)
            assert r.json()["error"]["code"] == "forbidden"
        upload = user.post("/api/admin/knowledge/documents", files={"files": ("a.md", b"# A\n\ntext")})
        assert upload.status_code == 403
    # nothing changed on the way
    with admin_client(server) as c:
        assert c.get("/api/admin/assistants/summer/audit").json()["total"] == 0
        assert c.get("/api/admin/apikeys").json()["keys"] == []


def _script_turns(server: LiveServer, fake_llm: FakeLLM, c: httpx.Client) -> dict[str, Any]:
    """Five turns of known kinds: path A with an override (asked 5, used 12), path B, a greeting, an
    LLM failure (error), and one without the knowledge base (degraded)."""
    r = c.put("/api/admin/assistants/summer/settings/use_full_retrieval_range", json={"value": True})
    assert r.status_code == 200, r.text
    assert (
        c.put("/api/admin/assistants/summer/settings/configured_top_k", json={"value": 12}).status_code == 200
    )
    turns: dict[str, Any] = {}
    fake_llm.script(
        tool_calls(Call("searchKnowledge", {"query": "薪水談判 技巧", "top_k": 5}, id="c1")),
        text("談薪水要先探底。"),
    )
    turns["A"] = chat(c, "怎麼談薪水？")
    fake_llm.script(text("穿整齊就好。"))
    turns["B"] = chat(c, "面試要穿什麼？")
    fake_llm.script(text("你好！"))
    turns["greeting"] = chat(c, "你好")
    fake_llm.script(error(500), error(500))  # the first try and the one retry
    turns["error"] = chat(c, "面試遲到怎麼辦？")
    server.services.kb.mark_failed("RuntimeError: test: the index is gone")
    fake_llm.script(text("先做功課。"))
    turns["degraded"] = chat(c, "轉職前要準備什麼？")
    assert c.post("/api/admin/knowledge/reindex").status_code == 200  # loaded again
    assert fake_llm.pending == 0
    return turns


@pytest.mark.parametrize("db", ["sqlite", "postgresql"])
def test_turns_filters_timeline_and_stats(
    request: pytest.FixtureRequest, db: str, fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    overrides = {"database_url": request.getfixturevalue("pg_database")} if db == "postgresql" else {}
    server = live_server(**overrides)
    with admin_client(server) as c:
        turns = _script_turns(server, fake_llm, c)
        ids = {k: first(ev, "done")["trace_id"] for k, ev in turns.items()}

        # --- filters -------------------------------------------------------------------------------
        def listed(**params: Any) -> list[str]:
            r = c.get("/api/admin/turns", params=params)
            assert r.status_code == 200, r.text
            return [t["id"] for t in r.json()["items"]]

        assert set(listed()) == set(ids.values())
        assert listed(path="A") == [ids["A"]]
        assert listed(intent="greeting") == [ids["greeting"]]
        assert listed(error="true") == [ids["error"]]
        assert ids["error"] not in listed(error="false")
        assert listed(degraded="true") == [ids["degraded"]]
        assert set(listed(intent="career", tier="simple")) >= {ids["A"], ids["B"]}
        assert listed(channel="line") == []
        assert listed(status="error") == [ids["error"]]
        today = datetime.now(UTC).date()
        assert len(listed(date_from=today.isoformat(), date_to=today.isoformat())) == 5
        assert listed(date_to=(today - timedelta(days=1)).isoformat()) == []
        page1 = c.get("/api/admin/turns", params={"limit": 2}).json()
        page3 = c.get("/api/admin/turns", params={"limit": 2, "offset": 4}).json()
        assert page1["total"] == 5 and len(page1["items"]) == 2 and len(page3["items"]) == 1
        assert page1["items"][0]["id"] == ids["degraded"]  # newest first
        # a clear 422 for values the filters do not know, 400 for an upside-down range
        bad = c.get("/api/admin/turns", params={"intent": "weather"})
        assert bad.status_code == 422 and "intent" in bad.json()["error"]["message"]
        assert c.get("/api/admin/turns", params={"limit": 0}).status_code == 422
        upside = c.get("/api/admin/turns", params={"date_from": "2026-02-02", "date_to": "2026-02-01"})
        assert upside.status_code == 400 and "after" in upside.json()["error"]["message"]
        row_a = c.get("/api/admin/turns", params={"path": "A"}).json()["items"][0]
        assert row_a["question"] == "怎麼談薪水？"
        assert row_a["tool_calls"][0]["effective_arguments"]["top_k"] == 12
        assert row_a["layer"] == first(turns["A"], "route")["layer"]

        # --- timeline: what the stream showed, from the stored event rows ------------------------
        t = c.get(f"/api/admin/turns/{ids['A']}").json()
        streamed_call = first(turns["A"], "tool_call")
        streamed_result = first(turns["A"], "tool_result")
        (call,) = t["tool_calls"]
        for key in ("requested_arguments", "effective_arguments", "reason", "call_id", "name"):
            assert call[key] == streamed_call[key], key
        assert call["requested_arguments"]["top_k"] == 5 and call["effective_arguments"]["top_k"] == 12
        assert call["result"]["returned"] == streamed_result["returned"] == 12
        assert t["route"]["layer"] == first(turns["A"], "route")["layer"]
        kinds = [s["kind"] for s in t["spans"]]
        assert kinds.count("route") == 1 and kinds.count("llm") == 2 and kinds.count("tool") == 1
        assert [s["attributes"]["purpose"] for s in t["llm_calls"]] == ["phase1", "phase3"]
        starts = [s["start_ms"] for s in t["spans"]]
        assert starts == sorted(starts) and all(s["duration_ms"] >= 0 for s in t["spans"])
        tool_span = next(s for s in t["spans"] if s["kind"] == "tool")
        assert tool_span["attributes"]["effective_arguments"]["top_k"] == 12
        assert t["trace"]["path"] == "A" and t["question"] == "怎麼談薪水？" and "探底" in t["answer"]
        assert t["events"][0]["type"] == "route"
        t_err = c.get(f"/api/admin/turns/{ids['error']}").json()
        assert (
            t_err["errors"][0]["code"] == "llm_unavailable"
            and t_err["trace"]["error_code"] == "llm_unavailable"
        )
        t_deg = c.get(f"/api/admin/turns/{ids['degraded']}").json()
        assert [d["reason"] for d in t_deg["degradations"]] == ["knowledge_unavailable"]
        missing = c.get("/api/admin/turns/0123456789abcdef0123456789abcdef")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"

        # feedback on two answers, then the figures
        for key, rating in (("A", "up"), ("B", "down")):
            done = first(turns[key], "done")
            r = c.post(f"/api/messages/{done['message_id']}/feedback", json={"rating": rating})
            assert r.status_code == 200, r.text
        assert c.get(f"/api/admin/turns/{ids['A']}").json()["feedback"][0]["rating"] == "up"

        # --- stats ---------------------------------------------------------------------------------
        s = c.get(
            "/api/admin/stats", params={"date_from": today.isoformat(), "date_to": today.isoformat()}
        ).json()
        assert s["turns"] == 5
        layers: dict[str, int] = {}
        for ev in turns.values():
            layer = first(ev, "route")["layer"]
            layers[layer] = layers.get(layer, 0) + 1
        assert {r["layer"]: r["count"] for r in s["routing_layers"]} == layers
        assert sum(r["share"] for r in s["routing_layers"]) == pytest.approx(1.0, abs=1e-3)
        assert s["tool_calls"] == {"calls": 1, "turns_with_tool_call": 1, "rate": 0.2}
        assert s["top_k"] == {"calls": 1, "overridden": 1, "not_given_by_model": 0, "override_rate": 1.0}
        (day,) = s["degradations"]["days"]
        assert day["date"] == today.isoformat() and day["counts"] == {"knowledge_unavailable": 1}
        assert s["feedback"] == {"up": 1, "down": 1, "total": 2, "up_share": 0.5}
        # latency: the stored figures of the finished turns, per path, against the standard library
        rows = c.get("/api/admin/turns").json()["items"]
        for entry in s["latency"]:
            mine = [r for r in rows if (r["path"] or "none") == entry["path"]]
            totals = [r["duration_ms"] for r in mine]
            assert entry["count"] == len(totals)
            if len(totals) >= 2:
                q = statistics.quantiles(totals, n=100, method="inclusive")
                assert entry["total_ms"]["p50"] == pytest.approx(q[49], abs=0.01)
                assert entry["total_ms"]["p90"] == pytest.approx(q[89], abs=0.01)
            else:
                assert (
                    entry["total_ms"]["p50"] == entry["total_ms"]["p99"] == pytest.approx(totals[0], abs=0.01)
                )
        assert {e["path"] for e in s["latency"]} == {r["path"] or "none" for r in rows}
        empty = c.get("/api/admin/stats", params={"date_from": "2020-01-01", "date_to": "2020-01-31"}).json()
        assert (
            empty["turns"] == 0 and len(empty["degradations"]["days"]) == 31 and empty["routing_layers"] == []
        )
        assert (
            c.get("/api/admin/stats", params={"date_from": "2020-01-01", "date_to": "2022-01-01"}).status_code
            == 400
        )


def test_percentile_interpolates_like_the_standard_library() -> None:
    values = [120.0, 15.0, 300.5, 42.0, 42.0, 1000.0, 7.25]
    q = statistics.quantiles(values, n=100, method="inclusive")
    assert percentile(values, 50) == pytest.approx(q[49], abs=0.01)
    assert percentile(values, 90) == pytest.approx(q[89], abs=0.01)
    assert percentile(values, 99) == pytest.approx(q[98], abs=0.01)
    assert percentile([5.0], 99) == 5.0 and percentile([], 50) is None


def test_a_setting_changed_in_the_dashboard_applies_to_the_next_turn_with_an_audit_row(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    server = live_server()
    call = tool_calls(Call("searchKnowledge", {"query": "面試 準備", "top_k": 4}))
    fake_llm.script(call, text("一"), call, text("二"), call, text("三"))
    with admin_client(server) as c:
        before = chat(c, "面試怎麼準備")
        assert first(before, "tool_call")["effective_arguments"]["top_k"] == 4
        r = c.put("/api/admin/assistants/summer/settings/use_full_retrieval_range", json={"value": True})
        assert r.status_code == 200
        r = c.put("/api/admin/assistants/summer/settings/configured_top_k", json={"value": 7})
        shown = {s["key"]: s for s in r.json()["settings"]}
        assert shown["configured_top_k"]["value"] == 7 and shown["configured_top_k"]["source"] == "database"
        assert shown["configured_top_k"]["minimum"] == 1 and shown["configured_top_k"]["maximum"] == 50
        # the same server process, no restart: the next turn runs with 7
        after = chat(c, "面試怎麼準備")
        tc = first(after, "tool_call")
        assert tc["requested_arguments"]["top_k"] == 4 and tc["effective_arguments"]["top_k"] == 7
        assert "use_full_retrieval_range" in tc["reason"]
        assert first(after, "tool_result")["returned"] == 7

        # refused values say why, and change nothing
        for key, value, words in [
            ("configured_top_k", 0, "greater than or equal to 1"),
            ("configured_top_k", "many", "valid integer"),
            ("phase1_temperature", 3.5, "less than or equal to 2"),
            ("use_full_retrieval_range", "maybe", "true or false"),
            ("no_such_setting", 1, "unknown setting"),
        ]:
            r = c.put(f"/api/admin/assistants/summer/settings/{key}", json={"value": value})
            assert r.status_code == 400, (key, value, r.text)
            assert words in r.json()["error"]["message"], r.json()
        assert c.put("/api/admin/assistants/summer/settings/configured_top_k", json={}).status_code == 422
        assert c.get("/api/admin/assistants/nobody/settings").status_code == 404
        assert (
            c.put("/api/admin/assistants/nobody/settings/configured_top_k", json={"value": 3}).status_code
            == 404
        )

        # reset: back to the configuration default, audited as a change to null
        r = c.delete("/api/admin/assistants/summer/settings/use_full_retrieval_range")
        flag = next(s for s in r.json()["settings"] if s["key"] == "use_full_retrieval_range")
        assert flag == flag | {"value": False, "source": "default"}
        reset = chat(c, "面試怎麼準備")
        assert first(reset, "tool_call")["effective_arguments"]["top_k"] == 4

        log = c.get("/api/admin/assistants/summer/audit").json()
        assert log["total"] == 3
        rows = [(a["key"], a["old_value"], a["new_value"], a["changed_by"]) for a in log["items"]]
        assert rows == [
            ("use_full_retrieval_range", True, None, ADMIN),
            ("configured_top_k", None, 7, ADMIN),
            ("use_full_retrieval_range", None, True, ADMIN),
        ]
        when = datetime.fromisoformat(log["items"][0]["changed_at"])
        assert abs((datetime.now(UTC) - when).total_seconds()) < 600
        assistants = c.get("/api/admin/assistants").json()["assistants"]
        assert [(a["id"], a["name"], a["serving"]) for a in assistants] == [("summer", "Summer", True)]
        assert assistants[0]["turns"] == 3 and assistants[0]["overrides"] == 1


UPLOAD_MD = """---
title: 遠距工作的時區協作守則
domain: growth_skills
---
# 遠距工作的時區協作守則

## 重疊時段
跨時區團隊每天至少保留兩小時的重疊時段，用來開站立會議與即時討論。Summer 稱之為「黃金兩小時」。

## 非同步文件
其餘時間靠非同步文件協作：每個決策都寫成一頁紀錄，附上截止時間與負責人。
"""
UPLOAD_TXT = (
    "Quokka onboarding checklist\n\nEvery new hire at Quokka Labs pairs with a buddy for the first 30 days."
)


@pytest.mark.parametrize("db", ["sqlite", "postgresql"])
def test_knowledge_upload_with_progress_retrieval_test_reindex_and_delete(
    request: pytest.FixtureRequest, db: str, live_server: Callable[..., LiveServer]
) -> None:
    overrides = {"database_url": request.getfixturevalue("pg_database")} if db == "postgresql" else {}
    server = live_server(**overrides)
    with admin_client(server) as c:
        before = c.get("/api/admin/knowledge").json()
        assert before["status"]["state"] == "ready" and len(before["documents"]) == 33
        r = c.post(
            "/api/admin/knowledge/documents",
            files=[
                ("files", ("remote-time-zones.md", UPLOAD_MD.encode(), "text/markdown")),
                ("files", ("quokka onboarding.txt", UPLOAD_TXT.encode(), "text/plain")),
            ],
        )
        assert r.status_code == 200, r.text
        assert r.headers["content-type"].startswith("text/event-stream")
        events = parse_sse(r.text)
        progress = [d for n, d in events if n == "progress"]
        assert progress[0] == {
            "stage": "saved",
            "done": 0,
            "total": 2,
            "files": ["remote-time-zones.md", "quokka onboarding.txt"],
        }
        assert [p["done"] for p in progress if p["stage"] == "ingest"] == [1, 2]
        assert progress[-1]["stage"] == "reindex"
        name, done = events[-1]
        assert name == "done", events
        assert sorted(done["report"]["added"]) == ["quokka-onboarding", "remote-time-zones"]
        assert done["report"]["failed"] == {} and done["report"]["chunks_written"] >= 3
        assert (
            done["knowledge"]["state"] == "ready"
            and done["knowledge"]["version"] != before["status"]["version"]
        )

        docs = {d["id"]: d for d in c.get("/api/admin/knowledge").json()["documents"]}
        assert len(docs) == 35
        assert docs["remote-time-zones"]["title"] == "遠距工作的時區協作守則"
        assert (
            docs["remote-time-zones"]["domain"] == "growth_skills"
            and docs["remote-time-zones"]["chunks"] >= 2
        )

        # the retrieval test: the tool's own resolve() and run(), with Summer's settings
        r = c.post(
            "/api/admin/knowledge/search", json={"query": "跨時區團隊 重疊時段 黃金兩小時", "top_k": 4}
        )
        assert r.status_code == 200, r.text
        res = r.json()
        assert res["tool_call"]["requested_arguments"] == {
            "query": "跨時區團隊 重疊時段 黃金兩小時",
            "top_k": 4,
        }
        assert (
            res["tool_call"]["effective_arguments"]["top_k"] == 4
            and res["tool_call"]["reason"] == "as requested"
        )
        assert res["tool_result"]["returned"] == len(res["chunks"]) == 4
        assert res["chunks"][0]["id"] == "remote-time-zones" and res["chunks"][0]["rank"] == 1
        scores = [ch["score"] for ch in res["chunks"]]
        assert scores == sorted(scores, reverse=True)
        assert "黃金兩小時" in res["model_input"]
        # with the override on, the record says 12 and why, and 12 chunks come back
        c.put("/api/admin/assistants/summer/settings/use_full_retrieval_range", json={"value": True})
        res = c.post("/api/admin/knowledge/search", json={"query": "薪水談判", "top_k": 5}).json()
        call = res["tool_call"]
        assert call["requested_arguments"]["top_k"] == 5 and call["effective_arguments"]["top_k"] == 12
        assert "use_full_retrieval_range: configured_top_k=12 replaces 5" in call["reason"]
        assert res["tool_result"]["returned"] == len(res["chunks"]) == 12
        # no top_k at all: the default, then the override
        res = c.post("/api/admin/knowledge/search", json={"query": "薪水談判"}).json()
        assert res["tool_call"]["requested_arguments"] == {"query": "薪水談判"}
        assert (
            res["tool_call"]["reason"]
            == "top_k not given: default 3; use_full_retrieval_range: configured_top_k=12 replaces 3"
        )
        for bad in ({"query": ""}, {"query": "x" * 301}, {"query": "x", "top_k": "many"}, {"q": "x"}):
            assert c.post("/api/admin/knowledge/search", json=bad).status_code == 422, bad
        assert (
            c.post("/api/admin/knowledge/search", json={"query": "x", "assistant_id": "nobody"}).status_code
            == 404
        )

        # refused uploads: a clear status and message, nothing stored
        r = c.post(
            "/api/admin/knowledge/documents",
            files={"files": ("tool.exe", b"MZ\x90\x00", "application/octet-stream")},
        )
        assert r.status_code == 415 and ".pdf" in r.json()["error"]["message"]
        r = c.post("/api/admin/knowledge/documents", files={"files": ("..", b"x", "text/plain")})
        assert r.status_code in (400, 415)
        assert c.post("/api/admin/knowledge/documents").status_code == 422
        # a file that cannot be read is reported in the report, the others go in
        r = c.post(
            "/api/admin/knowledge/documents",
            files=[
                ("files", ("broken.md", b"\x00\x01binary", "text/markdown")),
                ("files", ("ok.md", b"# OK\n\nfine text here", "text/markdown")),
            ],
        )
        report = parse_sse(r.text)[-1][1]["report"]
        assert report["added"] == ["ok"] and list(report["failed"]) == ["broken.md"]
        assert (
            "binary" in report["failed"]["broken.md"]
            and str(server.services.settings.data_dir) not in report["failed"]["broken.md"]
        )

        # re-index and delete
        r = c.post("/api/admin/knowledge/reindex")
        assert r.status_code == 200 and r.json()["knowledge"]["state"] == "ready"
        r = c.delete("/api/admin/knowledge/documents/remote-time-zones")
        assert r.status_code == 200 and r.json()["deleted"] == "remote-time-zones"
        assert not (server.services.settings.data_dir / "uploads" / "remote-time-zones.md").exists()
        assert "remote-time-zones" not in {d["id"] for d in c.get("/api/admin/knowledge").json()["documents"]}
        res = c.post(
            "/api/admin/knowledge/search", json={"query": "跨時區團隊 重疊時段 黃金兩小時", "top_k": 3}
        ).json()
        assert all(ch["id"] != "remote-time-zones" for ch in res["chunks"])
        assert c.delete("/api/admin/knowledge/documents/remote-time-zones").status_code == 404


def test_a_broken_index_is_a_503_on_reindex_and_on_the_retrieval_test(
    live_server: Callable[..., LiveServer],
) -> None:
    server = live_server()
    with admin_client(server) as c:
        server.services.kb.mark_failed("RuntimeError: test: the index is gone")
        r = c.post("/api/admin/knowledge/search", json={"query": "薪水"})
        assert r.status_code == 503 and "the index is gone" in r.json()["error"]["message"]
        st = c.get("/api/admin/status").json()
        assert st["ok"] is False and st["knowledge"]["state"] == "failed"
        assert c.post("/api/admin/knowledge/reindex").status_code == 200  # a reload clears it
        assert c.get("/api/admin/status").json()["knowledge"]["state"] == "ready"


def test_api_keys_are_shown_once_and_revoked(live_server: Callable[..., LiveServer]) -> None:
    server = live_server()
    with admin_client(server) as c:
        r = c.post("/api/admin/apikeys", json={"name": "reporting script"})
        assert r.status_code == 201, r.text
        token, key = r.json()["token"], r.json()["key"]
        assert token.startswith("cw_") and token.startswith(key["prefix"]) and key["revoked_at"] is None
        listed = c.get("/api/admin/apikeys").json()["keys"]
        assert [k["id"] for k in listed] == [key["id"]] and token not in str(listed)
        with client(server) as sdk:
            assert sdk.get("/v1/models", headers={"Authorization": f"Bearer {token}"}).status_code == 200
            assert c.delete(f"/api/admin/apikeys/{key['id']}").json()["key"]["revoked_at"] is not None
            assert sdk.get("/v1/models", headers={"Authorization": f"Bearer {token}"}).status_code == 401
        assert c.post("/api/admin/apikeys", json={"name": "  "}).status_code == 400
        assert c.delete("/api/admin/apikeys/nope").status_code == 404


def test_cross_site_state_changes_are_refused(live_server: Callable[..., LiveServer]) -> None:
    server = live_server()
    with admin_client(server) as c:
        r = c.put(
            "/api/admin/assistants/summer/settings/configured_top_k",
            json={"value": 3},
            headers={"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
        )
        assert r.status_code == 403 and r.json()["error"]["code"] == "cross_site_refused"
        assert c.get("/api/admin/assistants/summer/audit").json()["total"] == 0
