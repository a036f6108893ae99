"""Accounts over real HTTP: sign-up, log-in, log-out, the cookie's flags, same answer for every wrong
credential, cross-site refusals, per-user conversations and the chat limits."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx
import pytest
from argon2 import extract_parameters
from sqlalchemy import func, select

from careerwise.config import Settings
from careerwise.store import Conversation, Database, LoginSession, User
from tests.auth_helpers import PASSWORD, create_user, login_sync
from tests.conftest import LiveServer, client
from tests.fakes.fake_llm import FakeLLM, text


def _count(server: LiveServer, model: type[User] | type[LoginSession] | type[Conversation]) -> int:
    async def run() -> int:
        db = Database(server.services.settings.resolved_database_url)
        try:
            async with db.session() as s:
                return int(await s.scalar(select(func.count()).select_from(model)) or 0)
        finally:
            await db.dispose()

    return asyncio.run(run())


def test_sign_up_log_out_log_in_and_the_cookie(live_server: Callable[..., LiveServer]) -> None:
    server = live_server()
    with client(server) as c:
        r = c.post("/api/auth/signup", json={"email": " Mei@Example.COM ", "password": PASSWORD})
        assert r.status_code == 201, r.text
        assert r.json()["email"] == "mei@example.com" and r.json()["role"] == "user"
        cookie = r.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=lax" in cookie and "path=/" in cookie
        assert "secure" not in cookie  # only in production (plain http on a laptop would drop it)
        assert c.get("/api/auth/me").json()["email"] == "mei@example.com"
        stolen = c.cookies.get("cw_session")

        assert c.post("/api/auth/logout").status_code == 204
        assert c.get("/api/auth/me").status_code == 401
    # the old cookie is dead on the server too, not only forgotten by this browser
    with client(server) as other:
        other.cookies.set("cw_session", stolen or "")
        assert other.get("/api/auth/me").status_code == 401
        login_sync(other, "MEI@example.com")
        assert other.get("/api/auth/me").status_code == 200


def test_passwords_are_argon2id_with_owasp_parameters(live_server: Callable[..., LiveServer]) -> None:
    server = live_server()
    with client(server) as c:
        assert (
            c.post("/api/auth/signup", json={"email": "a@example.com", "password": PASSWORD}).status_code
            == 201
        )

    async def stored() -> str:
        db = Database(server.services.settings.resolved_database_url)
        try:
            async with db.session() as s:
                return str(await s.scalar(select(User.password_hash)))
        finally:
            await db.dispose()

    h = asyncio.run(stored())
    assert PASSWORD not in h
    params = extract_parameters(h)
    assert (params.type.name, params.memory_cost, params.time_cost, params.parallelism) == ("ID", 19456, 2, 1)


def test_wrong_password_and_unknown_user_look_the_same(live_server: Callable[..., LiveServer]) -> None:
    server = live_server()
    asyncio.run(create_user(server.services, "known@example.com"))
    with client(server) as c:
        wrong = c.post("/api/auth/login", json={"email": "known@example.com", "password": "wrong password"})
        unknown = c.post(
            "/api/auth/login", json={"email": "nobody@example.com", "password": "wrong password"}
        )
        garbage = c.post("/api/auth/login", json={"email": "not an email", "password": "x"})
    assert wrong.status_code == unknown.status_code == garbage.status_code == 401
    assert wrong.json() == unknown.json() == garbage.json()
    assert "set-cookie" not in wrong.headers and "set-cookie" not in unknown.headers


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"email": "short@example.com", "password": "1234567"}, "at least 8"),
        ({"email": "no-at-sign", "password": PASSWORD}, "email"),
        ({"email": "x@example.com"}, "password"),
        ({"email": "x@example.com", "password": PASSWORD, "role": "admin"}, "role"),  # no self-promotion
    ],
)
def test_bad_sign_ups_get_a_clear_4xx(
    live_server: Callable[..., LiveServer], body: dict[str, str], fragment: str
) -> None:
    server = live_server()
    with client(server) as c:
        r = c.post("/api/auth/signup", json=body)
    assert r.status_code in (400, 422)
    assert fragment in r.json()["error"]["message"]
    assert _count(server, User) == 0


def test_a_second_sign_up_with_the_same_email_is_a_conflict(live_server: Callable[..., LiveServer]) -> None:
    server = live_server()
    with client(server) as c:
        assert (
            c.post("/api/auth/signup", json={"email": "a@example.com", "password": PASSWORD}).status_code
            == 201
        )
        r = c.post("/api/auth/signup", json={"email": "A@example.com", "password": PASSWORD + "!"})
    assert r.status_code == 409 and "log in" in r.json()["error"]["message"]
    assert _count(server, User) == 1


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "https://evil.example"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site", "Origin": "http://sub.127.0.0.1"},
    ],
)
def test_cross_site_state_changes_are_refused_before_anything_happens(
    live_server: Callable[..., LiveServer], fake_llm: FakeLLM, headers: dict[str, str]
) -> None:
    server = live_server()
    with client(server) as c:
        r = c.post("/api/auth/signup", json={"email": "a@example.com", "password": PASSWORD}, headers=headers)
        assert r.status_code == 403 and r.json()["error"]["code"] == "cross_site_refused"
        r = c.post("/api/chat", json={"message": "怎麼談薪水", "mode": "full"}, headers=headers)
        assert r.status_code == 403
    assert _count(server, User) == 0 and _count(server, Conversation) == 0
    assert fake_llm.requests == []


def test_same_origin_and_trusted_origins_pass(live_server: Callable[..., LiveServer]) -> None:
    server = live_server(trusted_origins=["https://coach.example.com"])
    with client(server) as c:
        same = {"Origin": server.url, "Sec-Fetch-Site": "same-origin"}
        assert (
            c.post(
                "/api/auth/signup", json={"email": "a@example.com", "password": PASSWORD}, headers=same
            ).status_code
            == 201
        )
        proxied = {"Origin": "https://coach.example.com"}
        assert c.post("/api/auth/logout", headers=proxied).status_code == 204


def test_a_forged_or_expired_cookie_is_anonymous(live_server: Callable[..., LiveServer]) -> None:
    server = live_server()
    asyncio.run(create_user(server.services, "a@example.com"))
    with client(server) as c:
        login_sync(c, "a@example.com")
        good = c.cookies.get("cw_session") or ""
        token, _, sig = good.rpartition(".")
        c.cookies.set("cw_session", token + "." + ("A" if sig[0] != "A" else "B") + sig[1:])
        assert c.get("/api/auth/me").status_code == 401

    # a session past its expiry is refused even with a valid signature
    async def expire() -> None:
        db = Database(server.services.settings.resolved_database_url)
        try:
            async with db.session() as s, s.begin():
                for row in (await s.scalars(select(LoginSession))).all():
                    row.expires_at = row.created_at
        finally:
            await db.dispose()

    asyncio.run(expire())
    with client(server) as c:
        c.cookies.set("cw_session", good)
        assert c.get("/api/auth/me").status_code == 401


def test_conversations_belong_to_their_user(
    live_server: Callable[..., LiveServer], fake_llm: FakeLLM
) -> None:
    server = live_server()
    asyncio.run(create_user(server.services, "a@example.com"))
    asyncio.run(create_user(server.services, "b@example.com"))
    fake_llm.script(text("你好，我是 Summer。"), text("再見。"))
    with client(server) as a, client(server) as b, client(server) as anon:
        login_sync(a, "a@example.com")
        login_sync(b, "b@example.com")
        r = a.post("/api/chat", json={"message": "怎麼談薪水", "mode": "full"})
        assert r.status_code == 200, r.text
        conv = r.json()["conversation_id"]
        for other in (b, anon):
            r = other.post("/api/chat", json={"message": "繼續", "mode": "full", "conversation_id": conv})
            assert r.status_code == 404
    assert len(fake_llm.requests) == 1


def test_anonymous_chat_is_limited_per_ip_and_users_are_not(
    live_server: Callable[..., LiveServer], fake_llm: FakeLLM
) -> None:
    server = live_server(anonymous_chat_per_minute=3)
    asyncio.run(create_user(server.services, "a@example.com"))
    for _ in range(5):
        fake_llm.script(text("好的。"))
    with client(server) as anon, client(server) as user:
        codes = [
            anon.post("/api/chat", json={"message": "你好", "mode": "full"}).status_code for _ in range(4)
        ]
        assert codes == [200, 200, 200, 429]
        r = anon.post("/api/chat", json={"message": "你好", "mode": "full"})
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
        assert "without an account" in r.json()["error"]["message"]
        login_sync(user, "a@example.com")
        assert user.post("/api/chat", json={"message": "你好", "mode": "full"}).status_code == 200


def test_log_in_attempts_are_limited(live_server: Callable[..., LiveServer]) -> None:
    server = live_server(login_per_minute=5)
    with client(server) as c:
        codes = [
            c.post("/api/auth/login", json={"email": "a@example.com", "password": f"guess {i}"}).status_code
            for i in range(7)
        ]
    assert codes == [401] * 5 + [429] * 2


def test_production_refuses_to_start_without_a_session_secret() -> None:
    with pytest.raises(ValueError, match="SESSION_SECRET"):
        Settings(_env_file=None, environment="production")  # type: ignore[call-arg]
    ok = Settings(_env_file=None, environment="production", session_secret="x" * 32)  # type: ignore[call-arg]
    assert ok.session_secret is not None


def test_users_create_admin_from_the_command_line(
    live_server: Callable[..., LiveServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from careerwise.cli import app
    from careerwise.config import get_settings

    server = live_server()
    settings = server.services.settings
    monkeypatch.setenv("CAREERWISE_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("CAREERWISE_NEW_USER_PASSWORD", PASSWORD)
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(app, ["users", "create", "boss@example.com", "--admin"])
        assert result.exit_code == 0, result.output
        again = CliRunner().invoke(app, ["users", "create", "boss@example.com"])
        assert again.exit_code == 2 and "already exists" in again.output
    finally:
        get_settings.cache_clear()
    with client(server) as c:
        login_sync(c, "boss@example.com")
        assert c.get("/api/auth/me").json()["role"] == "admin"


def test_anonymous_and_user_dependencies(live_server: Callable[..., LiveServer]) -> None:
    server = live_server()
    with httpx.Client(base_url=server.url) as c:
        r = c.get("/api/auth/me")
    assert r.status_code == 401 and r.json()["error"]["code"] == "not_authenticated"


def test_25_requests_at_20_a_minute_give_20_answers_and_5_refusals(
    live_server: Callable[..., LiveServer], fake_llm: FakeLLM
) -> None:
    server = live_server(user_chat_per_minute=20)
    asyncio.run(create_user(server.services, "busy@example.com"))
    asyncio.run(create_user(server.services, "calm@example.com"))
    fake_llm.default = text("好的。")
    with client(server) as busy, client(server) as calm:
        login_sync(busy, "busy@example.com")
        login_sync(calm, "calm@example.com")
        codes = [
            busy.post("/api/chat", json={"message": "你好", "mode": "full"}).status_code for _ in range(25)
        ]
        other = calm.post("/api/chat", json={"message": "你好", "mode": "full"})
    assert codes.count(200) == 20 and codes.count(429) == 5 and codes[:20] == [200] * 20
    assert other.status_code == 200  # another user in the same minute is unaffected
    assert len(fake_llm.requests) == 21  # a refused request never reaches the model
