"""What issue #23 added around the tool-use flow, against the scripted fake provider: the coverage note
in the phase-1 prompt, calls written as text by a server, invented tools, echoed schemas, Simplified text,
usage a server did not report, passages cut to a slow provider's budget, and medium questions on a slow
provider taking the streamed flow."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from careerwise.engine import TurnRequest
from careerwise.events import DeltaEvent, DoneEvent, RouteEvent, ToolCallEvent, ToolResultEvent
from careerwise.services import Services
from tests.conftest import ready
from tests.fakes.fake_llm import Call, FakeLLM, text, tool_calls
from tests.integration.test_deep_answers import FixedRouter

SEARCH = "searchKnowledge"
SALARY_TITLE = "談薪水不是喊價：Summer 的「探、錨、換」三步談判法"


async def run_turn(services: Services, message: str) -> list[Any]:
    await ready(services)
    return [e async for e in services.engine.run(TurnRequest(message=message))]


def answer(events: list[Any]) -> str:
    return "".join(e.text for e in events if isinstance(e, DeltaEvent) and not e.notice)


def career_flow(services: Services) -> Services:
    """Routing forced to a simple career question: what the tool-use flow does with a message that
    reaches it although the router would send it elsewhere (the off-topic route has its own tests)."""
    services.engine.router = FixedRouter("simple")
    return services


def last_user(request: dict[str, Any]) -> str:
    return str([m for m in request["messages"] if m["role"] == "user"][-1]["content"])


async def test_the_phase1_prompt_names_the_articles_the_question_matches(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.script(text("好的。"))
    await run_turn(make_services(llm_slow=True), "怎麼談薪水？")  # auto: on for a slow provider
    prompt = last_user(fake_llm.requests[0])
    assert prompt.startswith("怎麼談薪水？\n\n（Summer 的知識庫有這個主題的文章：")
    assert SALARY_TITLE in prompt and "searchKnowledge" in prompt


async def test_an_unrelated_question_is_told_the_knowledge_base_has_nothing(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.script(text("好的。"))
    await run_turn(career_flow(make_services(search_coverage_hint=True)), "紅燒肉怎麼做才好吃")
    prompt = last_user(fake_llm.requests[0])
    assert prompt == "紅燒肉怎麼做才好吃\n\n（Summer 的知識庫沒有這個主題的文章，直接回答。）"


async def test_without_the_hint_the_prompt_says_nothing_of_coverage(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.script(text("好的。"))
    await run_turn(make_services(search_coverage_hint=False, llm_slow=True), "怎麼談薪水？")
    assert last_user(fake_llm.requests[0]) == "怎麼談薪水？"


async def test_a_fast_provider_gets_no_note_by_default_so_its_first_text_waits_for_no_search(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.script(text("好的。"))
    services = make_services()
    events = await run_turn(services, "怎麼談薪水？")
    assert last_user(fake_llm.requests[0]) == "怎麼談薪水？"
    assert isinstance(events[-1], DoneEvent) and events[-1].status == "ok"


async def test_the_note_is_never_stored_as_the_users_words(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.script(text("好的。"), text("好的。"))
    services = make_services(search_coverage_hint=True)
    events = await run_turn(services, "怎麼談薪水？")
    done = events[-1]
    turn = TurnRequest(message="那年終呢？", conversation_id=done.conversation_id)
    second = [e async for e in services.engine.run(turn)]
    assert isinstance(second[-1], DoneEvent) and len(fake_llm.requests) == 2
    users = [m["content"] for m in fake_llm.requests[-1]["messages"] if m["role"] == "user"]
    assert users[0] == "怎麼談薪水？"  # the earlier turn, as the user wrote it
    assert users[-1].startswith("那年終呢？")


async def test_a_call_a_server_writes_as_text_is_run_and_never_shown(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    written = '<tool_call>\n{"name": "searchKnowledge", "arguments": {"query": "薪资谈判"}}\n</tool_call>'
    fake_llm.script(text(written, chunk_size=5), text("先做功課，再開口。"))
    events = await run_turn(make_services(zh_variant_conversion=True), "怎麼談薪水？")
    call = next(e for e in events if isinstance(e, ToolCallEvent))
    assert call.name == SEARCH and call.requested_arguments == {"query": "薪資談判"}
    assert any(isinstance(e, ToolResultEvent) and e.ok for e in events)
    assert answer(events) == "先做功課，再開口。"
    assert events[-1].path == "A"


async def test_an_invented_tool_is_refused_and_the_answer_is_plain_text(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.script(
        text('{"name": "poemAboutCat", "arguments": {"topic": "貓"}}', chunk_size=4),
        text("我是 Summer，專門陪你聊求職、面試、薪資和履歷。"),
    )
    events = await run_turn(career_flow(make_services()), "幫我寫一首關於貓的詩")
    call = next(e for e in events if isinstance(e, ToolCallEvent))
    assert call.name == "poemAboutCat" and call.reason.startswith("not run")
    shown = answer(events)
    assert shown == "我是 Summer，專門陪你聊求職、面試、薪資和履歷。"
    assert "poemAboutCat" not in shown and "{" not in shown


async def test_an_echoed_schema_is_dropped_and_the_model_asked_again_without_tools(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    schema = '<tools>{"type": "function", "function": {"name": "searchKnowledge", "parameters": {}}}</tools>'
    fake_llm.script(text(schema, chunk_size=7), text("面試前先研究公司。"))
    events = await run_turn(make_services(), "面試要怎麼準備")
    assert answer(events) == "面試前先研究公司。"
    assert "tools" not in fake_llm.requests[1] or not fake_llm.requests[1]["tools"]


async def test_simplified_text_from_a_server_reaches_the_user_as_taiwan_chinese(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.script(text("这个项目的数据库，要先做好。", chunk_size=2))
    events = await run_turn(make_services(zh_variant_conversion=True), "面試要怎麼準備")
    assert answer(events) == "這個專案的資料庫，要先做好。"


async def test_usage_a_server_did_not_report_is_estimated_and_marked(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.script(text("面試前先研究公司產品。", usage=False))
    events = await run_turn(make_services(), "面試要怎麼準備")
    done = events[-1]
    assert isinstance(done, DoneEvent)
    assert done.usage["prompt_tokens"] > 0 and done.usage["completion_tokens"] > 0
    assert done.usage.get("estimated") == 1


async def test_passages_are_cut_to_the_budget_of_the_provider(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    def tool_content() -> str:
        content = str(fake_llm.requests[1]["messages"][-1]["content"])
        return "".join(part.split(">>>")[0] for part in content.split("<<<")[1:])  # the passages' bodies

    script = (tool_calls(Call(SEARCH, {"query": "薪水談判 開口 多少"}, id="c1")), text("好。"))
    fake_llm.script(*script)
    await run_turn(make_services(medium_flow="streamed"), "談薪水第一次開口要多開多少？")
    whole = tool_content()
    fake_llm.reset()
    fake_llm.script(*script)
    await run_turn(
        make_services(medium_flow="streamed", passage_budget_tokens=240), "談薪水第一次開口要多開多少？"
    )
    cut = tool_content()
    assert len(cut) < 0.7 * len(whole)
    assert "…" in cut and "1.1 到 1.15 倍" in cut  # the sentence that answers the question is kept


async def test_a_medium_question_takes_the_streamed_flow_when_asked_to(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    question = "我在新創公司做後端工程師三年了，最近覺得薪水偏低，想知道怎麼跟主管談加薪"
    fake_llm.script(text("先準備成果。"))
    events = await run_turn(make_services(medium_flow="streamed"), question)
    route = next(e for e in events if isinstance(e, RouteEvent))
    assert route.tier == "medium" and route.flow == "career-simple"
    assert any("streamed flow" in r for r in route.reasons)
    assert answer(events) == "先準備成果。"


async def test_a_medium_question_keeps_the_chain_on_a_fast_provider(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    question = "我在新創公司做後端工程師三年了，最近覺得薪水偏低，想知道怎麼跟主管談加薪"
    fake_llm.script(*(text(json.dumps({"ok": True})) for _ in range(6)))
    events = await run_turn(make_services(), question)
    route = next(e for e in events if isinstance(e, RouteEvent))
    assert route.tier == "medium" and route.flow == "career-chain"
