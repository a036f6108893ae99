"""Assistants on every channel, over real HTTP: the OpenAI-compatible endpoint (``model`` names the
assistant), the LINE bot (``CAREERWISE_LINE_ASSISTANT``) and resume uploads (``assistant``). The chosen
assistant's persona (or settings, for the resume review's own task prompts) reaches the fake provider, and
the trace, the conversation and the metrics carry its id; an unknown or disabled one is a 4xx (LINE: the
usual failure reply, logged and counted) with nothing stored; a request that names none gets Summer."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import openai
import pytest
from pydantic import ValidationError
from sqlalchemy import func, select

from careerwise.assistants import AssistantStore, ProfileIn, ProfileUpdate
from careerwise.config import Settings
from careerwise.store import Conversation, Database, LineEventRecord, Resume, Trace
from tests.conftest import LiveServer, client, on_db
from tests.fakes.fake_line import FakeLine
from tests.fakes.fake_llm import FakeLLM, text
from tests.fixtures.resume_files import resume_pdf
from tests.integration.test_admin_api import admin_client
from tests.integration.test_line_webhook import (
    SECRET,
    TOKEN,
    message_event,
    post_events,
    query,
    settled,
    wait_until,
)
from tests.integration.test_metrics import scrape, value
from tests.integration.test_openai_compat import sdk_client
from tests.integration.test_resumes import responder, server_for

LI_PERSONA = "You are Li, a negotiation coach. Today is {today}. Answer in two sentences."


def system_prompt(request: dict[str, Any]) -> str:
    return str(next(m["content"] for m in request["messages"] if m["role"] == "system"))


def add_assistant(server: LiveServer, assistant_id: str, *, enabled: bool = True, persona: str = "") -> None:
    """An assistant in the server's database, through a handle of its own (as an admin's CLI would)."""
    profile = ProfileIn(id=assistant_id, name=assistant_id.title(), system_prompt=persona, enabled=enabled)
    on_db(server, lambda db: AssistantStore(db).create(profile, changed_by="test"))


def set_enabled(server: LiveServer, assistant_id: str, enabled: bool) -> None:
    on_db(
        server,
        lambda db: AssistantStore(db).update(assistant_id, ProfileUpdate(enabled=enabled), changed_by="test"),
    )


def count(server: LiveServer, model: type[Any]) -> int:
    [(n,)] = query(server, select(func.count()).select_from(model))
    return int(n)


def trace_of(server: LiveServer, trace_id: str) -> tuple[str, str, str]:
    """(channel, the trace's assistant, its conversation's assistant)."""
    [row] = query(
        server,
        select(Trace.channel, Trace.assistant_id, Conversation.assistant_id)
        .join(Conversation, Conversation.id == Trace.conversation_id)
        .where(Trace.id == trace_id),
    )
    return row[0], row[1], row[2]


# ---------------------------------------------------------------- the OpenAI-compatible endpoint


@pytest.fixture
def openai_server(live_server: Callable[..., LiveServer]) -> Iterator[tuple[LiveServer, openai.OpenAI]]:
    server = live_server()
    add_assistant(server, "coach-li", persona=LI_PERSONA)
    add_assistant(server, "coach-wu", enabled=False, persona="You are Wu.")
    with sdk_client(server) as oa:
        yield server, oa


def test_models_are_the_enabled_assistants(openai_server: tuple[LiveServer, openai.OpenAI]) -> None:
    server, oa = openai_server
    assert [m.id for m in oa.models.list()] == ["summer", "coach-li"]  # coach-wu is disabled
    assert oa.models.retrieve("coach-li").owned_by == "careerwise"
    with pytest.raises(openai.NotFoundError):
        oa.models.retrieve("coach-wu")
    set_enabled(server, "coach-wu", True)  # applies on the next request, no restart
    assert [m.id for m in oa.models.list()] == ["summer", "coach-li", "coach-wu"]


def test_the_model_field_picks_the_assistant_streaming_or_not(
    fake_llm: FakeLLM, openai_server: tuple[LiveServer, openai.OpenAI]
) -> None:
    server, oa = openai_server
    fake_llm.script(text("先問預算。"), text("再開價。", chunk_size=2), text("先探再錨。"))
    question = [{"role": "user", "content": "怎麼談薪水？"}]
    completion = oa.chat.completions.create(model="coach-li", messages=question)  # type: ignore[arg-type]
    assert completion.model == "coach-li"
    assert system_prompt(fake_llm.requests[-1]).startswith("You are Li, a negotiation coach. Today is 20")
    assert "Summer" not in system_prompt(fake_llm.requests[-1])
    extra = (completion.model_extra or {})["careerwise"]
    assert trace_of(server, extra["trace_id"]) == ("openai", "coach-li", "coach-li")

    chunks = list(oa.chat.completions.create(model="coach-li", messages=question, stream=True))  # type: ignore[arg-type]
    assert {c.model for c in chunks} == {"coach-li"}
    assert system_prompt(fake_llm.requests[-1]).startswith("You are Li")

    # a client that names summer gets her, exactly as before
    completion = oa.chat.completions.create(model="summer", messages=question)  # type: ignore[arg-type]
    assert completion.model == "summer"
    assert "Summer" in system_prompt(fake_llm.requests[-1])
    extra = (completion.model_extra or {})["careerwise"]
    assert trace_of(server, extra["trace_id"]) == ("openai", "summer", "summer")

    m = scrape(server)
    assert value(m, "careerwise_turns_total", assistant="coach-li", channel="openai") == 2
    assert value(m, "careerwise_turns_total", assistant="summer", channel="openai") == 1


def test_unknown_and_disabled_models_are_openai_errors_with_nothing_stored(
    fake_llm: FakeLLM, openai_server: tuple[LiveServer, openai.OpenAI]
) -> None:
    server, oa = openai_server
    question = [{"role": "user", "content": "怎麼談薪水？"}]
    for stream in (False, True):
        with pytest.raises(openai.NotFoundError) as unknown:
            oa.chat.completions.create(model="gpt-4o", messages=question, stream=stream)  # type: ignore[call-overload]
        assert unknown.value.code == "model_not_found" and unknown.value.param == "model"
        with pytest.raises(openai.ConflictError) as disabled:
            oa.chat.completions.create(model="coach-wu", messages=question, stream=stream)  # type: ignore[call-overload]
        assert disabled.value.code == "model_disabled" and "disabled" in disabled.value.message
    with client(server) as c:
        r = c.post(
            "/v1/chat/completions",
            json={"model": "x" * 300, "messages": question},
            headers={"Authorization": f"Bearer {oa.api_key}"},
        )
    assert r.status_code == 400 and r.json()["error"]["param"] == "model"
    assert count(server, Trace) == 0 and count(server, Conversation) == 0
    assert fake_llm.requests == []


# ---------------------------------------------------------------- LINE


@pytest.fixture
def fake_line() -> Iterator[FakeLine]:
    with FakeLine(access_token=TOKEN) as fake:
        yield fake


def line_server(live_server: Callable[..., LiveServer], fake_line: FakeLine, assistant: str) -> LiveServer:
    return live_server(
        line_channel_secret=SECRET,
        line_channel_access_token=TOKEN,
        line_api_base_url=fake_line.base_url,
        line_assistant=assistant,
    )


def test_line_answers_with_the_configured_assistant(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer], fake_line: FakeLine
) -> None:
    server = line_server(live_server, fake_line, "coach-li")
    add_assistant(server, "coach-li", persona=LI_PERSONA)  # after start-up: each turn reads it fresh
    fake_llm.script(text("先問預算，再開價。"))
    with client(server) as c:
        assert post_events(c, message_event("怎麼談薪水？")).status_code == 200
    fake_line.wait_for(lambda: fake_line.replies)
    assert fake_line.replies[0].texts[0].startswith("先問預算，再開價。")
    assert system_prompt(fake_llm.requests[0]).startswith("You are Li, a negotiation coach.")
    wait_until(lambda: settled(server))
    [(status, trace_id)] = query(server, select(LineEventRecord.status, LineEventRecord.trace_id))
    assert status == "answered"
    assert trace_of(server, trace_id) == ("line", "coach-li", "coach-li")
    assert value(scrape(server), "careerwise_turns_total", assistant="coach-li", channel="line") == 1


def test_a_missing_or_disabled_line_assistant_is_logged_counted_and_answered_never_silent(
    fake_llm: FakeLLM,
    live_server: Callable[..., LiveServer],
    fake_line: FakeLine,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR, logger="careerwise.channels.line"):
        server = line_server(live_server, fake_line, "coach-li")
        # at start-up: logged with the setting's name, and the app still starts
        wait_until(lambda: "does not exist" in caplog.text)
        assert "CAREERWISE_LINE_ASSISTANT" in caplog.text and "at start-up" in caplog.text

        add_assistant(server, "coach-li", enabled=False, persona=LI_PERSONA)
        with client(server) as c:
            post_events(c, message_event("怎麼談薪水？"))
        fake_line.wait_for(lambda: fake_line.replies)
        assert fake_line.replies[0].texts == ["系統發生錯誤，已記錄，請稍後再試。"]  # the usual failure line
        wait_until(lambda: settled(server))
        [(status, delivery, error)] = query(
            server, select(LineEventRecord.status, LineEventRecord.delivery, LineEventRecord.error)
        )
        assert (status, delivery) == ("failed", "reply")
        assert error is not None and "'coach-li'" in error and "disabled" in error
        assert "is disabled" in caplog.text
    assert fake_llm.requests == [] and count(server, Trace) == 0 and count(server, Conversation) == 0
    m = scrape(server)
    assert value(m, "careerwise_errors_total", code="line_assistant_unavailable") == 2  # start-up, message

    # enabled by an admin: the next message is answered by her, without a restart
    set_enabled(server, "coach-li", True)
    fake_llm.script(text("先問預算。"))
    with client(server) as c:
        post_events(c, message_event("怎麼談薪水？"))
    fake_line.wait_for(lambda: len(fake_line.replies) == 2)
    assert fake_line.replies[1].texts[0].startswith("先問預算。")
    assert system_prompt(fake_llm.requests[0]).startswith("You are Li")


def test_the_line_assistant_setting_must_look_like_an_assistant_id(
    make_settings: Callable[..., Settings],
) -> None:
    assert make_settings().line_assistant == "summer"
    with pytest.raises(ValidationError, match="line_assistant"):
        make_settings(line_assistant="Coach Li!")


# ---------------------------------------------------------------- resume uploads


def _set_model(server: LiveServer, assistant_id: str, model: str) -> None:
    with admin_client(server) as c:
        r = c.put(f"/api/admin/assistants/{assistant_id}/settings/llm_model", json={"value": model})
        assert r.status_code == 200, r.text


def _upload(server: LiveServer, *, form: dict[str, str] | None = None, query_: str = "") -> httpx.Response:
    with httpx.Client(base_url=server.url, timeout=60) as c:
        return c.post(
            "/api/resumes" + query_,
            files={"file": ("resume.pdf", resume_pdf())},
            data={"target_role": "產品經理"} | (form or {}),
        )


def _stored_count(server: LiveServer) -> tuple[int, int]:
    db_url = server.services.db.url

    async def read(db: Database) -> tuple[int, int]:
        async with db.session() as s:
            resumes = await s.scalar(select(func.count()).select_from(Resume))
            traces = await s.scalar(select(func.count()).select_from(Trace))
        return int(resumes or 0), int(traces or 0)

    return on_db(db_url, read)  # type: ignore[no-any-return]


def test_a_resume_upload_runs_as_the_assistant_it_names(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    fake_llm.responder = responder()
    server = server_for(live_server)
    add_assistant(server, "coach-li", persona=LI_PERSONA)
    _set_model(server, "coach-li", "li-model")  # the review's task prompts are its own: its settings show

    r = _upload(server, form={"assistant": "coach-li"})
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "ok"
    assert fake_llm.requests and {b["model"] for b in fake_llm.requests} == {"li-model"}
    assert trace_of(server, r.json()["trace_id"]) == ("web", "coach-li", "coach-li")

    sent = len(fake_llm.requests)
    r = _upload(server, query_="?assistant=coach-li")  # the query parameter works the same
    assert r.status_code == 200, r.text
    assert {b["model"] for b in fake_llm.requests[sent:]} == {"li-model"}

    sent = len(fake_llm.requests)
    r = _upload(server)  # no assistant named: Summer, with the configured model, as before
    assert r.status_code == 200, r.text
    assert {b["model"] for b in fake_llm.requests[sent:]} == {"fake-model"}
    assert trace_of(server, r.json()["trace_id"]) == ("web", "summer", "summer")
    m = scrape(server)
    assert value(m, "careerwise_turns_total", assistant="coach-li") == 2
    assert value(m, "careerwise_turns_total", assistant="summer") == 1


def test_a_resume_upload_for_an_unknown_or_disabled_assistant_stores_nothing(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    fake_llm.responder = responder()
    server = server_for(live_server)
    add_assistant(server, "coach-wu", enabled=False)
    cases = [
        ({"assistant": "nobody"}, "", 404),
        ({}, "?assistant=nobody", 404),
        ({"assistant": "coach-wu"}, "", 409),
        ({}, "?assistant=coach-wu", 409),
        ({"assistant": "coach-wu"}, "?assistant=summer", 400),  # two different names
        ({}, "?assistant=" + "x" * 65, 422),
    ]
    for form, query_, status in cases:
        r = _upload(server, form=form, query_=query_)
        assert r.status_code == status, (form, query_, r.text)
        assert "error" in r.json()
    assert _stored_count(server) == (0, 0)
    assert fake_llm.requests == []
