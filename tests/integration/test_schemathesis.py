"""Schemathesis against the app's own OpenAPI schema, over a real uvicorn server, on every operation,
anonymous, as a user and as an administrator (so the routes are exercised past their 401 and 403): no
server error, no status the operation does not declare, no body that breaks the declared schema. At
most 300 derandomized cases; ``python -m bench hostile`` runs thousands with the same code
(tests/fuzz.py)."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from careerwise.config import Settings
from careerwise.knowledge.embeddings import Embedder
from careerwise.services import build_services
from tests.auth_helpers import PASSWORD, create_user
from tests.conftest import LiveServer
from tests.fakes.fake_llm import FakeLLM, text
from tests.fuzz import ROLES, fuzz

MAX_CASES = 300
ACCOUNTS = {"user": "fuzz-user@example.com", "admin": "fuzz-admin@example.com"}


@pytest.fixture(scope="module")
def fuzz_server(
    tmp_path_factory: pytest.TempPathFactory, corpus_db: Path, _fake_server: FakeLLM, embedder: Embedder
) -> Iterator[LiveServer]:
    _fake_server.reset()
    _fake_server.default = text("好的，這是回答。")
    data = tmp_path_factory.mktemp("fuzz")
    shutil.copy(corpus_db, data / "careerwise.db")
    config = Settings(  # type: ignore[call-arg]
        _env_file=None,
        environment="test",
        data_dir=data,
        llm_base_url=_fake_server.base_url,
        llm_model="fake-model",
        llm_read_timeout=5.0,
        turn_deadline=20.0,
        routing_llm=False,
        anonymous_chat_per_minute=0,
        user_chat_per_minute=0,
        login_per_minute=0,
        # configured, so the webhook answers 400 to the fuzzer's unsigned bodies (unconfigured it is a
        # deliberate 503); nothing is ever sent to this address, no signature can be right
        line_channel_secret="fuzz-channel-secret",
        line_channel_access_token="fuzz-token",
        line_api_base_url="http://127.0.0.1:9",
    )
    server = LiveServer(build_services(config, embedder=embedder)).start()
    asyncio.run(create_user(server.services, ACCOUNTS["user"]))
    asyncio.run(create_user(server.services, ACCOUNTS["admin"], admin=True))
    yield server
    server.stop()
    _fake_server.reset()


def test_every_operation_and_role_gets_no_server_error_and_only_declared_statuses(
    fuzz_server: LiveServer,
) -> None:
    def log_in(role: str, session: requests.Session) -> None:
        r = session.post(
            f"{fuzz_server.url}/api/auth/login", json={"email": ACCOUNTS[role], "password": PASSWORD}
        )
        assert r.status_code == 200, r.text

    sessions = {role: requests.Session() for role in ROLES}
    for role in ACCOUNTS:
        log_in(role, sessions[role])
    report = fuzz(fuzz_server.url, sessions, examples=1, negative_roles=("user", "admin"), log_in=log_in)
    print(f"\nschemathesis: {report.cases} cases over {len(report.operations)} operations: {report.statuses}")
    operations = requests.get(f"{fuzz_server.url}/openapi.json", timeout=30).json()["paths"]
    every = {f"{method.upper()} {path}" for path, item in operations.items() for method in item}
    assert report.operations == every
    assert report.failures() == [], "\n".join(report.failures())
    assert report.cases <= MAX_CASES
    # the sessions held: the user and the admin were answered past authentication, the anonymous not
    assert ("user", "GET /api/auth/me") in report.answered
    assert ("admin", "GET /api/admin/status") in report.answered
    assert ("anonymous", "GET /api/admin/status") not in report.answered
