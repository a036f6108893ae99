"""The HTTP edge's hardening, on small apps built from the real pieces: the body limit (413 before a
byte is stored), the error envelope on the framework's refusals (405) and on a locked SQLite file (503
with Retry-After), the Origin check's scheme, strict request bodies, the API docs off in production,
and database files readable by their owner only."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import ValidationError
from sqlalchemy import create_engine, text

from careerwise.api import errors
from careerwise.api.admin_bookings import AvailabilitySettingsIn, ExceptionIn
from careerwise.api.admin_knowledge import RetrievalTest
from careerwise.api.auth import CrossSiteGuard
from careerwise.api.body_limit import BodyLimit
from careerwise.api.bookings import BookIn
from careerwise.api.chat import ChatIn
from careerwise.api.openai_compat import ChatCompletionIn
from careerwise.app import create_app
from careerwise.config import Settings
from careerwise.store import Database


def _app(stored: list[Any]) -> FastAPI:
    app = FastAPI()
    errors.install(app)
    app.add_middleware(BodyLimit, default=100, routes={"/big": 1000})

    @app.post("/small")
    async def small(body: dict[str, Any]) -> dict[str, int]:
        stored.append(body)
        return {"n": len(stored)}

    @app.post("/big")
    async def big(body: dict[str, Any]) -> dict[str, int]:
        stored.append(body)
        return {"n": len(stored)}

    return app


def test_a_body_over_the_routes_limit_is_refused_413_and_nothing_is_stored() -> None:
    stored: list[Any] = []
    payload = b'{"x": "' + b"a" * 200 + b'"}'
    with TestClient(_app(stored)) as c:
        declared = c.post("/small", content=payload, headers={"content-type": "application/json"})
        # no Content-Length (chunked): counted as it arrives
        chunked = c.post(
            "/small", content=iter([payload[:50], payload[50:]]), headers={"content-type": "application/json"}
        )
        bigger_route = c.post("/big", content=payload, headers={"content-type": "application/json"})
    for r in (declared, chunked):
        assert r.status_code == 413, r.text
        assert r.json()["error"]["code"] == "payload_too_large"
        assert "100" in r.json()["error"]["message"]
    assert "content-length" not in chunked.request.headers
    assert bigger_route.status_code == 200
    assert len(stored) == 1  # only the route with the larger limit stored its body


def test_405_and_404_bodies_are_the_error_envelope() -> None:
    with TestClient(_app([])) as c:
        wrong_method = c.get("/small")
        unknown = c.get("/nowhere")
    assert wrong_method.status_code == 405
    assert wrong_method.json() == {"error": {"code": "method_not_allowed", "message": "Method Not Allowed"}}
    assert wrong_method.headers["allow"] == "POST"
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not_found"


def test_a_locked_sqlite_file_is_a_503_with_retry_after(tmp_path: Path) -> None:
    path = tmp_path / "locked.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x INTEGER)")
    holder.execute("BEGIN EXCLUSIVE")  # another process's lock, as a backup or a stuck writer holds it
    engine = create_engine(f"sqlite:///{path}", connect_args={"timeout": 0})
    app = FastAPI()
    errors.install(app)

    @app.post("/write")
    async def write() -> dict[str, str]:
        with engine.begin() as connection:
            connection.execute(text("INSERT INTO t VALUES (1)"))
        return {"ok": "yes"}

    try:
        with TestClient(app) as c:
            r = c.post("/write")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        engine.dispose()
    assert r.status_code == 503
    assert r.json()["error"]["code"] == "database_busy"
    assert int(r.headers["retry-after"]) >= 1
    with sqlite3.connect(path) as check:
        assert check.execute("SELECT count(*) FROM t").fetchone() == (0,)


@pytest.fixture
def guarded() -> Iterator[TestClient]:
    app = FastAPI()
    app.add_middleware(CrossSiteGuard)

    @app.post("/act")
    async def act() -> dict[str, bool]:
        return {"done": True}

    with TestClient(app, base_url="http://testserver") as c:
        yield c


@pytest.mark.parametrize(
    ("origin", "status"),
    [
        ("http://testserver", 200),
        ("http://testserver:80", 200),  # the scheme's default port, written out
        ("https://testserver", 403),  # same host, other scheme: another origin
        ("http://testserver:8080", 403),
        ("http://evil.example", 403),
    ],
)
def test_the_origin_check_compares_scheme_host_and_port(
    guarded: TestClient, origin: str, status: int
) -> None:
    r = guarded.post("/act", headers={"Origin": origin})
    assert r.status_code == status, r.text
    if status == 403:
        assert r.json()["error"]["code"] == "cross_site_refused"


@pytest.mark.parametrize(
    ("model", "body"),
    [
        (AvailabilitySettingsIn, {"slot_minutes": True}),
        (AvailabilitySettingsIn, {"horizon_days": "30"}),
        (AvailabilitySettingsIn, {"min_notice_minutes": 60.0}),
        (ExceptionIn, {"day": 0, "kind": "closed"}),
        (ExceptionIn, {"day": "0", "kind": "closed"}),
        (BookIn, {"slot_start": 0, "name": "a", "contact": "a@example.com"}),
        (BookIn, {"slot_start": "1700000000", "name": "a", "contact": "a@example.com"}),
        (ChatIn, {"message": 5}),
        (ChatIn, {"message": "hi", "history": [{"role": "user", "content": 1}]}),
        (RetrievalTest, {"query": "薪水", "top_k": True}),
        (RetrievalTest, {"query": "薪水", "top_k": "4"}),
        (
            ChatCompletionIn,
            {"model": "summer", "messages": [{"role": "user", "content": "hi"}], "stream": "true"},
        ),
        (ChatCompletionIn, {"model": "summer", "messages": [{"role": "user", "content": "hi"}], "n": 1.0}),
    ],
)
def test_request_bodies_refuse_coercions(model: type[Any], body: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        model.model_validate(body)  # FastAPI validates the parsed JSON the same way (Python mode)


def test_json_natural_values_still_validate() -> None:
    assert ExceptionIn.model_validate({"day": "2026-12-02", "kind": "closed"}).day.isoformat() == "2026-12-02"
    book = BookIn.model_validate({"slot_start": "2026-12-02T06:00:00Z", "name": "a", "contact": "a@b.co"})
    assert book.slot_start.utcoffset() is not None
    assert AvailabilitySettingsIn.model_validate({"slot_minutes": 30}).slot_minutes == 30
    assert RetrievalTest.model_validate({"query": "薪水", "top_k": 4}).top_k == 4
    # an OpenAI client's extra fields are still accepted; the known ones keep their JSON types
    chat = ChatCompletionIn.model_validate(
        {
            "model": "summer",
            "messages": [{"role": "user", "content": "hi"}],
            "stream": True,
            "temperature": 0.2,
        }
    )
    assert chat.stream is True


def _settings(tmp_path: Path, **values: Any) -> Settings:
    return Settings(_env_file=None, data_dir=tmp_path, **values)  # type: ignore[call-arg]


def test_api_docs_are_off_in_production_and_on_in_development(tmp_path: Path) -> None:
    prod = create_app(_settings(tmp_path, environment="production", session_secret="s" * 40))
    dev = create_app(_settings(tmp_path, environment="development"))
    # outside ``with``: no lifespan, no services; these routes need none
    production, development = TestClient(prod), TestClient(dev)
    for path in ("/openapi.json", "/docs", "/redoc"):
        assert production.get(path).status_code == 404, path
        assert development.get(path).status_code == 200, path
    assert "/api/chat" in development.get("/openapi.json").json()["paths"]


def test_the_sqlite_file_and_its_wal_are_created_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "data" / "careerwise.db"
    old_umask = os.umask(0o022)  # the usual umask, which would leave a new file 0644
    try:

        async def write() -> None:
            db = Database(f"sqlite+aiosqlite:///{path}")
            try:
                async with db.session() as s, s.begin():
                    await s.execute(text("CREATE TABLE t (x INTEGER)"))
                    await s.execute(text("INSERT INTO t VALUES (1)"))
                modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in path.parent.iterdir()}
                assert {"careerwise.db", "careerwise.db-wal", "careerwise.db-shm"} <= set(modes), modes
                assert set(modes.values()) == {0o600}, modes
            finally:
                await db.dispose()

        asyncio.run(write())
    finally:
        os.umask(old_umask)


def test_an_existing_world_readable_database_is_narrowed(tmp_path: Path) -> None:
    path = tmp_path / "careerwise.db"
    path.write_bytes(b"")
    path.chmod(0o644)
    db = Database(f"sqlite+aiosqlite:///{path}")
    asyncio.run(db.dispose())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
