"""The streamed tool-use flow against the scripted fake provider (a real HTTP server)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from careerwise.engine import TurnRequest
from careerwise.events import DegradedEvent, DeltaEvent, DoneEvent, ErrorEvent, ToolCallEvent, ToolResultEvent
from careerwise.routing.router import RouteDecision
from careerwise.services import Services
from careerwise.store import Message, Trace
from careerwise.store.traces import TraceStore
from careerwise.tracing.background import ANSWER_LOOP, QUOTE_SIMILARITY, failure_counts
from tests.conftest import ready
from tests.fakes.fake_llm import Call, FakeLLM, error, stall, text, tool_calls

SEARCH = "searchKnowledge"


async def run_turn(services: Services, message: str = "怎麼談薪水？", **kw: Any) -> list[Any]:
    await ready(services)
    return [e async for e in services.engine.run(TurnRequest(message=message, **kw))]


def kinds(events: list[Any]) -> list[str]:
    out: list[str] = []
    for e in events:
        if not out or out[-1] != e.type:
            out.append(e.type)
    return out


def answer(events: list[Any]) -> str:
    return "".join(e.text for e in events if isinstance(e, DeltaEvent))


async def test_path_b_streams_text_without_tools(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.script(text("面試前先研究公司產品，準備三個具體案例。", chunk_size=3))
    events = await run_turn(make_services(), "面試要怎麼準備")
    assert kinds(events) == ["route", "delta", "done"]
    assert answer(events) == "面試前先研究公司產品，準備三個具體案例。"
    assert all(e.phase == 1 for e in events if isinstance(e, DeltaEvent))
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.status == "ok" and done.path == "B"
    req = fake_llm.requests[0]
    assert req["tools"][0]["function"]["name"] == SEARCH and req["tool_choice"] == "auto"
    assert req["stream"] is True


async def test_path_a_runs_the_tool_and_phase3_carries_the_result(
    db_overrides: dict[str, Any], fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.script(
        tool_calls(Call(SEARCH, {"query": "薪水談判技巧"}, id="call_1"), split=4),
        text("先做功課，再開口。", chunk_size=2),
    )
    services = make_services(**db_overrides)  # SQLite and PostgreSQL
    events = await run_turn(services)
    assert kinds(events) == ["route", "tool_call", "tool_result", "delta", "done"]
    call = next(e for e in events if isinstance(e, ToolCallEvent))
    assert call.requested_arguments == {"query": "薪水談判技巧"}
    assert call.effective_arguments == {"query": "薪水談判技巧", "top_k": 3}
    result = next(e for e in events if isinstance(e, ToolResultEvent))
    assert result.ok and result.returned == 3 and result.sources
    assert all(e.phase == 3 for e in events if isinstance(e, DeltaEvent))
    assert events[-1].path == "A"
    phase3 = fake_llm.requests[1]["messages"]
    assistant = phase3[-2]
    assert (
        assistant["role"] == "assistant" and assistant["content"] == ""
    )  # never null (llama.cpp rejects it)
    assert assistant["tool_calls"][0]["function"]["arguments"] == json.dumps(
        {"query": "薪水談判技巧"}, ensure_ascii=False
    )
    tool_msg = phase3[-1]
    assert tool_msg["role"] == "tool" and tool_msg["tool_call_id"] == "call_1"
    assert result.sources[0].id in tool_msg["content"]
    # the stored trace says the same as the stream
    async with services.db.session() as s:
        trace = (await s.scalars(select(Trace))).one()
        msgs = (await s.scalars(select(Message).order_by(Message.created_at))).all()
    stored = await TraceStore(services.db).turn(trace.id)
    assert stored is not None
    (rec,) = stored.tool_calls  # the one stored copy: the tool_call and tool_result event rows
    assert rec.call["effective_arguments"] == call.effective_arguments
    assert rec.result is not None and rec.result["returned"] == result.returned
    assert trace.path == "A" and trace.status == "ok" and trace.id == events[-1].trace_id
    assert [(m.role, m.status) for m in msgs] == [("user", "ok"), ("assistant", "ok")]
    assert msgs[1].content == "先做功課，再開口。"


async def test_guard_drops_text_written_before_an_early_tool_call(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.script(
        tool_calls(Call(SEARCH, {"query": "跳槽 加薪"}), text_before="讓我想想", split=2),
        text("根據資料⋯"),
    )
    # "讓我想想" arrives as 2 chunks of 2 characters: inside the default window of 3
    events = await run_turn(make_services())
    assert [e.text for e in events if isinstance(e, DeltaEvent)] == ["根據", "資料", "⋯"]
    assert not any(isinstance(e, DeltaEvent) and e.phase == 1 for e in events)


async def test_whitespace_chunks_do_not_count_toward_the_guard(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.script(
        tool_calls(Call(SEARCH, {"query": "q"}), text_before="\n \n\n嗯", split=1),
        text("好"),
    )
    events = await run_turn(make_services(buffer_guard_chunks=2))
    assert not any(isinstance(e, DeltaEvent) and e.phase == 1 for e in events)


async def test_tool_call_after_shown_text_still_runs_with_a_notice(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.script(
        tool_calls(Call(SEARCH, {"query": "面試"}), text_before="面試時要注意三件事：第一", split=2),
        text("依照 Summer 的建議⋯"),
    )
    events = await run_turn(make_services(buffer_guard_chunks=2))
    deltas = [e for e in events if isinstance(e, DeltaEvent)]
    shown_first = "".join(d.text for d in deltas if d.phase == 1 and not d.notice)
    assert shown_first == "面試時要注意三件事：第一"
    notice = [d for d in deltas if d.notice]
    assert len(notice) == 1 and "知識庫" in notice[0].text
    call = next(e for e in events if isinstance(e, ToolCallEvent))
    assert call.after_text is True
    assert "".join(d.text for d in deltas if d.phase == 3) == "依照 Summer 的建議⋯"
    assert kinds(events).index("tool_call") > kinds(events).index("delta")


async def test_parallel_calls_with_split_arguments_and_first_index_not_zero(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.script(
        tool_calls(
            Call(SEARCH, {"query": "薪資 行情"}, id="c_a"),
            Call(SEARCH, {"query": "面試 準備", "top_k": 4}, id="c_b"),
            split=5,
            first_index=1,
            finish_reason="stop",  # some providers say "stop" although they streamed calls
        ),
        text("兩個面向都整理好了。"),
    )
    events = await run_turn(make_services())
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert [c.call_id for c in calls] == ["c_a", "c_b"]
    assert calls[1].effective_arguments["top_k"] == 4
    assert [r.returned for r in results] == [3, 4]
    tool_msgs = [m for m in fake_llm.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["c_a", "c_b"]


async def test_repeated_id_and_name_deltas_make_one_call(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.script(tool_calls(Call(SEARCH, {"query": "履歷"}), split=6, repeat_id_and_name=True), text("好"))
    events = await run_turn(make_services())
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert len(calls) == 1 and calls[0].name == SEARCH and calls[0].requested_arguments == {"query": "履歷"}


async def test_invalid_arguments_go_back_to_the_model_once(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.script(
        tool_calls(Call(SEARCH, '{"query": "薪水', id="bad")),
        tool_calls(Call(SEARCH, '{"query": "還是壞', id="bad2")),
        text("我直接回答：先了解行情。"),
    )
    events = await run_turn(make_services())
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert [r.ok for r in results] == [False, False]
    assert "not valid JSON" in (results[0].error or "")
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert calls[0].raw_arguments == '{"query": "薪水' and calls[0].effective_arguments == {}
    assert answer(events) == "我直接回答：先了解行情。"
    assert events[-1].status == "ok"
    second, third = fake_llm.requests[1], fake_llm.requests[2]
    assert second["tool_choice"] == "auto"  # the model may try once more
    assert third["tool_choice"] == "none"  # but not forever
    assert "not valid JSON" in second["messages"][-1]["content"]


async def test_upstream_500_is_retried_once_before_any_text(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.script(error(500), text("沒問題。"))
    services = make_services()
    events = await run_turn(services)
    assert answer(events) == "沒問題。" and events[-1].status == "ok"
    async with services.db.session() as s:
        trace = (await s.scalars(select(Trace))).one()
    assert trace.timings["retries"] == 1


async def test_upstream_500_twice_is_an_error_event_and_a_stored_status(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.script(error(500), error(503))
    services = make_services()
    events = await run_turn(services)
    err = next(e for e in events if isinstance(e, ErrorEvent))
    assert err.code == "llm_unavailable" and "稍後" in err.message
    assert events[-1].status == "error"
    assert len(fake_llm.requests) == 2  # one retry, no more
    async with services.db.session() as s:
        msgs = (await s.scalars(select(Message).order_by(Message.created_at))).all()
    assert [(m.role, m.status) for m in msgs] == [("user", "ok"), ("assistant", "error")]


async def test_no_retry_after_the_first_visible_token(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.script(stall(3.0, after_chunks=["第一段", "第二段", "第三段", "第四段"]))
    events = await run_turn(make_services(llm_read_timeout=0.5))
    assert answer(events) == "第一段第二段第三段第四段"
    err = next(e for e in events if isinstance(e, ErrorEvent))
    assert err.code == "llm_timeout"
    assert len(fake_llm.requests) == 1


async def test_stalled_upstream_hits_the_read_deadline(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.script(stall(5.0), stall(5.0))
    events = await run_turn(make_services(llm_read_timeout=0.3))
    assert next(e for e in events if isinstance(e, ErrorEvent)).code == "llm_timeout"
    assert events[-1].status == "error"


async def test_turn_deadline_ends_a_slow_drip(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.script(text("慢" * 50, chunk_size=1, delay=0.1))
    events = await run_turn(make_services(turn_deadline=0.6))
    assert next(e for e in events if isinstance(e, ErrorEvent)).code == "llm_timeout"
    assert 0 < len(answer(events)) < 50


async def test_provider_without_tools_degrades_to_path_b(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.script(
        error(400, {"error": {"message": "tools are not supported by this model"}}), text("一般建議。")
    )
    events = await run_turn(make_services())
    degraded = [e for e in events if isinstance(e, DegradedEvent)]
    assert [d.reason for d in degraded] == ["tools_unsupported"]
    assert answer(events) == "一般建議。"
    assert "tools" not in fake_llm.requests[1]


async def test_tools_disabled_by_setting_is_path_b_and_says_so(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.script(text("好。"))
    events = await run_turn(make_services(llm_supports_tools=False))
    assert [e.reason for e in events if isinstance(e, DegradedEvent)] == ["tools_unsupported"]
    assert "tools" not in fake_llm.requests[0]


async def test_unavailable_knowledge_base_is_not_offered_and_is_visible(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.script(text("一般建議。"))
    services = make_services()
    await ready(services)
    services.kb.mark_failed("RuntimeError: index file corrupt")
    events = [e async for e in services.engine.run(TurnRequest(message="怎麼談薪水？"))]
    assert [e.reason for e in events if isinstance(e, DegradedEvent)] == ["knowledge_unavailable"]
    assert "tools" not in fake_llm.requests[0]
    async with services.db.session() as s:
        trace = (await s.scalars(select(Trace))).one()
    assert trace.degraded is True


async def test_empty_search_result_says_no_matching_knowledge(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.script(tool_calls(Call(SEARCH, {"query": "qwzx blorfquux"})), text("知識庫沒有這個主題。"))
    # the model's query alone: with the user's message searched too, "怎麼談薪水？" would find passages
    events = await run_turn(make_services(search_message_fusion="off"))
    result = next(e for e in events if isinstance(e, ToolResultEvent))
    assert result.ok and result.returned == 0 and result.sources == []
    assert "No matching knowledge" in fake_llm.requests[1]["messages"][-1]["content"]


async def test_greeting_rule_skips_tools(fake_llm: FakeLLM, make_services: Callable[..., Services]) -> None:
    fake_llm.script(text("嗨！今天想聊什麼職涯問題？"))
    events = await run_turn(make_services(), "你好")
    route = events[0]
    assert route.intent == "greeting" and route.layer == "rules" and route.rule_id
    assert "tools" not in fake_llm.requests[0]


async def test_history_from_the_conversation_is_sent(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.script(text("第一題的回答。"), text("第二題的回答。"))
    services = make_services()
    first = await run_turn(services, "我在考慮轉職")
    conv = first[-1].conversation_id
    await run_turn(services, "那要準備多久？", conversation_id=conv)
    # the persona, the canary's own system message, then the conversation
    msgs = fake_llm.requests[1]["messages"]
    assert [m["role"] for m in msgs] == ["system", "system", "user", "assistant", "user"]
    assert msgs[3]["content"] == "第一題的回答。"


async def test_a_failed_history_read_ends_the_turn_as_an_error_not_a_pending_reply(
    fake_llm: FakeLLM, make_services: Callable[..., Services], monkeypatch: Any
) -> None:
    fake_llm.script(text("第一題的回答。"), text("第三題的回答。"))
    services = make_services()
    first = await run_turn(services, "我在考慮轉職")
    conv = first[-1].conversation_id

    async def broken(*args: Any, **kwargs: Any) -> list[Any]:
        raise OSError("disk I/O error")

    with monkeypatch.context() as patch:
        patch.setattr(services.engine, "_history", broken)
        failed = await run_turn(services, "那要準備多久？", conversation_id=conv)
    assert [e.type for e in failed][-2:] == ["error", "done"]
    assert isinstance(failed[-1], DoneEvent) and failed[-1].status == "error"
    async with services.db.session() as s:
        statuses = (await s.scalars(select(Message.status).where(Message.conversation_id == conv))).all()
    assert "pending" not in statuses
    # the conversation is not left busy: the next message is answered
    again = await run_turn(services, "那要準備多久？", conversation_id=conv)
    assert again[-1].status == "ok" and answer(again) == "第三題的回答。"


async def tool_use_turn(services: Services, message: str) -> list[Any]:
    """A turn sent straight to the tool-use flow, whatever the router would make of the message."""
    career = RouteDecision(intent="career", tier="simple", layer="test", reasons=["the tool-use flow"])
    flow = services.engine.flows.lookup("career", "simple")
    return await run_turn(services, message, route=career, flow=flow)


async def test_a_slow_provider_shows_the_articles_own_sentences_before_the_answer(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    """Decision 0023: on a slow provider the search's best sentences come verbatim, as a phase-2 delta,
    between the tool result and the model's answer; the stored answer holds them; the model's prompt
    does not (it reads the passages as before)."""
    fake_llm.script(
        tool_calls(Call(SEARCH, {"query": "談薪水 開口 數字"}, id="call_1")),
        text("先做功課，再開口。", chunk_size=2),
    )
    services = make_services(llm_slow=True, answer_quotes="auto")
    events = await tool_use_turn(services, "談薪水的時候，第一個開口的數字要怎麼定？")
    assert kinds(events) == ["route", "tool_call", "tool_result", "delta", "done"]
    deltas = [e for e in events if isinstance(e, DeltaEvent)]
    quote, *model = deltas
    assert quote.phase == 2 and all(d.phase == 3 for d in model)
    assert quote.text.startswith("**Summer 的文章怎麼說**\n《")
    result = next(e for e in events if isinstance(e, ToolResultEvent))
    titles = {s.title for s in result.sources}
    assert any(f"《{t}》" in quote.text for t in titles)
    # every quoted sentence is the article's own text, and the outline is one article's own headings
    corpus = " ".join(
        p.read_text(encoding="utf-8")
        for p in (Path(__file__).parents[2] / "src/careerwise/data/corpus").glob("*.md")
    )
    outline = [line[2:] for line in quote.text.splitlines() if line.startswith("- ")]
    assert len(outline) >= 2 and all(f"## {point}\n" in corpus for point in outline)
    assert sum(line.startswith("> 「") for line in quote.text.splitlines()) <= 2
    for line in quote.text.splitlines()[1:]:
        if line.startswith("> 「"):
            said = line[3 : line.index("」——《")].strip("…")
            assert said in corpus, said
    assert "".join(d.text for d in model) == "先做功課，再開口。"
    assert "Summer 的文章怎麼說" not in json.dumps(fake_llm.requests[1]["messages"], ensure_ascii=False)
    async with services.db.session() as s:
        stored = (await s.execute(select(Message.content).where(Message.role == "assistant"))).scalars().all()
    assert stored and stored[-1].startswith("**Summer 的文章怎麼說**")


async def test_a_question_whose_articles_are_in_the_other_language_is_quoted_them_as_written(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    """A Chinese question that only an English article answers: the block quotes that article verbatim,
    in English, under a Chinese label that says so (decision 0023), rather than showing nothing."""
    fake_llm.script(
        tool_calls(Call(SEARCH, {"query": "side project employer ownership moonlighting"}, id="call_1")),
        text("先看合約。", chunk_size=2),
    )
    services = make_services(llm_slow=True, answer_quotes="auto")
    events = await tool_use_turn(services, "下班後自己做 side project，公司會不會說成果歸他們？")
    result = next(e for e in events if isinstance(e, ToolResultEvent))
    assert result.sources and all(s.id.startswith("c-side-projects") for s in result.sources[:1])
    quote = next(e for e in events if isinstance(e, DeltaEvent) and e.phase == 2)
    head, *rest = quote.text.splitlines()
    assert head == "**Summer 的文章怎麼說**（英文原文）"
    corpus = (
        Path(__file__).parents[2] / "src/careerwise/data/corpus/c-side-projects-while-employed.md"
    ).read_text(encoding="utf-8")
    said = [line for line in rest if line.startswith('> "')]
    assert said
    for line in said:
        assert line[3 : line.rindex('" (')].strip("…") in corpus, line
    assert answer(events).endswith("先看合約。")


async def test_a_fast_provider_or_quotes_off_shows_only_the_models_answer(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    for settings in ({}, {"llm_slow": True, "answer_quotes": "off"}):
        fake_llm.reset()
        fake_llm.script(
            tool_calls(Call(SEARCH, {"query": "談薪水 開口 數字"}, id="call_1")),
            text("先做功課，再開口。", chunk_size=2),
        )
        events = await tool_use_turn(make_services(**settings), "談薪水的時候，第一個開口的數字要怎麼定？")
        assert answer(events) == "先做功課，再開口。", settings
        assert not any(e.phase == 2 for e in events if isinstance(e, DeltaEvent))


async def test_a_question_the_articles_do_not_answer_gets_no_quote(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.script(
        tool_calls(Call(SEARCH, {"query": "京都 賞楓 行程"}, id="call_1")),
        text("這不在我的專業範圍。", chunk_size=2),
    )
    events = await tool_use_turn(make_services(llm_slow=True), "京都賞楓的三天兩夜行程怎麼排比較好？")
    assert any(isinstance(e, ToolResultEvent) for e in events)
    assert not any(e.phase == 2 for e in events if isinstance(e, DeltaEvent))


async def test_a_failed_quote_embedding_falls_back_to_word_overlap_and_is_counted(
    fake_llm: FakeLLM, make_services: Callable[..., Services], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_llm.script(
        tool_calls(Call(SEARCH, {"query": "談薪水 開口 數字"}, id="call_1")),
        text("先做功課，再開口。", chunk_size=2),
    )
    services = make_services(llm_slow=True)

    async def broken(query: str, texts: Sequence[str]) -> list[float]:
        raise OSError("the embedding model file could not be read")

    monkeypatch.setattr(services.kb, "similarities", broken)
    before = failure_counts().get(QUOTE_SIMILARITY, 0)
    events = await tool_use_turn(services, "談薪水的時候，第一個開口的數字要怎麼定？")
    quote = next(e for e in events if isinstance(e, DeltaEvent) and e.phase == 2)
    assert quote.text.startswith("**Summer 的文章怎麼說**")
    assert failure_counts().get(QUOTE_SIMILARITY, 0) == before + 1
    assert isinstance(events[-1], DoneEvent) and events[-1].status == "ok"


async def test_an_answer_that_starts_over_ends_before_the_copy_and_is_counted(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    """A small model can loop: the sentence it writes a second time is not shown, the answer ends
    there (status ok), and the loop is counted; the stored answer is what the user saw."""
    said = "先算出你心裡會滿意的數字，再把開口的數字設高一成。"
    fake_llm.script(
        tool_calls(Call(SEARCH, {"query": "談薪水 開口 數字"}, id="call_1")),
        text(f"{said}然後準備證據。\n\n{said}然後準備證據。\n\n{said}", chunk_size=3),
    )
    services = make_services()
    before = failure_counts().get(ANSWER_LOOP, 0)
    events = await tool_use_turn(services, "談薪水的時候，第一個開口的數字要怎麼定？")
    assert answer(events) == f"{said}然後準備證據。\n\n"
    assert isinstance(events[-1], DoneEvent) and events[-1].status == "ok"
    assert failure_counts().get(ANSWER_LOOP, 0) == before + 1
    async with services.db.session() as s:
        stored = (await s.execute(select(Message.content).where(Message.role == "assistant"))).scalars().all()
    assert stored[-1] == f"{said}然後準備證據。\n\n"


async def test_an_answer_that_opens_by_restating_the_instruction_shows_only_the_answer(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    """A small model can begin by saying the search instruction back; that opening is not shown, and
    what the user sees is what is stored."""
    said = "先算出你心裡會滿意的數字，再把開口的數字設高一成。"
    fake_llm.script(
        tool_calls(Call(SEARCH, {"query": "談薪水 開口 數字"}, id="call_1")),
        text(
            f"好的，我明白了。以下是根據段落裡 Summer 的說法、名稱和數字回答使用者：\n\n{said}", chunk_size=3
        ),
    )
    services = make_services(llm_slow=True)  # a slow provider's profile: quotes, and the echo check
    events = await tool_use_turn(services, "談薪水的時候，第一個開口的數字要怎麼定？")
    shown = answer(events)
    assert shown.startswith("**Summer 的文章怎麼說**")  # the quotes come first, as for every slow model
    assert shown.endswith(f"\n\n{said}") and "我明白了" not in shown and "回答使用者" not in shown
    assert isinstance(events[-1], DoneEvent) and events[-1].status == "ok"
    async with services.db.session() as s:
        stored = (await s.execute(select(Message.content).where(Message.role == "assistant"))).scalars().all()
    assert stored[-1] == shown
