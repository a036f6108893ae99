"""Time to first visible text: our added time over the provider's own, on path B and path A,
and the seed's comparison with forced injection (search every time, chunks in the system prompt).

The provider is the fake OpenAI-compatible server in its own process with fixed latencies. The
baseline is measured in the same run by reading the fake directly with the same HTTP client:
- path B: the moment the provider's stream allows text to be shown, i.e. when its first N non-blank
  chunks have arrived (N = the buffer guard; the guard's window counts as the provider's share);
- path A: phase 1 read to its end, plus phase 3 up to its first chunk (the knowledge search is ours).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

import httpx

from bench.common import fake_llm, free_port, pct, process, table

FIRST_TOKEN = 0.30
INTER_CHUNK = 0.02
GUARD = 3
RUNS = 20


@dataclass
class Sample:
    first_text_ms: float
    total_ms: float
    prompt_tokens: int


_CLIENT = httpx.Client(timeout=60)  # one keep-alive client for the baseline and for ours alike


def _provider_direct(
    base: str, *, tool_round: bool, messages: list[dict[str, object]] | None = None
) -> Sample:
    """Read the fake directly: when could text be shown (B) / when does phase 1 end (A)."""
    body = {
        "model": "fake",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": messages or [{"role": "user", "content": "怎麼談薪水？"}],
    }
    t0 = time.perf_counter()
    counted = 0
    shown_at = None
    usage = 0
    with _CLIENT.stream("POST", f"{base}/chat/completions", json=body) as r:
        for line in r.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                usage = chunk["usage"]["prompt_tokens"]
            for choice in chunk.get("choices", []):
                content = (choice.get("delta") or {}).get("content")
                if content and content.strip():
                    counted += 1
                    if counted == (1 if tool_round else GUARD) and shown_at is None:
                        shown_at = time.perf_counter()
    end = time.perf_counter()
    first = (shown_at or end) - t0
    return Sample(1000 * first, 1000 * (end - t0), usage)


def _ours(url: str, message: str) -> Sample:
    t0 = time.perf_counter()
    first = None
    usage = 0
    with _CLIENT.stream("POST", f"{url}/api/chat", json={"message": message}) as r:
        r.raise_for_status()
        event = ""
        for line in r.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                if event == "delta" and first is None:
                    first = time.perf_counter()
                if event == "done":
                    usage = json.loads(line[6:])["usage"].get("prompt_tokens", 0)
    end = time.perf_counter()
    return Sample(1000 * ((first or end) - t0), 1000 * (end - t0), usage)


def _server(data_dir: str, llm_port: int, port: int, **extra: str) -> tuple[list[str], dict[str, str]]:
    env = {
        "CAREERWISE_DATA_DIR": data_dir,
        "CAREERWISE_LLM_BASE_URL": f"http://127.0.0.1:{llm_port}/v1",
        "CAREERWISE_LLM_MODEL": "fake",
        "CAREERWISE_BUFFER_GUARD_CHUNKS": str(GUARD),
        # the benchmark is one visitor asking many questions: no per-IP limit, no daily budget
        "CAREERWISE_ANONYMOUS_CHAT_PER_MINUTE": "0",
        "CAREERWISE_DAILY_TOKEN_BUDGET": "0",
        **extra,
    }
    return [sys.executable, "-m", "careerwise.cli", "serve", "--port", str(port)], env


def run() -> list[str]:
    out: list[str] = []
    data_dir = tempfile.mkdtemp(prefix="cw-bench-")
    rows = []
    results: dict[str, tuple[list[Sample], list[Sample]]] = {}
    for mode, message in (("text", "面試要怎麼準備"), ("tool", "怎麼談薪水？")):
        llm_port, port = free_port(), free_port()
        fake = fake_llm(llm_port, mode=mode, first_token_delay=FIRST_TOKEN, delay=INTER_CHUNK)
        base = f"http://127.0.0.1:{llm_port}/v1"
        with process(fake, ready_url=f"{base}/models"):
            args, env = _server(data_dir, llm_port, port)
            with process(args, env=env, ready_url=f"http://127.0.0.1:{port}/readyz", timeout=600):
                url = f"http://127.0.0.1:{port}"
                _ours(url, message)  # warm-up: caches, connections
                direct: list[Sample] = []
                ours: list[Sample] = []
                for _ in range(RUNS):
                    if mode == "text":
                        direct.append(_provider_direct(base, tool_round=False))
                    else:
                        p1 = _provider_direct(base + "", tool_round=True)
                        # phase 3 is the text reply; its first chunk is what the user waits for
                        p3 = _provider_direct_tool_reply(base)
                        direct.append(Sample(p1.total_ms + p3.first_text_ms, p1.total_ms + p3.total_ms, 0))
                    ours.append(_ours(url, message))
                results[mode] = (direct, ours)
                if mode == "text":
                    try:
                        forced = [_forced_injection(base, data_dir, message) for _ in range(RUNS)]
                    finally:
                        _close_forced()
                added = [o.first_text_ms - d.first_text_ms for o, d in zip(ours, direct, strict=True)]
                label = "B (no tool)" if mode == "text" else "A (tool)"
                rows.append(
                    [
                        label,
                        pct([d.first_text_ms for d in direct], 50),
                        pct([o.first_text_ms for o in ours], 50),
                        pct(added, 50),
                        pct(added, 95),
                    ]
                )
    out.append(
        f"## Time to first visible text (fake provider: {FIRST_TOKEN * 1000:.0f} ms first token, "
        f"{INTER_CHUNK * 1000:.0f} ms between chunks, guard N={GUARD}, {RUNS} runs)\n"
    )
    out.append(table(["path", "provider p50 ms", "ours p50 ms", "added p50 ms", "added p95 ms"], rows))
    out.append("\nGoal: added p50 on path B <= 10 ms.")
    b_ours, a_ours = results["text"][1], results["tool"][1]
    out.append(
        "\n## Tool use vs forced injection (seed 000: search every time, chunks in the system prompt)\n"
    )
    out.append(
        table(
            ["design", "first text p50 ms", "total p50 ms", "prompt tokens (fake's estimate)"],
            [
                [
                    "forced injection",
                    pct([f.first_text_ms for f in forced], 50),
                    pct([f.total_ms for f in forced], 50),
                    int(pct([f.prompt_tokens for f in forced], 50)),
                ],
                [
                    "tool use, path B",
                    pct([o.first_text_ms for o in b_ours], 50),
                    pct([o.total_ms for o in b_ours], 50),
                    int(pct([o.prompt_tokens for o in b_ours], 50)),
                ],
                [
                    "tool use, path A",
                    pct([o.first_text_ms for o in a_ours], 50),
                    pct([o.total_ms for o in a_ours], 50),
                    int(pct([o.prompt_tokens for o in a_ours], 50)),
                ],
            ],
        )
    )
    os.environ.pop("CAREERWISE_DATA_DIR", None)
    return out


def _close_forced() -> None:
    """End the forced-injection design's BM25 threads, database connections and event loop."""
    while _FORCED:
        loop, db, kb = _FORCED.pop()
        kb.close()
        loop.run_until_complete(db.dispose())
        loop.close()


def _provider_direct_tool_reply(base: str) -> Sample:
    """The fake in tool mode answers a conversation that already has a tool result with text."""
    body = {
        "model": "fake",
        "stream": True,
        "messages": [
            {"role": "user", "content": "怎麼談薪水？"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "c",
                        "type": "function",
                        "function": {"name": "searchKnowledge", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c", "content": "x"},
        ],
    }
    t0 = time.perf_counter()
    first = None
    with _CLIENT.stream("POST", f"{base}/chat/completions", json=body) as r:
        for line in r.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                chunk = json.loads(line[6:])
                for choice in chunk.get("choices", []):
                    if (choice.get("delta") or {}).get("content") and first is None:
                        first = time.perf_counter()
    end = time.perf_counter()
    return Sample(1000 * ((first or end) - t0), 1000 * (end - t0), 0)


_FORCED: list[tuple[Any, Any, Any]] = []  # (loop, database, knowledge base) of the forced-injection design


def _forced_injection(base: str, data_dir: str, message: str) -> Sample:
    """The pre-refactor design: search with the raw message, put the chunks in the system prompt, one call."""
    import asyncio

    from careerwise import prompts
    from careerwise.config import Settings
    from careerwise.knowledge.service import KnowledgeBase
    from careerwise.store import Database

    if not _FORCED:
        loop = asyncio.new_event_loop()
        settings = Settings(_env_file=None, data_dir=data_dir)  # type: ignore[call-arg]
        db = Database(settings.resolved_database_url)
        kb = KnowledgeBase(db, embedding_model=settings.embedding_model)
        loop.run_until_complete(kb.load())
        _FORCED.append((loop, db, kb))
    loop, _db, kb = _FORCED[0]
    t0 = time.perf_counter()
    result = loop.run_until_complete(kb.search(message, top_k=3, candidates=12))
    knowledge = "\n\n".join(h.chunk.text for h in result.hits[:3])
    system = (
        prompts.career_system(True)
        + "\n【重要】你必須根據以下知識庫內容來回答，不可忽略或自行編造\n知識庫：\n"
        + knowledge
    )
    search_ms = 1000 * (time.perf_counter() - t0)
    s = _provider_direct(
        base,
        tool_round=True,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": message}],
    )
    return Sample(search_ms + s.first_text_ms, search_ms + s.total_ms, s.prompt_tokens)
