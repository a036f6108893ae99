"""Assistants as data: the admin API creates, edits and disables them (audited, 4xx for bad input); a turn
names its assistant and runs with that assistant's persona, knowledge domains and settings, and its
trace and metrics carry the assistant's id; settings for the model, provider, temperatures and timeouts
reach the provider from the next turn, without a restart."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from careerwise.assistant_settings import AssistantSettings
from careerwise.assistants import ProfileIn, ProfileUpdate
from careerwise.cli import app
from careerwise.config import Settings, get_settings
from careerwise.engine import TurnRequest
from careerwise.errors import ConflictError, NotFoundError, UserInputError
from careerwise.events import DoneEvent, ErrorEvent, Event
from careerwise.routing.router import RouteDecision
from careerwise.services import Services
from careerwise.store import Document, Trace
from tests.conftest import LiveServer, parse_sse, ready
from tests.fakes.fake_llm import Call, FakeLLM, stall, text, tool_calls
from tests.integration.test_admin_api import ADMIN, USER, admin_client, make_user
from tests.integration.test_metrics import scrape, value

LI_PERSONA = "You are Li, a resume reviewer. Today is {today}. Answer in two sentences."


def system_prompt(request: dict[str, Any]) -> str:
    return str(next(m["content"] for m in request["messages"] if m["role"] == "system"))


async def drain(services: Services, req: TurnRequest) -> list[Event]:
    return [e async for e in services.engine.run(req)]


def test_admin_creates_edits_and_disables_an_assistant(live_server: Callable[..., LiveServer]) -> None:
    server = live_server()
    make_user(server, USER)
    with admin_client(server) as c:
        listed = c.get("/api/admin/assistants").json()
        summer = listed["assistants"][0]
        assert (summer["id"], summer["name"], summer["enabled"], summer["default"]) == (
            "summer",
            "Summer",
            True,
            True,
        )
        assert summer["system_prompt"] == "" and summer["knowledge_domains"] == ["all"]
        assert "resume" in listed["knowledge_domains"]

        body = {
            "id": "coach-li",
            "name": "Li",
            "description": "Resume reviews",
            "knowledge_domains": ["resume"],
        }
        r = c.post("/api/admin/assistants", json=body)
        assert r.status_code == 201, r.text
        assert r.json()["assistant"]["knowledge_domains"] == ["resume"]
        assert c.post("/api/admin/assistants", json=body).status_code == 409  # the id is taken
        for bad in (
            {"id": "Coach Li!", "name": "Li"},  # bad id format
            {"id": "x", "name": "Li"},  # too short
            {"id": "coach-wu", "name": ""},  # no name
            {"id": "coach-wu", "name": "Wu", "knowledge_domains": ["astrology"]},  # unknown domain
            {"id": "coach-wu", "name": "Wu", "colour": "red"},  # unknown field
        ):
            assert c.post("/api/admin/assistants", json=bad).status_code == 422, bad

        r = c.patch("/api/admin/assistants/coach-li", json={"system_prompt": LI_PERSONA, "enabled": False})
        assert r.status_code == 200, r.text
        assert r.json()["assistant"]["enabled"] is False and r.json()["assistant"]["updated_by"] == ADMIN
        assert c.patch("/api/admin/assistants/nobody", json={"enabled": False}).status_code == 404
        r = c.patch("/api/admin/assistants/summer", json={"enabled": False})
        assert r.status_code == 409 and "cannot be disabled" in r.json()["error"]["message"]

        audit = c.get("/api/admin/assistants/coach-li/audit").json()["items"]
        keys = sorted(i["key"] for i in audit)
        assert keys == ["profile.created", "profile.enabled", "profile.system_prompt"]
        enabled = next(i for i in audit if i["key"] == "profile.enabled")
        assert (enabled["old_value"], enabled["new_value"], enabled["changed_by"]) == (True, False, ADMIN)
        ids = [a["id"] for a in c.get("/api/admin/assistants").json()["assistants"]]
        assert ids == ["summer", "coach-li"]

    # only an administrator may read or change them
    from tests.auth_helpers import login_sync
    from tests.conftest import client

    with client(server) as c:
        assert c.get("/api/admin/assistants").status_code == 401
        login_sync(c, USER)
        assert c.post("/api/admin/assistants", json={"id": "coach-wu", "name": "Wu"}).status_code == 403


def test_a_turn_runs_with_the_assistant_it_names(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    server = live_server()
    with admin_client(server) as c:
        r = c.post(
            "/api/admin/assistants",
            json={
                "id": "coach-li",
                "name": "Li",
                "system_prompt": LI_PERSONA,
                "knowledge_domains": ["resume"],
            },
        )
        assert r.status_code == 201, r.text
        fake_llm.script(
            tool_calls(Call("searchKnowledge", {"query": "履歷 自傳 怎麼寫", "top_k": 5}, id="c1")),
            text("先寫成果，再寫職責。"),
        )
        r = c.post("/api/chat", json={"message": "怎麼談薪水？", "assistant": "coach-li"})
        assert r.status_code == 200, r.text
        events = parse_sse(r.text)
        asked = fake_llm.requests[-2]  # the first round, which offered the tool
        assert system_prompt(asked).startswith("You are Li, a resume reviewer. Today is 20")
        assert "Summer" not in system_prompt(asked)
        result = next(d for n, d in events if n == "tool_result")
        trace_id = next(d for n, d in events if n == "done")["trace_id"]

        # Summer, when no assistant is named, exactly as before
        fake_llm.script(text("你好！"))
        r = c.post("/api/chat", json={"message": "你好"})
        assert r.status_code == 200
        assert system_prompt(fake_llm.requests[-1]).startswith("你是 Summer")

        r = c.post("/api/chat", json={"message": "你好", "assistant": "nobody"})
        assert r.status_code == 404 and "nobody" in r.json()["error"]["message"]
        c.patch("/api/admin/assistants/coach-li", json={"enabled": False})
        r = c.post("/api/chat", json={"message": "你好", "assistant": "coach-li"})
        assert r.status_code == 409 and "disabled" in r.json()["error"]["message"]

    assert result["ok"] and result["sources"], result
    source_ids = {s["id"] for s in result["sources"]}

    async def stored() -> tuple[Trace | None, set[str]]:
        async with server.services.db.session() as s:
            trace = await s.get(Trace, trace_id)
            domains = set((await s.scalars(select(Document.domain).where(Document.id.in_(source_ids)))).all())
        return trace, domains

    from tests.integration.test_admin_api import run_async

    trace, domains = run_async(stored)
    assert trace is not None and trace.assistant_id == "coach-li"
    assert domains == {"resume"}  # only Li's part of the knowledge base was searched
    m = scrape(server)
    assert value(m, "careerwise_turns_total", assistant="coach-li") == 1
    assert value(m, "careerwise_turns_total", assistant="summer") == 1


async def test_model_provider_and_temperature_settings_reach_the_provider_on_the_next_turn(
    make_services: Callable[..., Services], fake_llm: FakeLLM
) -> None:
    services = await ready(
        make_services(llm_fallback_base_url=fake_llm.base_url, llm_fallback_model="fallback-model")
    )
    store = services.assistant_settings
    fake_llm.script(text("好的。"), text("好的。"), text("好的。"))
    await drain(services, TurnRequest(message="你好"))
    assert fake_llm.requests[-1]["model"] == "fake-model"

    await store.set("llm_model", "bigger-model", changed_by="test")
    await store.set("phase1_temperature", "0.15", changed_by="test")
    events = await drain(services, TurnRequest(message="你好"))
    assert fake_llm.requests[-1]["model"] == "bigger-model"
    assert fake_llm.requests[-1]["temperature"] == 0.15
    done = events[-1]
    assert isinstance(done, DoneEvent)
    async with services.db.session() as s:
        trace = await s.get(Trace, done.trace_id)
    assert trace is not None and trace.model == "bigger-model"  # the trace says who answered

    await store.reset("llm_model", changed_by="test")
    await store.set("llm_provider", "fallback", changed_by="test")
    await drain(services, TurnRequest(message="你好"))
    assert fake_llm.requests[-1]["model"] == "fallback-model"

    with pytest.raises(UserInputError, match="not configured here"):
        await store.set("llm_provider", "somewhere-else", changed_by="test")
    assert set(services.providers.names()) >= {"primary", "fallback"}


async def test_a_turn_uses_the_configured_values_the_assistant_does_not_set(
    make_services: Callable[..., Services], fake_llm: FakeLLM
) -> None:
    services = await ready(make_services(phase1_max_tokens=100, phase1_temperature=0.4))
    store = services.assistant_settings
    await store.set("phase1_temperature", "0.15", changed_by="test")
    assistant = await store.for_turn()
    assert assistant.overridden == {"phase1_temperature"}  # only the database's row is the assistant's own
    assert (await store.effective()).values.overridden == {"phase1_temperature"}
    options = services.engine.options.with_assistant(assistant)
    assert (options.phase1_max_tokens, options.phase1_temperature) == (100, 0.15)

    fake_llm.script(text("先查行情，再開價。"))
    route = RouteDecision(intent="career", tier="simple", layer="test", reasons=["phase 1 on its own"])
    flow = services.engine.flows.lookup("career", "simple")
    await drain(services, TurnRequest(message="怎麼談薪水？", route=route, flow=flow))
    first = fake_llm.requests[0]  # phase 1 of the streamed tool-use flow
    assert (first["max_tokens"], first["temperature"]) == (100, 0.15)


async def test_a_turn_deadline_from_the_database_applies_on_the_next_turn(
    make_services: Callable[..., Services], fake_llm: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    services = await ready(make_services(turn_deadline=20.0, llm_read_timeout=15.0))
    shown = await services.assistant_settings.effective()
    assert shown.values.turn_deadline == 20.0 and shown.sources["turn_deadline"] == "environment"
    await services.assistant_settings.set("turn_deadline", "1", changed_by="test")
    fake_llm.script(stall(5.0))
    with caplog.at_level(logging.WARNING, logger="careerwise.engine"):
        events = await drain(services, TurnRequest(message="你好"))
    err = next(e for e in events if isinstance(e, ErrorEvent))
    assert err.code == "llm_timeout"
    assert "the turn took longer than 1 s" in caplog.text  # the database's 1 s, not the configured 20 s


async def test_unknown_and_disabled_assistants_store_nothing(
    make_services: Callable[..., Services], fake_llm: FakeLLM
) -> None:
    services = await ready(make_services())
    profiles = services.assistant_settings.assistants
    await profiles.create(ProfileIn(id="coach-li", name="Li"), changed_by="test")
    with pytest.raises(ConflictError):
        await profiles.create(ProfileIn(id="coach-li", name="Li again"), changed_by="test")
    await profiles.update("coach-li", ProfileUpdate(enabled=False), changed_by="test")
    with pytest.raises(NotFoundError):
        await drain(services, TurnRequest(message="你好", assistant="nobody"))
    with pytest.raises(ConflictError):
        await drain(services, TurnRequest(message="你好", assistant="coach-li"))
    async with services.db.session() as s:
        assert (await s.scalars(select(Trace))).all() == []
    assert fake_llm.requests == []


def test_deep_flow_temperature_defaults_are_the_seeds() -> None:
    defaults = AssistantSettings()
    assert defaults.deep_agent_temperature == 0.3  # seed 001: agents low, for stable analysis
    assert defaults.deep_merge_temperature == 0.5  # the merge a little higher, still conservative


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch, make_settings: Callable[..., Settings]) -> Iterator[Settings]:
    settings = make_settings()  # the CLI reads the environment, as a user's shell would give it
    monkeypatch.setenv("CAREERWISE_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("CAREERWISE_LLM_BASE_URL", str(settings.llm_base_url))
    get_settings.cache_clear()
    yield settings
    get_settings.cache_clear()


def test_the_cli_lists_creates_and_updates_assistants(cli_env: Settings) -> None:
    runner = CliRunner()
    made = runner.invoke(app, ["assistants", "create", "coach-li", "--name", "Li", "--domain", "resume"])
    assert made.exit_code == 0, made.output
    assert json.loads(made.stdout)["knowledge_domains"] == ["resume"]
    taken = runner.invoke(app, ["assistants", "create", "coach-li", "--name", "Li"])
    assert taken.exit_code == 2 and "already exists" in taken.stderr
    bad = runner.invoke(app, ["assistants", "create", "Coach Li", "--name", "Li"])
    assert bad.exit_code == 2 and "id:" in bad.stderr
    off = runner.invoke(app, ["assistants", "update", "coach-li", "--disable", "--by", "ops@example.com"])
    assert off.exit_code == 0 and json.loads(off.stdout)["updated_by"] == "ops@example.com"
    listed = runner.invoke(app, ["assistants", "list"])
    assert listed.exit_code == 0
    assert [line.split()[:3] for line in listed.stdout.splitlines()] == [
        ["summer", "Summer", "enabled"],
        ["coach-li", "Li", "disabled"],
    ]
