"""Retrieval evaluation: recall@1, recall@5 and MRR over the questions in ``eval/retrieval``.

Question files are JSON lines ``{"question", "lang", "relevant": [document ids]}``. A question with an
empty ``relevant`` list is a *negative*: nothing in the knowledge base should match it. Questions are
split deterministically into ``dev`` (for tuning) and ``test`` (for reporting) by a hash of their text;
a recorded model query (``recorded/queries_model.jsonl``) names its user question in ``asked`` and is
split by that question's text.

A question is a hit at k when any of its relevant documents is among the first k *distinct* documents
of the ranking; its reciprocal rank is 1 / (position of the first relevant document), 0 if none.

Methods compared (all over the same index):
* ``dense``   chunks by dense score alone (language-centred cosine);
* ``lexical`` chunks by BM25 alone;
* ``hybrid``  the shipped fusion and relevance gate (``KnowledgeIndex.search``);
* ``hybrid+rerank`` hybrid's candidates reranked by a ``Reranker`` (best-matching sentence by default).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from careerwise.knowledge.embeddings import Embedder
from careerwise.knowledge.index import FusionConfig, Hit, KnowledgeIndex
from careerwise.knowledge.rerank import Reranker

SPLITS = ("dev", "test", "all")
METHODS = ("dense", "lexical", "hybrid", "hybrid+rerank")
EVAL_CANDIDATES = 30  # chunks per query handed to the reranker and used for the document ranking
TOOL_TOP_K = 3  # the passages searchKnowledge returns when the model names no top_k (search_default_top_k)


@dataclass(frozen=True)
class EvalQuestion:
    question: str
    lang: str
    relevant: tuple[str, ...]
    source: str = ""
    asked: str = ""  # a recorded tool query: the user question the model wrote it for
    kind: str = ""  # a blind set's make-up: "direct", "cross" (other language), "situation", "offtopic"

    @property
    def negative(self) -> bool:
        return not self.relevant

    @property
    def split(self) -> str:
        # a recorded query follows its user question, so dev and test hold the same questions in both forms
        return split_of(self.asked or self.question)


def split_of(question: str) -> str:
    """``dev`` or ``test``, from the SHA-256 of the question text (stable across machines and runs)."""
    return "dev" if int(hashlib.sha256(question.encode("utf-8")).hexdigest()[:8], 16) % 2 == 0 else "test"


def default_eval_dir() -> Path:
    """``eval/retrieval`` of the source tree (the questions are not packaged)."""
    return Path(__file__).resolve().parents[3] / "eval" / "retrieval"


def load_questions(paths: Iterable[Path]) -> list[EvalQuestion]:
    """Every line of every file (a folder means its ``*.jsonl``), in path order."""
    files: list[Path] = []
    for p in paths:
        files.extend(sorted(p.glob("*.jsonl")) if p.is_dir() else [p])
    out: list[EvalQuestion] = []
    for f in files:
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                out.append(
                    EvalQuestion(
                        str(row["question"]),
                        str(row["lang"]),
                        tuple(row["relevant"]),
                        f.name,
                        str(row.get("asked", "")),
                        str(row.get("kind", "")),
                    )
                )
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{f}:{n}: not a question line ({exc})") from exc
    return out


def select(questions: Sequence[EvalQuestion], split: str) -> list[EvalQuestion]:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, not {split!r}")
    return [q for q in questions if split == "all" or q.split == split]


# --- metrics -------------------------------------------------------------------------------------


def distinct_documents(document_ids: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for d in document_ids:
        seen.setdefault(d, None)
    return list(seen)


def first_relevant(ranking: Sequence[str], relevant: Iterable[str]) -> int | None:
    """0-based position of the first relevant document in a ranking of distinct documents."""
    wanted = set(relevant)
    return next((i for i, d in enumerate(ranking) if d in wanted), None)


@dataclass(frozen=True)
class Metrics:
    n: int
    recall_at_1: float
    recall_at_5: float
    mrr: float

    @classmethod
    def of(cls, rankings: Sequence[Sequence[str]], relevant: Sequence[Iterable[str]]) -> Metrics:
        if len(rankings) != len(relevant):
            raise ValueError("one ranking per question")
        n = len(rankings)
        if n == 0:
            return cls(0, 0.0, 0.0, 0.0)
        positions = [
            first_relevant(distinct_documents(r), rel) for r, rel in zip(rankings, relevant, strict=True)
        ]
        return cls(
            n=n,
            recall_at_1=sum(p is not None and p < 1 for p in positions) / n,
            recall_at_5=sum(p is not None and p < 5 for p in positions) / n,
            mrr=sum(1.0 / (p + 1) for p in positions if p is not None) / n,
        )


# --- running the methods -------------------------------------------------------------------------


def _docs_by_score(index: KnowledgeIndex, scores: npt.NDArray[np.floating]) -> list[str]:
    order = np.argsort(-scores, kind="stable")
    return distinct_documents(index.chunks[int(i)].document_id for i in order)


def _docs(hits: Sequence[Hit]) -> list[str]:
    return distinct_documents(h.chunk.document_id for h in hits)


@dataclass
class MethodRankings:
    """Document rankings per method for a list of questions (same order), plus the gate's verdicts."""

    questions: list[EvalQuestion]
    rankings: dict[str, list[list[str]]] = field(default_factory=dict)
    matched: list[bool] = field(default_factory=list)  # the shipped search returned anything
    # the tool's default passages (the shipped search's first TOOL_TOP_K chunks) hold a relevant article
    delivered: list[bool] = field(default_factory=list)

    def by_kind(self) -> dict[str, dict[str, Any]]:
        """Per kind of question (``EvalQuestion.kind``; questions without one are left out): R@1 of the
        shipped search, how often the tool's default passages hold a relevant article, and for
        negatives how often anything matched."""
        out: dict[str, dict[str, Any]] = {}
        if not any(q.kind for q in self.questions):
            return out
        rows = zip(self.questions, self.rankings["hybrid"], self.matched, self.delivered, strict=True)
        groups: dict[str, list[tuple[EvalQuestion, list[str], bool, bool]]] = {}
        for row in rows:
            if row[0].kind:
                groups.setdefault(row[0].kind, []).append(row)
        for kind, members in sorted(groups.items()):
            n = len(members)
            if all(q.negative for q, *_ in members):
                out[kind] = {"n": n, "matched": sum(m for _, _, m, _ in members) / n}
                continue
            positives = [(q, r, d) for q, r, _, d in members if not q.negative]
            out[kind] = {
                "n": len(positives),
                "recall_at_1": Metrics.of(
                    [r for _, r, _ in positives], [q.relevant for q, _, _ in positives]
                ).recall_at_1,
                "tool_passages": sum(d for *_, d in positives) / len(positives),
            }
        return out

    def metrics(
        self, method: str, split: str = "all", *, source: Callable[[str], bool] | None = None
    ) -> Metrics:
        rows = [
            (r, q.relevant)
            for q, r in zip(self.questions, self.rankings[method], strict=True)
            if not q.negative
            and (split == "all" or q.split == split)
            and (source is None or source(q.source))
        ]
        return Metrics.of([r for r, _ in rows], [rel for _, rel in rows])

    def gate(self, split: str = "all") -> dict[str, Any]:
        """How the relevance gate did: positives that matched nothing, negatives that matched something."""
        pos = [(q, m) for q, m in zip(self.questions, self.matched, strict=True) if not q.negative]
        neg = [(q, m) for q, m in zip(self.questions, self.matched, strict=True) if q.negative]
        pos = [(q, m) for q, m in pos if split == "all" or q.split == split]
        neg = [(q, m) for q, m in neg if split == "all" or q.split == split]
        return {
            "positives": len(pos),
            "positives_unmatched": [q.question for q, m in pos if not m],
            "negatives": len(neg),
            "negatives_matched": [q.question for q, m in neg if m],
            "false_match_rate": (sum(m for _, m in neg) / len(neg)) if neg else 0.0,
            "miss_rate": (sum(not m for _, m in pos) / len(pos)) if pos else 0.0,
        }


def rank_all(
    index: KnowledgeIndex,
    questions: Sequence[EvalQuestion],
    qvecs: npt.NDArray[np.float32],
    *,
    fusion: FusionConfig,
    reranker: Reranker | None,
    candidates: int = EVAL_CANDIDATES,
) -> MethodRankings:
    """Rank every question with every method over one index (``qvecs`` are the raw query vectors)."""
    out = MethodRankings(list(questions), {m: [] for m in METHODS})
    ungated = replace(fusion, gate=False)
    for q, qvec in zip(questions, qvecs, strict=True):
        out.rankings["dense"].append(_docs_by_score(index, index.dense_scores(q.question, qvec)))
        out.rankings["lexical"].append(_docs_by_score(index, index.bm25.scores(q.question)))
        shipped = index.search(q.question, qvec, top_k=candidates, candidates=candidates, fusion=fusion)
        out.matched.append(bool(shipped.hits))
        out.delivered.append(any(h.chunk.document_id in q.relevant for h in shipped.hits[:TOOL_TOP_K]))
        out.rankings["hybrid"].append(_docs(shipped.hits))
        if reranker is None:
            out.rankings["hybrid+rerank"].append(_docs(shipped.hits))
            continue
        pool = index.search(q.question, qvec, top_k=candidates, candidates=candidates, fusion=ungated).hits
        reranked = reranker.rerank(q.question, qvec, pool) if shipped.hits else []
        out.rankings["hybrid+rerank"].append(_docs(reranked))
    return out


@dataclass(frozen=True)
class Delivered:
    """How often the passages the tool hands the model (its first ``top_k`` hits) hold a relevant
    article, and how many articles that was on average."""

    n: int
    hit_rate: float
    mean_top_k: float


def delivered(
    index: KnowledgeIndex,
    questions: Sequence[EvalQuestion],
    qvecs: npt.NDArray[np.float32],
    top_ks: Sequence[int],
    *,
    fusion: FusionConfig,
    candidates: int = 12,
) -> Delivered:
    """Recall as the searchKnowledge tool delivers it: the shipped search (gate on, no reranker, the
    tool's pool of ``max(candidates, top_k)``) cut to each question's ``top_k`` chunks, as the tool cuts
    it. Unlike recall@5 over distinct documents this counts what the model really reads, so a model
    that asks for one passage is held to one."""
    hits = 0
    rows = [(q, v, k) for q, v, k in zip(questions, qvecs, top_ks, strict=True) if not q.negative]
    for q, qvec, k in rows:
        found = index.search(q.question, qvec, top_k=k, candidates=max(candidates, k), fusion=fusion)
        hits += any(h.chunk.document_id in q.relevant for h in found.hits[:k])
    n = len(rows)
    return Delivered(n, hits / n if n else 0.0, sum(k for *_, k in rows) / n if n else 0.0)


# --- the whole run: a temporary database with the bundled corpus --------------------------------


@dataclass
class ModelReport:
    model: str
    chunks: int
    rankings: MethodRankings
    fusion: FusionConfig
    reranker: str

    def table(self, split: str) -> dict[str, Metrics]:
        return {m: self.rankings.metrics(m, split, source=_user_questions) for m in METHODS}

    def to_json(self, splits: Sequence[str]) -> dict[str, Any]:
        return {
            "model": self.model,
            "chunks": self.chunks,
            "fusion": asdict(self.fusion),
            "reranker": self.reranker,
            "splits": {
                s: {
                    "methods": {m: asdict(v) for m, v in self.table(s).items()},
                    "tool_queries": {
                        m: asdict(self.rankings.metrics(m, s, source=_tool_queries))
                        for m in ("hybrid", "hybrid+rerank")
                    },
                    "model_queries": {
                        m: asdict(self.rankings.metrics(m, s, source=_model_queries))
                        for m in ("hybrid", "hybrid+rerank")
                    },
                    "gate": self.rankings.gate(s),
                }
                for s in splits
            },
            "by_kind": self.rankings.by_kind(),
        }


TOOL_QUERY_FILE = "queries_tool.jsonl"
# The embedded model's own searchKnowledge queries for the user questions, recorded from the model
# (docs/retrieval.md, "The evaluation set").
# In a subfolder on purpose: a folder load (the default) does not pick them up, since they repeat one
# another and are not user questions; pass the file with --questions to evaluate them.
MODEL_QUERY_FILE = "queries_model.jsonl"


def model_query_path() -> Path:
    return default_eval_dir() / "recorded" / MODEL_QUERY_FILE


def _user_questions(source: str) -> bool:
    return source not in (TOOL_QUERY_FILE, MODEL_QUERY_FILE)


def _tool_queries(source: str) -> bool:
    return source == TOOL_QUERY_FILE


def _model_queries(source: str) -> bool:
    return source == MODEL_QUERY_FILE


async def build_corpus_index(
    embedder: Embedder, corpus: Path, *, database_dir: Path | None = None
) -> tuple[KnowledgeIndex, Any]:
    """Ingest ``corpus`` into a fresh SQLite file and load it; returns the index and the KnowledgeBase.

    The caller closes the KnowledgeBase (``kb.close()``) when done: a search through it starts its BM25
    threads."""
    from careerwise.knowledge.ingest import ingest_paths
    from careerwise.knowledge.service import KnowledgeBase
    from careerwise.store import Database

    with tempfile.TemporaryDirectory(prefix="careerwise-eval-", dir=database_dir) as tmp:
        db = Database(f"sqlite+aiosqlite:///{Path(tmp) / 'eval.db'}")
        try:
            await asyncio.to_thread(db.migrate)
            report = await ingest_paths(db, embedder, [corpus])
            if report.failed:
                raise RuntimeError(f"ingest failed: {report.failed}")
            kb = KnowledgeBase(db, embedder=embedder, embedding_model=embedder.name)
            await kb.load()
            index = kb.index
            if not isinstance(index, KnowledgeIndex):
                raise RuntimeError(f"the knowledge base did not load: {kb.status()}")
            return index, kb
        finally:
            await db.dispose()


async def evaluate_model(
    embedder: Embedder,
    questions: Sequence[EvalQuestion],
    *,
    corpus: Path,
    fusion: FusionConfig | None = None,
    reranker: Reranker | None = None,
    candidates: int = EVAL_CANDIDATES,
) -> ModelReport:
    from careerwise.knowledge.index import default_fusion
    from careerwise.knowledge.rerank import SentenceReranker

    index, kb = await build_corpus_index(embedder, corpus)
    try:
        fusion = fusion or default_fusion(embedder.name)
        if reranker is None:
            sentence = SentenceReranker(kb.embedder)
            await asyncio.to_thread(sentence.prepare, index.chunks)
            reranker = sentence
        qvecs = await asyncio.to_thread(kb.embedder.embed_queries, [q.question for q in questions])
        rankings = await asyncio.to_thread(
            rank_all, index, questions, qvecs, fusion=fusion, reranker=reranker, candidates=candidates
        )
    finally:
        kb.close()
    return ModelReport(embedder.name, len(index), rankings, fusion, reranker.name)


def format_table(reports: Sequence[ModelReport], splits: Sequence[str]) -> str:
    lines: list[str] = []
    for split in splits:
        lines.append(f"split: {split}")
        lines.append(f"  {'model':<8} {'method':<14} {'n':>4} {'R@1':>6} {'R@5':>6} {'MRR':>6}")
        for rep in reports:
            for method, m in rep.table(split).items():
                lines.append(
                    f"  {rep.model:<8} {method:<14} {m.n:>4} {m.recall_at_1:>6.3f} {m.recall_at_5:>6.3f} {m.mrr:>6.3f}"
                )
            tool = rep.rankings.metrics("hybrid", split, source=_tool_queries)
            gate = rep.rankings.gate(split)
            lines.append(
                f"  {rep.model:<8} tool-style queries (hybrid): n={tool.n} R@1={tool.recall_at_1:.3f} "
                f"R@5={tool.recall_at_5:.3f} MRR={tool.mrr:.3f}"
            )
            model = rep.rankings.metrics("hybrid", split, source=_model_queries)
            if model.n:
                lines.append(
                    f"  {rep.model:<8} model-written queries (hybrid): n={model.n} R@1={model.recall_at_1:.3f} "
                    f"R@5={model.recall_at_5:.3f} MRR={model.mrr:.3f}"
                )
            lines.append(
                f"  {rep.model:<8} gate: false matches {len(gate['negatives_matched'])}/{gate['negatives']} "
                f"(rate {gate['false_match_rate']:.3f}), unmatched positives "
                f"{len(gate['positives_unmatched'])}/{gate['positives']}"
            )
            for q in gate["negatives_matched"]:
                lines.append(f"    matched a negative: {q}")
            for q in gate["positives_unmatched"]:
                lines.append(f"    matched nothing: {q}")
        lines.append("")
    for rep in reports:
        kinds = rep.rankings.by_kind()
        if not kinds:
            continue
        lines.append(f"by kind (every split; {rep.model}, the shipped search as the tool runs it):")
        for kind, row in kinds.items():
            if "matched" in row:
                lines.append(f"  {kind:<10} n={row['n']:<4} matched anything: {row['matched']:.3f}")
            else:
                lines.append(
                    f"  {kind:<10} n={row['n']:<4} R@1 {row['recall_at_1']:.3f}   "
                    f"default {TOOL_TOP_K} passages hold a relevant article: {row['tool_passages']:.3f}"
                )
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
