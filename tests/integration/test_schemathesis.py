"""Schemathesis against the app's own OpenAPI schema, over a real uvicorn server, logged in as an
administrator (so the admin routes are exercised past their 401): thousands of generated requests, no
server error and no response that breaks the documented schema."""

from __future__ import annotations

import asyncio
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from careerwise.config import Settings
from careerwise.knowledge.embeddings import Embedder
from careerwise.services import build_services
from tests.auth_helpers import PASSWORD, create_user
from tests.conftest import LiveServer
from tests.fakes.fake_llm import FakeLLM, text

POSITIVE, NEGATIVE = 40, 15  # examples per operation: valid requests, and requests that break the schema
# re-embedding the whole corpus on every generated request would only measure the embedder
EXCLUDED = {("POST", "/api/admin/knowledge/reindex")}


@pytest.fixture(scope="module")
def fuzz_server(
    tmp_path_factory: pytest.TempPathFactory, corpus_db: Path, _fake_server: FakeLLM, embedder: Embedder
) -> Iterator[tuple[LiveServer, requests.Session]]:
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
    asyncio.run(create_user(server.services, "fuzz-admin@example.com", admin=True))
    session = requests.Session()
    r = session.post(
        f"{server.url}/api/auth/login", json={"email": "fuzz-admin@example.com", "password": PASSWORD}
    )
    assert r.status_code == 200
    yield server, session
    server.stop()
    _fake_server.reset()


def _fuzz(
    operation: schemathesis.APIOperation,
    mode: GenerationMode,
    examples: int,
    server: LiveServer,
    session: requests.Session,
    sent: Counter[str],
) -> None:
    @settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,  # the same requests every run: a failure here is reproducible
        database=None,
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def check(case: schemathesis.Case) -> None:
        sent[operation.label] += 1
        case.call_and_validate(
            base_url=server.url, session=session, checks=[not_a_server_error, response_schema_conformance]
        )

    check()


def test_generated_requests_get_no_server_error_and_match_the_schema(
    fuzz_server: tuple[LiveServer, requests.Session],
) -> None:
    server, session = fuzz_server
    schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")
    sent: Counter[str] = Counter()
    failures: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()
        if (operation.method.upper(), operation.path) in EXCLUDED:
            continue
        for mode, examples in ((GenerationMode.POSITIVE, POSITIVE), (GenerationMode.NEGATIVE, NEGATIVE)):
            try:
                _fuzz(operation, mode, examples, server, session, sent)
            except Unsatisfiable:
                continue  # no parameter to break (negative mode on an operation without input)
            except (Exception, BaseExceptionGroup) as exc:  # noqa: BLE001 - each failure is collected
                failures.append(f"{operation.label} ({mode.value}): {str(exc)[:800]}")
    total = sum(sent.values())
    print(f"\nschemathesis: {total} generated requests over {len(sent)} operations")
    assert failures == [], "\n\n".join(failures)
    assert total >= 2000
