"""The HTTP client's INFO line per LLM call ("HTTP Request: POST .../chat/completions 200"): is it written,
and what does it cost a serving process? (issue #10, decision 0012.)

Two parts, in this process:

1. **Is it written?** The provider (``OpenAIProvider``, both SDK transports) streams ``CALLS`` completions
   from the fake provider (tests/fakes/fake_llm.py, a real HTTP server in a thread) under the CLI's
   logging set-up, with the httpx/httpx2 loggers left as the libraries set them and then as
   `careerwise serve` sets them (``QUIET_LOGGERS`` at WARNING); a handler counts the lines a call leaves.
2. **What does it cost?** The same record sent ``N`` times through the CLI's handler set-up (its format,
   the masking filter, a stream handler writing to a file, as stderr is under systemd or docker) with the
   logger at INFO (written) and at WARNING (dropped at the level check), the two interleaved block by
   block so the shared machine's load falls on both alike. CPU time of this thread (``time.thread_time``),
   not wall time. The difference is the line's cost; a turn makes one LLM call on path B, two on path A,
   more on the deep paths.

``python -m bench httplog``; ``BENCH_HTTPLOG_N`` (20000 a side) and ``BENCH_HTTPLOG_ROUNDS`` (10).
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
import time
from pathlib import Path

from bench.common import table

N = int(os.environ.get("BENCH_HTTPLOG_N", "20000"))
ROUNDS = int(os.environ.get("BENCH_HTTPLOG_ROUNDS", "10"))
CALLS = 5
URL = "http://127.0.0.1:8009/v1/chat/completions"


class _Count(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("HTTP Request:"):
            self.lines.append(record.getMessage())


def _lines_per_call(quiet: bool) -> dict[str, float]:
    """HTTP Request lines one streamed completion leaves, per SDK transport."""
    from careerwise.cli import QUIET_LOGGERS
    from careerwise.llm.openai_provider import OpenAIProvider
    from careerwise.llm.types import ChatMessage, CompletionRequest
    from tests.fakes.fake_llm import FakeLLM, text

    counter = _Count()
    root = logging.getLogger()
    root.addHandler(counter)
    old_level = root.level
    root.setLevel(logging.INFO)  # `careerwise serve` runs the root logger at INFO
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING if quiet else logging.NOTSET)
    out: dict[str, float] = {}
    try:
        with FakeLLM() as fake:
            fake.default = text("先整理你的經歷。", chunk_size=4)
            for client in ("aiohttp", "httpx"):
                counter.lines.clear()

                async def calls(client: str = client) -> None:
                    provider = OpenAIProvider(
                        base_url=fake.base_url,
                        api_key="x",
                        model="fake-model",
                        connect_timeout=5,
                        read_timeout=10,
                        http_client=client,  # type: ignore[arg-type]
                    )
                    try:
                        for _ in range(CALLS):
                            request = CompletionRequest(messages=[ChatMessage(role="user", content="面試")])
                            async for _chunk in provider.stream(request):
                                pass
                    finally:
                        await provider.aclose()

                asyncio.run(calls())
                out[client] = len(counter.lines) / CALLS
    finally:
        root.removeHandler(counter)
        root.setLevel(old_level)
        for name in QUIET_LOGGERS:
            logging.getLogger(name).setLevel(logging.NOTSET)
    return out


def _cost() -> tuple[float, float, list[float]]:
    """µs of this thread's CPU per record written and per record dropped, and the per-round differences."""
    import httpx2

    from careerwise.tracing.masking import install_log_masking

    sink = Path(tempfile.mkdtemp(prefix="cw-bench-httplog-")) / "serve.log"
    handler = logging.StreamHandler(sink.open("w", encoding="utf-8"))
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    install_log_masking([handler])
    logger = logging.getLogger("bench.httplog.httpx2")  # httpx2's record, on a logger of our own
    logger.propagate = False
    logger.addHandler(handler)
    url = httpx2.URL(URL)

    def block(level: int) -> float:
        logger.setLevel(level)
        t0 = time.thread_time()
        for _ in range(N // ROUNDS):
            logger.info('HTTP Request: %s %s "%s %d %s"', "POST", url, "HTTP/1.1", 200, "OK")
        return time.thread_time() - t0

    written = dropped = 0.0
    diffs: list[float] = []
    block(logging.INFO)  # warm-up
    for n in range(ROUNDS):
        order = (logging.INFO, logging.WARNING) if n % 2 == 0 else (logging.WARNING, logging.INFO)
        got = {level: block(level) for level in order}
        written += got[logging.INFO]
        dropped += got[logging.WARNING]
        diffs.append(1e6 * (got[logging.INFO] - got[logging.WARNING]) / (N // ROUNDS))
    handler.close()
    per = N // ROUNDS * ROUNDS
    return 1e6 * written / per, 1e6 * dropped / per, diffs


def run() -> list[str]:
    loud, quiet = _lines_per_call(quiet=False), _lines_per_call(quiet=True)
    written, dropped, diffs = _cost()
    diffs.sort()
    load = os.getloadavg()
    return [
        f"## The HTTP client's INFO line per LLM call ({N} records a side, {ROUNDS} interleaved rounds; "
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {os.cpu_count()} cores)\n",
        table(
            ["SDK transport", "lines a call, libraries' levels", "lines a call, `careerwise serve`'s"],
            [[client, f"{loud[client]:.1f}", f"{quiet[client]:.1f}"] for client in loud],
        ),
        "",
        table(
            [
                "record",
                "µs CPU each",
                "ratio to dropped",
                "written − dropped, µs (min / median / max of rounds)",
            ],
            [
                [
                    "written (INFO, masking filter, formatted, to a file)",
                    f"{written:.1f}",
                    f"{written / dropped:.0f}x",
                    "",
                ],
                ["dropped (logger at WARNING)", f"{dropped:.2f}", "1.00", ""],
                [
                    "difference, per LLM call",
                    f"{written - dropped:.1f}",
                    "",
                    f"{diffs[0]:.1f} / {diffs[len(diffs) // 2]:.1f} / {diffs[-1]:.1f}",
                ],
            ],
        ),
    ]


if __name__ == "__main__":
    print("\n".join(run()))
