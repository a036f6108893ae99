"""``/metrics`` over real HTTP, parsed with prometheus_client's own parser, after real turns on the fake
LLM: every count comes from the events the user's stream carried."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Connection

from careerwise.events import DeltaEvent, DoneEvent, ErrorEvent, RouteEvent
from careerwise.tracing.llm_calls import LLMCall
from careerwise.tracing.metrics import Metrics
from careerwise.tracing.turn import TurnEnd, TurnObserver, TurnStart
from tests.conftest import LiveServer, client, parse_sse
from tests.fakes.fake_llm import Call, FakeLLM, error, text, tool_calls

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(server: LiveServer) -> Samples:
    with client(server) as c:
        r = c.get("/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain")
    out: Samples = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sum over every sample of ``name`` whose labels include ``labels`` (0 when there is none)."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= set(ls))


def test_a_tool_turn_is_counted_from_its_events(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    server = live_server(use_full_retrieval_range=True, configured_top_k=7)
    fake_llm.script(
        tool_calls(Call("searchKnowledge", {"query": "薪水談判 技巧", "top_k": 3}, id="c1")),
        text("先做功課，再開口。"),
    )
    with client(server) as c:
        r = c.post("/api/chat", json={"message": "怎麼談薪水？"})
    events = parse_sse(r.text)
    route = next(d for n, d in events if n == "route")
    done = next(d for n, d in events if n == "done")
    call = next(d for n, d in events if n == "tool_call")
    assert done["path"] == "A" and call["effective_arguments"]["top_k"] == 7

    m = scrape(server)
    turn = {"channel": "web", "intent": "career", "tier": "simple", "path": "A", "status": "ok"}
    assert value(m, "careerwise_turns_total", assistant="summer", **turn) == 1
    assert value(m, "careerwise_turns_total") == 1
    assert value(m, "careerwise_routing_decisions_total", layer=route["layer"], intent="career") == 1
    assert value(m, "careerwise_tool_calls_total", tool="searchKnowledge", ok="true") == 1
    assert value(m, "careerwise_tool_topk_overrides_total", tool="searchKnowledge") == 1
    assert value(m, "careerwise_tool_duration_seconds_count", tool="searchKnowledge") == 1
    assert value(m, "careerwise_retrieval_failures_total") == 0
    assert value(m, "careerwise_degradations_total") == 0
    for purpose in ("phase1", "phase3"):
        assert value(m, "careerwise_llm_calls_total", purpose=purpose, outcome="ok") == 1
        assert value(m, "careerwise_llm_time_to_first_token_seconds_count", purpose=purpose) == 1
        assert value(m, "careerwise_llm_duration_seconds_count", purpose=purpose) == 1
    # the tokens counted are the tokens the done event reported
    assert value(m, "careerwise_llm_tokens_total", kind="prompt") == done["usage"]["prompt_tokens"] > 0
    assert (
        value(m, "careerwise_llm_tokens_total", kind="completion") == done["usage"]["completion_tokens"] > 0
    )
    # requests are labelled by route template; /metrics counts itself only after it answered
    assert value(m, "careerwise_http_requests_total", method="POST", route="/api/chat", status="200") == 1
    assert value(m, "careerwise_http_requests_total", route="/metrics") == 0


def test_errors_degradations_and_requests_are_counted(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    server = live_server(llm_retries=0)
    fake_llm.script(
        error(500),  # the turn fails: an error event
        tool_calls(Call("searchKnowledge", {"query": ""}, id="bad")),  # arguments that do not resolve
        text("好的。"),
    )
    with client(server) as c:
        failed = c.post("/api/chat", json={"message": "怎麼談薪水？", "mode": "full"}).json()
        assert failed["error"]["code"] == "llm_unavailable"
        ok = c.post("/api/chat", json={"message": "怎麼談薪水？", "mode": "full"}).json()
        assert ok["status"] == "ok" and ok["tool_results"][0]["ok"] is False
        assert c.post("/api/chat", json={"message": "   "}).status_code == 422
        assert c.get("/no/such/page").status_code == 404
        assert c.get(f"/api/messages/{'0' * 32}/feedback").status_code == 405

    m = scrape(server)
    assert value(m, "careerwise_errors_total", code="llm_unavailable") == 1
    assert value(m, "careerwise_llm_calls_total", purpose="phase1", outcome="llm_unavailable") == 1
    assert value(m, "careerwise_turns_total", status="error", path="B") == 1
    assert value(m, "careerwise_turns_total", status="ok") == 1
    # a call whose arguments did not resolve is a failed tool call, not a retrieval failure
    assert value(m, "careerwise_tool_calls_total", tool="searchKnowledge", ok="false") == 1
    assert value(m, "careerwise_retrieval_failures_total") == 0
    assert value(m, "careerwise_http_requests_total", route="/api/chat", status="200") == 2
    assert value(m, "careerwise_http_requests_total", route="/api/chat", status="422") == 1
    assert value(m, "careerwise_http_requests_total", route="unmatched", status="404") == 1
    route = "/api/messages/{message_id}/feedback"
    assert value(m, "careerwise_http_requests_total", route=route, status="405") == 1


def test_a_failing_search_is_a_retrieval_failure_and_a_degradation(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer]
) -> None:
    server = live_server()
    server.services.kb.reranker = RaisingReranker()  # the search raises after the index answered
    fake_llm.script(tool_calls(Call("searchKnowledge", {"query": "薪水", "top_k": 3}, id="c1")), text("好。"))
    with client(server) as c:
        body = c.post("/api/chat", json={"message": "怎麼談薪水？", "mode": "full"}).json()
    assert [d["reason"] for d in body["degraded"]] == ["tool_failed"]
    m = scrape(server)
    assert value(m, "careerwise_retrieval_failures_total", kind="search_failed") == 1
    assert value(m, "careerwise_degradations_total", reason="tool_failed") == 1
    assert value(m, "careerwise_tool_calls_total", tool="searchKnowledge", ok="false") == 1


class RaisingReranker:
    def rerank(self, *args: object) -> list[object]:
        raise RuntimeError("the reranker's model file is gone")


def test_each_app_has_its_own_registry(fake_llm: FakeLLM, live_server: Callable[..., LiveServer]) -> None:
    first, second = live_server(), live_server()
    fake_llm.script(text("你好！"))
    with client(first) as c:
        assert c.post("/api/chat", json={"message": "怎麼談薪水？", "mode": "full"}).status_code == 200
    assert value(scrape(first), "careerwise_turns_total") == 1
    assert value(scrape(second), "careerwise_turns_total") == 0


def test_a_sink_that_raises_is_counted_and_the_others_carry_on() -> None:
    metrics = Metrics()
    start = TurnStart(trace_id="t", conversation_id="c", channel="web", assistant_id="summer", model="m")

    class Broken:
        def observe(self, event: object) -> None:
            raise RuntimeError("disk full")

        def llm_call(self, call: LLMCall) -> None:
            raise RuntimeError("disk full")

        def finish(self, end: TurnEnd) -> None:
            raise RuntimeError("disk full")

    observer = TurnObserver(
        start,
        [Broken(), metrics.turn_sink(start)],
        on_failure=lambda n: metrics.sink_failures.labels(n).inc(),
    )
    observer.observe(RouteEvent(intent="greeting", layer="rules", flow="greeting"))
    observer.observe(DeltaEvent(text="嗨", phase=1))
    observer.observe(ErrorEvent(code="internal_error", message="x"))
    observer.observe(
        DoneEvent(trace_id="t", conversation_id="c", message_id="m", status="error", path="greeting")
    )
    observer.finish(TurnEnd(status="error", flow="greeting", path="greeting"))
    observer.finish(TurnEnd(status="error", flow="greeting", path="greeting"))  # once only
    samples: Samples = {}
    for family in text_string_to_metric_families(metrics.render().decode()):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    assert value(samples, "careerwise_telemetry_sink_failures_total", sink="Broken") == 5
    assert value(samples, "careerwise_turns_total", intent="greeting", status="error") == 1
    assert value(samples, "careerwise_errors_total", code="internal_error") == 1


@pytest.mark.parametrize(
    ("kind", "done_after_a_turn"),
    [("write", 2), ("read", 1)],  # the turn's opening and closing; its pre-turn read (settings, budget)
)
def test_the_database_threads_jobs_and_failures_are_exported(
    fake_llm: FakeLLM, live_server: Callable[..., LiveServer], kind: str, done_after_a_turn: int
) -> None:
    """A turn's writes and its pre-turn read are jobs of the writer and reader threads; a job that
    fails is counted by its name, and counts as done nowhere."""
    server = live_server()
    fake_llm.script(text("先做功課。"))
    with client(server) as c:
        assert c.post("/api/chat", json={"message": "怎麼談薪水？"}).status_code == 200
    before = scrape(server)
    assert value(before, f"careerwise_database_{kind}s_total") >= done_after_a_turn
    assert value(before, f"careerwise_database_{kind}_failures_total") == 0

    def failing(connection: Connection) -> None:
        raise RuntimeError("broken job")

    async def run_failing() -> None:
        run = server.services.db.write if kind == "write" else server.services.db.read
        with pytest.raises(RuntimeError):
            await run(failing, name="test_job")

    asyncio.run(run_failing())  # the thread answers whichever loop asked
    after = scrape(server)
    assert value(after, f"careerwise_database_{kind}_failures_total", job="test_job") == 1
    assert value(after, f"careerwise_database_{kind}s_total") == value(
        before, f"careerwise_database_{kind}s_total"
    )
