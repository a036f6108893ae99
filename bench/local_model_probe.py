"""Probe the embedded model: load time, speed, and whether it chooses the searchKnowledge tool.

    .venv/bin/python bench/local_model_probe.py [--runs 3] [--max-tokens 150] [--threads N] [--json out.json]

Prints the model load time, time to first token and decode speed for a short zh prompt, then for each seed
question (and each run): the decision (tool call or direct answer), the time to the first visible text or to
the tool call, the total time and the tokens generated. The system prompt authorises tool use rather than
commanding it, as the app's career prompt does. The first question pays for evaluating the whole system
prompt + tool block; later requests reuse that prefix from the KV cache (llama.cpp prefix matching), so
"cold" and "warm" numbers differ a lot on a 2-core machine (prompt evaluation runs at ~45-90 tok/s).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from careerwise.config import Settings
from careerwise.llm.accumulator import ToolCallAccumulator
from careerwise.llm.local import LocalProvider, ensure_model_file
from careerwise.llm.types import ChatMessage, CompletionRequest
from careerwise.tools.search_knowledge import SPEC as SEARCH

SYSTEM = (
    "你是 Summer，一位台灣的職涯教練，用溫暖、直接、具體的繁體中文（台灣用語）回答求職、轉職、面試、薪資與履歷問題。"
    "當你需要 Summer 的特定觀點、案例或數據時，使用 searchKnowledge 工具查詢知識庫；常識性問題直接回答。"
    "如果知識庫沒有相關資料，根據你的專業知識回答，不要憑空編造來源。"
)

# (question, what the seed says: does it need a search?)
QUESTIONS: list[tuple[str, bool]] = [
    ("面試要穿什麼？", False),
    ("轉職前端的學習路線？", False),
    ("寫程式 30 歲以後還行嗎？", False),
    ("怎麼談薪水？", True),
    ("Summer 對跳槽加薪有什麼看法？", True),
]


@dataclass
class Run:
    question: str
    expected_search: bool
    run: int
    decision: str  # "tool" | "text"
    first_visible_s: float | None  # first text chunk, or the tool call
    total_s: float
    prompt_tokens: int
    completion_tokens: int
    detail: str


async def probe_question(
    provider: LocalProvider, question: str, expected: bool, n: int, max_tokens: int
) -> Run:
    request = CompletionRequest(
        messages=[ChatMessage("system", SYSTEM), ChatMessage("user", question)],
        tools=[SEARCH],
        max_tokens=max_tokens,
        temperature=0.7,
    )
    acc = ToolCallAccumulator()
    texts: list[str] = []
    first: float | None = None
    prompt_tokens = completion_tokens = 0
    started = time.perf_counter()
    async for chunk in provider.stream(request):
        if (chunk.text or chunk.tool_deltas) and first is None:
            first = time.perf_counter() - started
        for delta in chunk.tool_deltas:
            acc.add(delta)
        if chunk.text:
            texts.append(chunk.text)
        if chunk.usage:
            prompt_tokens, completion_tokens = chunk.usage.prompt_tokens, chunk.usage.completion_tokens
    total = time.perf_counter() - started
    calls = acc.calls()
    if calls:
        decision, detail = "tool", f"{calls[0].name}({calls[0].arguments})"
    else:
        decision, detail = "text", "".join(texts).replace("\n", " ")[:70]
    return Run(question, expected, n, decision, first, total, prompt_tokens, completion_tokens, detail)


async def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=150)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--model-path", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None, help="also write the runs as JSON here")
    args = parser.parse_args()

    print(
        "load average at start: {:.2f} {:.2f} {:.2f} (other work on the box skews every number)".format(
            *os.getloadavg()
        )
    )
    t0 = time.perf_counter()
    model_path = args.model_path or ensure_model_file(Settings().data_dir / "models")
    print(f"model file ready in {time.perf_counter() - t0:.2f}s: {model_path}")
    provider = LocalProvider(model_path=model_path, n_ctx=4096, n_threads=args.threads)
    try:
        t0 = time.perf_counter()
        await provider.warm()
        print(f"model load: {time.perf_counter() - t0:.2f}s")

        # Speed on a short zh prompt, no tools.
        for attempt in range(2):
            request = CompletionRequest(
                messages=[
                    ChatMessage("system", "你是一位職涯教練。"),
                    ChatMessage("user", "用三句話介紹你自己。"),
                ],
                max_tokens=80,
                temperature=0.7,
            )
            started = time.perf_counter()
            first: float | None = None
            usage = None
            async for chunk in provider.stream(request):
                if chunk.text and first is None:
                    first = time.perf_counter() - started
                usage = chunk.usage or usage
            total = time.perf_counter() - started
            assert usage is not None and first is not None
            rate = (usage.completion_tokens - 1) / max(total - first, 1e-6)
            print(
                f"short zh prompt #{attempt + 1}: prompt {usage.prompt_tokens} tok, TTFT {first:.2f}s, "
                f"{usage.completion_tokens} tok in {total:.2f}s -> {rate:.1f} tok/s"
            )

        runs: list[Run] = []
        print(f"\nseed questions x{args.runs} (max_tokens={args.max_tokens}, tools=[{SEARCH.name}])")
        print(
            f"{'question':<26} {'seed':<7} {'run':>3} {'choice':<6} {'first':>6} {'total':>6} {'tok':>4}  detail"
        )
        for rnd in range(args.runs):
            for question, expected in QUESTIONS:
                r = await probe_question(provider, question, expected, rnd + 1, args.max_tokens)
                runs.append(r)
                first_s = f"{r.first_visible_s:.2f}" if r.first_visible_s is not None else "-"
                seed = "search" if expected else "direct"
                print(
                    f"{question:<26} {seed:<7} {r.run:>3} {r.decision:<6} {first_s:>6} {r.total_s:>6.2f} "
                    f"{r.completion_tokens:>4}  {r.detail}",
                    flush=True,
                )

        print("\nsummary")
        for question, expected in QUESTIONS:
            mine = [r for r in runs if r.question == question]
            tools = sum(r.decision == "tool" for r in mine)
            firsts = [r.first_visible_s for r in mine if r.first_visible_s is not None]
            print(
                f"  {question:<26} seed={'search' if expected else 'direct':<6} tool {tools}/{len(mine)}  "
                f"first visible median {statistics.median(firsts):.2f}s  "
                f"total median {statistics.median(r.total_s for r in mine):.2f}s"
            )
        agree = sum((r.decision == "tool") == r.expected_search for r in runs)
        print(f"  decisions matching the seed: {agree}/{len(runs)}")
        print("load average at end: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
        if args.json:
            args.json.write_text(json.dumps([asdict(r) for r in runs], ensure_ascii=False, indent=2))
    finally:
        await provider.aclose()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
