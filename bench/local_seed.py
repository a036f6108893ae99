"""The seed's questions end to end through the engine on the embedded model (slow: minutes).

Records, per question: how often the model searched, time to first visible text and total time.
Numbers, not pass/fail. Run: ``python -m bench local_seed``.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from bench.common import table
from careerwise.config import Settings
from careerwise.engine import TurnRequest
from careerwise.events import DeltaEvent, ToolCallEvent
from careerwise.services import build_services

RUNS = 3
QUESTIONS: list[tuple[str, str]] = [
    ("面試要穿什麼？", "no search"),
    ("轉職前端的學習路線？", "no search"),
    ("寫程式 30 歲以後還行嗎？", "no search"),
    ("怎麼談薪水？", "search"),
    ("Summer 對跳槽加薪有什麼看法？", "search"),
]


def _data_dir() -> Path:
    data_dir = Path(tempfile.mkdtemp(prefix="cw-local-"))
    (data_dir / "models").symlink_to(Path("data/models").resolve(), target_is_directory=True)
    return data_dir


async def _run() -> list[list[object]]:
    data_dir = await asyncio.to_thread(_data_dir)
    settings = Settings(_env_file=None, data_dir=data_dir, phase1_max_tokens=150, phase3_max_tokens=150)  # type: ignore[call-arg]
    services = build_services(settings)
    rows: list[list[object]] = []
    try:
        await services.prepare_knowledge()
        warm = getattr(services.provider, "warm", None)
        if warm:
            await warm()
        for question, seed in QUESTIONS:
            searched, firsts, totals = 0, [], []
            for _ in range(RUNS):
                t0 = time.perf_counter()
                first = None
                called = False
                async for e in services.engine.run(TurnRequest(message=question, channel="bench")):
                    if isinstance(e, ToolCallEvent):
                        called = True
                    if isinstance(e, DeltaEvent) and first is None:
                        first = time.perf_counter() - t0
                totals.append(time.perf_counter() - t0)
                firsts.append(first if first is not None else totals[-1])
                searched += called
            rows.append(
                [
                    question,
                    seed,
                    f"{searched}/{RUNS}",
                    f"{statistics.median(firsts):.2f} s",
                    f"{statistics.median(totals):.2f} s",
                ]
            )
    finally:
        await services.aclose()
    return rows


def run() -> list[str]:
    rows = asyncio.run(_run())
    return [
        f"## The seed's questions on the embedded model, end to end ({RUNS} runs each, max_tokens 150 per phase)\n",
        table(["question", "seed says", "searched", "first visible text (median)", "total (median)"], rows),
    ]
