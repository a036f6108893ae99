"""The provider profile against a real HTTP server (the fake OpenAI-compatible one): a llama.cpp server
is detected and served one request at a time, a server that cuts a stream off when another request starts
is found out, set to concurrency 1 and the cut call made again, speeds are measured from a call's timing,
and the complex flow's agents take turns on a provider that serves one request at a time."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from careerwise.errors import LLMError
from careerwise.events import ProgressEvent, ReportEvent
from careerwise.llm.grammar import TEXT_ONLY, call_or_text
from careerwise.llm.openai_provider import OpenAIProvider, StreamCutError
from careerwise.llm.profile import ProviderProfile, profile_of
from careerwise.llm.types import ChatMessage, CompletionRequest, ToolSpec
from careerwise.services import Services
from careerwise.tracing.background import LLM_STREAM_CUT, failure_counts
from tests.fakes.fake_llm import FakeLLM, Reply, text
from tests.integration.test_deep_answers import COMPLEX, as_json, report_of, responder, run_turn, services_for

REQUEST = CompletionRequest(messages=[ChatMessage(role="user", content="怎麼談薪水？")], max_tokens=64)


def provider(fake: FakeLLM, **kw: Any) -> OpenAIProvider:
    return OpenAIProvider(
        base_url=fake.base_url, api_key="x", model="fake-model", connect_timeout=5, read_timeout=10, **kw
    )


async def collect(p: OpenAIProvider) -> str:
    return "".join([c.text or "" async for c in p.stream(REQUEST)])


async def collect_with_one_retry(p: OpenAIProvider) -> str:
    """What a deep step does (flows/deep_steps/): a retryable failure is tried once more."""
    try:
        return await collect(p)
    except LLMError as exc:
        assert exc.retryable
        return await collect(p)


async def until_requests(fake: FakeLLM, n: int) -> None:
    while len(fake.requests) < n:  # noqa: ASYNC110 - the fake counts on its own thread: nothing to await
        await asyncio.sleep(0.005)


async def test_a_llama_cpp_server_is_detected_and_gets_concurrency_1(fake_llm: FakeLLM) -> None:
    fake_llm.owned_by = "llamacpp"
    p = provider(fake_llm, profile=ProviderProfile(), detect_concurrency=True)
    try:
        assert p.profile.concurrency == 3
        assert await collect(p) == "好的。"
        assert p.profile.concurrency == 1 and p.profile.design == "compact"
    finally:
        await p.aclose()


TOOLS_REQUEST = CompletionRequest(
    messages=[ChatMessage(role="user", content="怎麼談薪水？")],
    tools=[ToolSpec(name="searchKnowledge", description="search", parameters={"type": "object"})],
    tool_choice="auto",
    max_tokens=64,
)


async def test_a_llama_cpp_server_gets_the_call_or_text_grammar_with_tools_offered(fake_llm: FakeLLM) -> None:
    """A llama.cpp server's model writes its calls as text: a request offering tools with tool_choice
    auto carries the grammar that keeps both branches open, one with tool_choice none a text-only one,
    one without tools none; the concurrency stays as declared."""
    fake_llm.owned_by = "me"  # llama-cpp-python's server
    p = provider(fake_llm, profile=ProviderProfile(concurrency=3), detect_grammar=True)
    try:
        [c async for c in p.stream(TOOLS_REQUEST)]
        [c async for c in p.stream(REQUEST)]
        [c async for c in p.stream(replace(TOOLS_REQUEST, tool_choice="none"))]
        with_tools, plain, none = fake_llm.requests
        assert with_tools["grammar"] == call_or_text(["searchKnowledge"], tagged=True)
        assert "grammar" not in plain and none["grammar"] == TEXT_ONLY
        assert p.profile.tool_calling == "constrained" and p.profile.concurrency == 3
    finally:
        await p.aclose()


async def test_another_server_gets_no_grammar(fake_llm: FakeLLM) -> None:
    p = provider(fake_llm, profile=ProviderProfile(), detect_grammar=True)
    try:
        [c async for c in p.stream(TOOLS_REQUEST)]
        assert "grammar" not in fake_llm.requests[0] and p.profile.tool_calling == "native"
    finally:
        await p.aclose()


async def test_another_server_keeps_its_concurrency(fake_llm: FakeLLM) -> None:
    p = provider(fake_llm, profile=ProviderProfile(), detect_concurrency=True)
    try:
        await collect(p)
        assert p.profile.concurrency == 3 and p.profile.stream_cuts == 0
    finally:
        await p.aclose()


async def test_a_cut_before_any_text_is_retried_alone_and_the_server_set_to_one_at_a_time(
    fake_llm: FakeLLM,
) -> None:
    fake_llm.interrupt_on_new_request = True
    # the first answer's first chunk carries nothing (as a llama.cpp server's may): cut there, nothing was
    # passed on, so the provider makes the call again itself once the other one is done
    slow_start = Reply(kind="stream", deltas=[{}, {}, {"content": "先查"}, {"content": "行情"}], delay=0.3)
    fake_llm.script(slow_start, text("第二個回答"), text("先查行情"))
    cuts_before = failure_counts()[LLM_STREAM_CUT]
    p = provider(fake_llm, profile=ProviderProfile())
    try:
        first = asyncio.create_task(collect(p))
        await until_requests(fake_llm, 1)
        second = asyncio.create_task(collect(p))
        assert await asyncio.gather(first, second) == ["先查行情", "第二個回答"]
    finally:
        await p.aclose()
    assert fake_llm.interrupted == 1 and len(fake_llm.requests) == 3
    assert p.profile.concurrency == 1 and p.profile.stream_cuts == 1
    assert failure_counts()[LLM_STREAM_CUT] == cuts_before + 1


async def test_a_cut_after_text_is_raised_retryable_and_the_retry_waits_for_the_other_call(
    fake_llm: FakeLLM,
) -> None:
    fake_llm.interrupt_on_new_request = True
    fake_llm.script(text("先查行情再開價", chunks=4, delay=0.3), text("第二個回答"))
    fake_llm.default = text("先查行情再開價", chunks=4, delay=0.05)
    p = provider(fake_llm, profile=ProviderProfile())
    try:
        first = asyncio.create_task(collect(p))
        await until_requests(fake_llm, 1)
        second = asyncio.create_task(collect(p))
        results = await asyncio.gather(first, second, return_exceptions=True)
        assert isinstance(results[0], StreamCutError) and results[0].retryable
        assert results[1] == "第二個回答"
        assert p.profile.concurrency == 1
        # made again (as a deep step does), now alone: the fake sees one stream at a time and cuts none
        fake_llm.reset()
        fake_llm.interrupt_on_new_request = True
        fake_llm.default = text("先查行情再開價", chunks=4, delay=0.05)
        again = await asyncio.gather(*(collect_with_one_retry(p) for _ in range(3)))
        assert again == ["先查行情再開價"] * 3
        assert fake_llm.interrupted == 0 and fake_llm.max_open_streams == 1
    finally:
        await p.aclose()


async def test_a_call_long_enough_to_time_measures_the_speeds(fake_llm: FakeLLM) -> None:
    fake_llm.script(
        text("薪" * 80, first_token_delay=0.3, chunks=20, delay=0.03),  # 40 tokens by the fake's count
        text("好"),  # too short to say anything: the figures stay
    )
    p = provider(fake_llm, profile=ProviderProfile())
    try:
        assert p.profile.gen_tokens_per_s is None and p.profile.source == "default"
        await collect(p)
        measured_once = p.profile
        assert measured_once.source == "measured"
        assert measured_once.gen_tokens_per_s is not None and measured_once.gen_tokens_per_s > 0
        await collect(p)
        assert p.profile == measured_once
    finally:
        await p.aclose()


async def test_declared_speeds_are_never_measured_over(fake_llm: FakeLLM) -> None:
    fake_llm.script(text("薪" * 80, first_token_delay=0.3, chunks=20, delay=0.03))
    declared = ProviderProfile(gen_tokens_per_s=25.0, source="declared")
    p = provider(fake_llm, profile=declared, measure_speed=False)
    try:
        await collect(p)
        assert p.profile == declared
    finally:
        await p.aclose()


# --------------------------------------------------------------------------- through the deep flow


async def test_agents_cut_off_by_each_other_are_made_again_and_the_next_turn_runs_them_in_turn(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.interrupt_on_new_request = True

    def agent(role: str) -> Callable[[dict[str, Any]], Reply]:
        from tests.integration.test_deep_answers import AGENTS

        return lambda body: as_json(AGENTS[role], delay=0.2)

    fake_llm.responder = responder({role: agent(role) for role in ("market", "growth", "practice")})
    # the concurrency is not declared: the provider asks the server (the fake: not llama.cpp) and
    # starts at 3, so the three agents start together and the fake cuts the first two off
    services = services_for(make_services, "complex", llm_concurrency=None, deep_design="full")
    cuts_before = failure_counts()[LLM_STREAM_CUT]
    events = await run_turn(services, COMPLEX)
    report = report_of(events)
    assert report.missing_facets == []  # every agent answered, the cut ones on their second call
    assert fake_llm.interrupted >= 1
    profile = profile_of(services.provider)
    assert profile.concurrency == 1 and profile.stream_cuts == fake_llm.interrupted
    assert failure_counts()[LLM_STREAM_CUT] == cuts_before + fake_llm.interrupted

    cut_so_far = fake_llm.interrupted
    events = await run_turn(services, COMPLEX)
    assert isinstance(report_of(events), ReportEvent)
    assert fake_llm.interrupted == cut_so_far  # one request at a time now: nothing is cut


async def test_on_a_provider_serving_one_request_at_a_time_the_agents_take_turns(
    fake_llm: FakeLLM, make_services: Callable[..., Services]
) -> None:
    fake_llm.responder = responder({})
    services = services_for(make_services, "complex", llm_concurrency=1, deep_design="full")
    events = await run_turn(services, COMPLEX)
    stages = [e.stage for e in events if isinstance(e, ProgressEvent) and e.stage.startswith("agent_")]
    # each agent starts after the one before it finished (they hold the provider's only slot in turn)
    assert stages == ["agent_started", "agent_finished"] * 3
    assert report_of(events).missing_facets == []
