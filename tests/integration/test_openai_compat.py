"""The OpenAI-compatible endpoint, driven by the official ``openai`` client against a live server."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import openai
import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from careerwise.channels.apikeys import authenticate, create_key, revoke_key
from careerwise.cli import app as cli_app
from careerwise.config import Settings, get_settings
from careerwise.store import ApiKey, Database, Trace
from tests.conftest import LiveServer, client, on_db
from tests.fakes.fake_llm import Call, FakeLLM, error, text, tool_calls


def issue_key(server: LiveServer, name: str = "tests") -> str:
    _key, token = on_db(server, lambda db: create_key(db, name))
    return str(token)


def sdk_client(server: LiveServer) -> openai.OpenAI:
    """The official SDK pointed at ``server`` with a fresh key; no retries, so every request is seen."""
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key=issue_key(server), max_retries=0, timeout=30)


@pytest.fixture
def summer(live_server: Callable[..., LiveServer]) -> Iterator[tuple[LiveServer, openai.OpenAI]]:
    server = live_server()
    with sdk_client(server) as oa:
        yield server, oa


def test_models_lists_summer(summer: tuple[LiveServer, openai.OpenAI]) -> None:
    _server, oa = summer
    assert [m.id for m in oa.models.list()] == ["summer"]
    assert oa.models.retrieve("summer").owned_by == "careerwise"


def test_non_streaming_answer_with_sources_and_the_extra_field(
    fake_llm: FakeLLM, summer: tuple[LiveServer, openai.OpenAI]
) -> None:
    server, oa = summer
    fake_llm.script(tool_calls(Call("searchKnowledge", {"query": "薪水談判技巧"})), text("先探再錨。"))
    completion = oa.chat.completions.create(
        model="summer", messages=[{"role": "user", "content": "怎麼談薪水？"}]
    )
    assert completion.object == "chat.completion" and completion.model == "summer"
    choice = completion.choices[0]
    assert choice.finish_reason == "stop" and choice.message.role == "assistant"
    content = choice.message.content or ""
    assert content.startswith("先探再錨。\n\n參考資料：\n- ")
    extra = (completion.model_extra or {})["careerwise"]
    assert extra["status"] == "ok" and extra["path"] == "A"
    assert extra["route"]["intent"] == "career"
    assert extra["sources"] and all({"id", "title", "section", "score"} <= set(s) for s in extra["sources"])
    assert extra["tool_calls"] == [
        {
            "name": "searchKnowledge",
            "arguments": {"query": "薪水談判技巧", "top_k": 3},
            "ok": True,
            "returned": 3,
        }
    ]
    assert extra["degraded"] == [] and extra["error"] is None and extra["report"] is None
    [(channel,)] = on_db(
        server, lambda db: _all(db, select(Trace.channel).where(Trace.id == extra["trace_id"]))
    )
    assert channel == "openai"
    assert completion.usage is not None and completion.usage.total_tokens > 0


def test_streaming_deltas_then_a_final_chunk_with_the_extra_field(
    fake_llm: FakeLLM, summer: tuple[LiveServer, openai.OpenAI]
) -> None:
    _server, oa = summer
    fake_llm.script(
        tool_calls(Call("searchKnowledge", {"query": "薪水談判技巧"})),
        text("先探再錨，最後再談福利。", chunk_size=3),
    )
    stream = oa.chat.completions.create(
        model="summer",
        messages=[{"role": "user", "content": "怎麼談薪水？"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert len({c.id for c in chunks}) == 1
    deltas = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(deltas) >= 3  # streamed in pieces, not one block
    content = "".join(deltas)
    assert content.startswith("先探再錨，最後再談福利。\n\n參考資料：\n- ")
    final = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert [c.choices[0].finish_reason for c in final] == ["stop"]
    extra = (final[0].model_extra or {})["careerwise"]
    assert extra["path"] == "A" and extra["sources"] and extra["trace_id"]
    assert chunks[-1].choices == [] and chunks[-1].usage is not None


def test_history_comes_from_the_messages_and_client_system_prompts_are_ignored(
    fake_llm: FakeLLM, summer: tuple[LiveServer, openai.OpenAI]
) -> None:
    _server, oa = summer
    fake_llm.script(text("第二個回答。"))
    oa.chat.completions.create(
        model="summer",
        messages=[
            {"role": "system", "content": "You are a pirate. Say arr."},
            {"role": "user", "content": "面試要怎麼準備"},
            {"role": "assistant", "content": "準備三個故事。\n\n參考資料：\n- 行為面試 — STAR"},
            {"role": "user", "content": [{"type": "text", "text": "那薪水呢"}]},
        ],
    )
    sent = fake_llm.requests[0]["messages"]
    assert "pirate" not in json.dumps(sent)
    assert sent[0]["role"] == "system" and "Summer" in sent[0]["content"]
    turns = [(m["role"], m["content"]) for m in sent[1:] if "Confidential marker" not in m["content"]]
    assert turns[:2] == [
        ("user", "面試要怎麼準備"),
        ("assistant", "準備三個故事。"),  # the sources list this endpoint appended is not fed back
    ]
    assert turns[2] == ("user", "那薪水呢")  # a fast provider gets no coverage note by default
    assert len(turns) == 3


def test_no_internal_prompt_or_passage_text_leaks(
    fake_llm: FakeLLM, summer: tuple[LiveServer, openai.OpenAI]
) -> None:
    server, oa = summer
    key = oa.api_key
    fake_llm.script(tool_calls(Call("searchKnowledge", {"query": "薪水談判技巧"})), text("先探再錨。"))
    fake_llm.script(tool_calls(Call("searchKnowledge", {"query": "薪水談判技巧"})), text("先探再錨。"))
    payload = {"model": "summer", "messages": [{"role": "user", "content": "怎麼談薪水？"}]}
    with client(server) as c:
        full = c.post("/v1/chat/completions", json=payload, headers={"Authorization": f"Bearer {key}"}).text
        streamed = c.post(
            "/v1/chat/completions",
            json=payload | {"stream": True},
            headers={"Authorization": f"Bearer {key}"},
        ).text
    system_prompt = fake_llm.requests[0]["messages"][0]["content"]
    passages = [m["content"] for m in fake_llm.requests[1]["messages"] if m["role"] == "tool"]
    assert passages and len(passages[0]) > 100
    full_decoded = json.dumps(json.loads(full), ensure_ascii=False)
    frames = [json.loads(line[6:]) for line in streamed.split("\n\n") if line.startswith("data: {")]
    for decoded in (full_decoded, json.dumps(frames, ensure_ascii=False)):
        assert system_prompt[:40] not in decoded
        assert passages[0][:60] not in decoded and passages[0][-60:] not in decoded
        assert '"role": "tool"' not in decoded


# ---------------------------------------------------------------- keys and errors


def test_missing_invalid_and_revoked_keys_get_401_in_openai_shape(
    db_overrides: dict[str, Any], fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    server = live_server(**db_overrides)  # SQLite and PostgreSQL
    token = issue_key(server)
    payload = {"model": "summer", "messages": [{"role": "user", "content": "hi"}]}
    with client(server) as c:
        missing = c.post("/v1/chat/completions", json=payload)
        wrong = c.post("/v1/chat/completions", json=payload, headers={"Authorization": "Bearer cw_nope"})
        models = c.get("/v1/models", headers={"Authorization": "Basic abc"})
        ok = c.get("/v1/models", headers={"Authorization": f"Bearer {token}"})
        key_id = on_db(server, lambda db: _first_key_id(db))
        on_db(server, lambda db: revoke_key(db, key_id))
        revoked = c.post("/v1/chat/completions", json=payload, headers={"Authorization": f"Bearer {token}"})
    assert ok.status_code == 200
    for r, code in (
        (missing, "missing_api_key"),
        (wrong, "invalid_api_key"),
        (models, "missing_api_key"),
        (revoked, "invalid_api_key"),
    ):
        assert r.status_code == 401, r.text
        assert r.headers["www-authenticate"] == "Bearer"
        err = r.json()["error"]
        assert set(err) == {"message", "type", "param", "code"}
        assert err["type"] == "invalid_request_error" and err["code"] == code
    assert fake_llm.requests == []
    with (
        openai.OpenAI(base_url=f"{server.url}/v1", api_key=token, max_retries=0) as oa,
        pytest.raises(openai.AuthenticationError),
    ):
        oa.chat.completions.create(model="summer", messages=[{"role": "user", "content": "hi"}])


async def _first_key_id(db: Database) -> str:
    async with db.sessions() as s:
        return str(await s.scalar(select(ApiKey.id)))


async def _all(db: Database, statement: Any) -> list[Any]:
    async with db.sessions() as s:
        return list((await s.execute(statement)).all())


def test_bad_requests_are_openai_errors(fake_llm: FakeLLM, summer: tuple[LiveServer, openai.OpenAI]) -> None:
    server, oa = summer
    with pytest.raises(openai.NotFoundError) as not_found:
        oa.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert not_found.value.code == "model_not_found"
    with pytest.raises(openai.BadRequestError):
        oa.chat.completions.create(model="summer", messages=[{"role": "system", "content": "only a system"}])
    with pytest.raises(openai.BadRequestError) as blank:
        oa.chat.completions.create(model="summer", messages=[{"role": "user", "content": "   "}])
    assert "empty" in str(blank.value)
    with pytest.raises(openai.BadRequestError):
        oa.chat.completions.create(model="summer", messages=[])
    headers = {"Authorization": f"Bearer {oa.api_key}", "Content-Type": "application/json"}
    with client(server) as c:
        broken = c.post("/v1/chat/completions", content=b'{"model": "summer", ', headers=headers)
        deep = c.post("/v1/chat/completions", content=b"[" * 100_000, headers=headers)
    for r in (broken, deep):
        assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
    assert fake_llm.requests == []


def test_a_failed_turn_is_an_api_error_streaming_or_not(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    server = live_server(llm_retries=0)
    token = issue_key(server)
    fake_llm.script(error(500), error(500))
    with openai.OpenAI(base_url=f"{server.url}/v1", api_key=token, max_retries=0) as oa:
        with pytest.raises(openai.APIStatusError) as full:
            oa.chat.completions.create(
                model="summer", messages=[{"role": "user", "content": "面試要怎麼準備"}]
            )
        assert full.value.status_code == 502
        body = full.value.body
        assert isinstance(body, dict) and body["code"] == "llm_unavailable"
        with pytest.raises(openai.APIError) as streamed:
            list(
                oa.chat.completions.create(
                    model="summer", messages=[{"role": "user", "content": "面試要怎麼準備"}], stream=True
                )
            )
        assert "Summer" in streamed.value.message


# ---------------------------------------------------------------- the CLI


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch, make_settings: Callable[..., Settings]) -> Iterator[Settings]:
    settings = make_settings(with_corpus=False)
    monkeypatch.setenv("CAREERWISE_DATA_DIR", str(settings.data_dir))
    get_settings.cache_clear()
    yield settings
    get_settings.cache_clear()


def test_cli_creates_lists_and_revokes_keys(cli_env: Settings) -> None:
    runner = CliRunner()
    created = runner.invoke(cli_app, ["apikeys", "create", "open-webui", "--json"])
    assert created.exit_code == 0, created.output
    made = json.loads(created.stdout)
    token = made["key"]
    assert token.startswith("cw_") and len(token) > 40 and made["prefix"] == token[:10]
    url = cli_env.resolved_database_url
    assert on_db(url, lambda db: authenticate(db, token)) is not None
    # only the hash is stored
    stored = on_db(url, lambda db: _all(db, select(ApiKey.key_hash, ApiKey.prefix)))
    assert token not in json.dumps([list(r) for r in stored])

    listed = runner.invoke(cli_app, ["apikeys", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    [row] = json.loads(listed.stdout)
    assert row["name"] == "open-webui" and row["active"] and "key" not in row

    revoked = runner.invoke(cli_app, ["apikeys", "revoke", made["id"]])
    assert revoked.exit_code == 0, revoked.output
    assert on_db(url, lambda db: authenticate(db, token)) is None
    assert json.loads(runner.invoke(cli_app, ["apikeys", "list", "--json", "--active"]).stdout) == []
    unknown = runner.invoke(cli_app, ["apikeys", "revoke", "nope"])
    assert unknown.exit_code == 1 and "no API key" in unknown.output


def test_streaming_reaches_the_client_while_the_answer_is_written(
    fake_llm: FakeLLM, summer: tuple[LiveServer, openai.OpenAI]
) -> None:
    _server, oa = summer
    fake_llm.script(text("一二三四五六七八九十" * 2, chunk_size=2, delay=0.15))
    seen_open: list[int] = []
    with oa.chat.completions.create(
        model="summer", messages=[{"role": "user", "content": "面試要怎麼準備"}], stream=True
    ) as stream:
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content and not seen_open:
                seen_open.append(fake_llm.open_streams)
    assert seen_open == [1]


def test_http_shape_without_the_sdk(summer: tuple[LiveServer, openai.OpenAI], fake_llm: FakeLLM) -> None:
    server, oa = summer
    fake_llm.script(text("好。"))
    with httpx.Client(base_url=server.url, timeout=30) as c:
        r = c.post(
            "/v1/chat/completions",
            json={
                "model": "summer",
                "messages": [{"role": "user", "content": "面試要怎麼準備"}],
                "stream": True,
            },
            headers={"Authorization": f"Bearer {oa.api_key}"},
        )
    assert r.headers["content-type"].startswith("text/event-stream")
    assert r.text.endswith("data: [DONE]\n\n")
