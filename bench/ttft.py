"""Time to first visible text: our added time over the provider's own, on path B and path A.

The provider is the fake OpenAI-compatible server in its own process with fixed latencies. The
baseline is measured in the same run by reading the fake directly with the same HTTP client:
- path B: the moment the provider's stream allows text to be shown, i.e. when its first N non-blank
  chunks have arrived (N = the buffer guard; the guard's window counts as the provider's share);
- path A: phase 1 read to its end, plus phase 3 up to its first chunk (the knowledge search is ours).
The streams are read by bench/_burstclient.py's parsers, as the concurrency benchmark reads them.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import httpx

from bench._burstclient import GUARD, Sample, lines_for
from bench._serve import data_dir_with_corpus, serve
from bench.common import fake_llm, pct, process, table
from tests.conftest import free_port

FIRST_TOKEN = 0.30
INTER_CHUNK = 0.02
RUNS = 20
QUESTION = "怎麼談薪水？"
# phase 3 of path A: the fake in tool mode answers a conversation that already has a tool result in text
TOOL_REPLY = [
    {"role": "user", "content": QUESTION},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "searchKnowledge", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c", "content": "x"},
]

_CLIENT = httpx.Client(timeout=60)  # one keep-alive client for the baseline and for ours alike


def _read(url: str, body: dict[str, object], *, ours: bool) -> Sample:
    """One stream read to its end: ``first_ms`` its first text (the provider's: first non-blank chunk),
    ``shown_ms`` when it may be shown (the provider's: the GUARD-th), ``end_ms`` its end."""
    sample = Sample(0.0)
    t0 = time.perf_counter()
    lines = lines_for(ours=ours, sample=sample, t0=t0)
    with _CLIENT.stream("POST", url, json=body) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            lines.feed(line)
    lines.close()
    sample.end_ms = 1000 * (time.perf_counter() - t0)
    if sample.error is not None:
        raise RuntimeError(f"{url}: {sample.error}")
    return sample


def _provider(base: str, messages: list[dict[str, object]]) -> Sample:
    body = {"model": "fake", "stream": True, "stream_options": {"include_usage": True}, "messages": messages}
    return _read(f"{base}/chat/completions", body, ours=False)


def _provider_ms(base: str, mode: str) -> float:
    """The provider's share of the first visible text."""
    if mode == "text":
        sample = _provider(base, [{"role": "user", "content": QUESTION}])
        return sample.shown_ms or sample.end_ms or 0.0
    phase1 = _provider(base, [{"role": "user", "content": QUESTION}])
    phase3 = _provider(base, TOOL_REPLY)
    return (phase1.end_ms or 0.0) + (phase3.first_ms or phase3.end_ms or 0.0)


def _ours_ms(url: str, message: str) -> float:
    sample = _read(f"{url}/api/chat", {"message": message}, ours=True)
    return sample.first_ms or sample.end_ms or 0.0


def run() -> list[str]:
    data_dir = data_dir_with_corpus()
    logs = Path(tempfile.mkdtemp(prefix="cw-bench-ttft-"))
    rows = []
    for mode, message in (("text", "面試要怎麼準備"), ("tool", QUESTION)):
        llm_port = free_port()
        base = f"http://127.0.0.1:{llm_port}/v1"
        with (
            process(fake_llm(llm_port, mode=mode, first_token_delay=FIRST_TOKEN, delay=INTER_CHUNK),
                    ready_url=f"{base}/models"),
            serve(data_dir=data_dir, llm_port=llm_port, port=free_port(), workers=1, log=logs / f"{mode}.log",
                  env={"CAREERWISE_BUFFER_GUARD_CHUNKS": str(GUARD)}) as server,
        ):  # fmt: skip
            _ours_ms(server.url, message)  # warm-up: caches, connections
            direct: list[float] = []
            ours: list[float] = []
            for _ in range(RUNS):
                direct.append(_provider_ms(base, mode))
                ours.append(_ours_ms(server.url, message))
        added = [o - d for o, d in zip(ours, direct, strict=True)]
        label = "B (no tool)" if mode == "text" else "A (tool)"
        rows.append([label, pct(direct, 50), pct(ours, 50), pct(added, 50), pct(added, 95)])
    return [
        f"## Time to first visible text (fake provider: {FIRST_TOKEN * 1000:.0f} ms first token, "
        f"{INTER_CHUNK * 1000:.0f} ms between chunks, guard N={GUARD}, {RUNS} runs)\n",
        table(["path", "provider p50 ms", "ours p50 ms", "added p50 ms", "added p95 ms"], rows),
        "\nGoal: added p50 on path B <= 10 ms. Server logs: " + str(logs),
    ]
