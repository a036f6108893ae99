"""The routing evaluation: labelled messages in ``eval/routing/*.jsonl`` (``{"message", "intent",
"tier"}``, tier null for non-career), split deterministically into ``train`` (calibration) and ``test``
(reporting) by a hash of the message; intent accuracy, tier accuracy, the share each layer decided and a
confusion matrix; and the calibration that writes ``thresholds.json``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from careerwise.knowledge.embeddings import Embedder, Matrix
from careerwise.llm.types import LLMProvider
from careerwise.routing._vectors import PersistentQueryCache
from careerwise.routing.cascade import CascadeRouter
from careerwise.routing.lexical import NAME as LEXICAL
from careerwise.routing.lexical import lexical_classifier
from careerwise.routing.router import LAYERS, RouteDecision
from careerwise.routing.rules import match_rules
from careerwise.routing.semantic import INTENTS, SemanticClassifier, clip
from careerwise.routing.thresholds import Thresholds, fit_guess, fit_thresholds
from careerwise.routing.tier import classify_tier

SPLITS = ("train", "test", "all")
TEST_SHARE = 4  # of 10: 60 % train, 40 % test


def default_eval_dir() -> Path:
    """``eval/routing`` of the source tree (the labelled messages are not packaged)."""
    return Path(__file__).resolve().parents[3] / "eval" / "routing"


def split_of(message: str) -> str:
    """``train`` or ``test``, from the SHA-256 of the message (stable across machines and runs)."""
    bucket = int(hashlib.sha256(message.encode("utf-8")).hexdigest()[:8], 16) % 10
    return "test" if bucket < TEST_SHARE else "train"


@dataclass(frozen=True)
class LabelledMessage:
    message: str
    intent: str
    tier: str | None

    @property
    def split(self) -> str:
        return split_of(self.message)


def load_messages(paths: Iterable[Path] | None = None) -> list[LabelledMessage]:
    """Every line of every file (a folder means its ``*.jsonl``), validated. Lines starting with ``#`` are
    comments (a set's header: when and how it was written)."""
    files: list[Path] = []
    for p in paths or [default_eval_dir()]:
        files.extend(sorted(p.glob("*.jsonl")) if p.is_dir() else [p])
    out: list[LabelledMessage] = []
    for path in files:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            row = json.loads(line)
            intent, tier = row["intent"], row.get("tier")
            if intent not in INTENTS:
                raise ValueError(f"{path}:{n}: unknown intent {intent!r}")
            if (intent == "career") != (tier in ("simple", "medium", "complex")) or (
                intent != "career" and tier is not None
            ):
                raise ValueError(f"{path}:{n}: career needs a tier, other intents null")
            out.append(LabelledMessage(str(row["message"]), intent, tier))
    return out


def select(messages: Sequence[LabelledMessage], split: str) -> list[LabelledMessage]:
    return list(messages) if split == "all" else [m for m in messages if m.split == split]


@dataclass
class RoutingReport:
    split: str
    n: int = 0
    intent_correct: int = 0
    tier_n: int = 0
    tier_correct: int = 0
    layers: Counter[str] = field(default_factory=Counter)
    layer_correct: Counter[str] = field(default_factory=Counter)
    confusion: Counter[tuple[str, str]] = field(default_factory=Counter)
    errors: list[dict[str, Any]] = field(default_factory=list)
    llm_ms: list[float] = field(default_factory=list)  # each layer-3 call's time, in routing order

    @property
    def intent_accuracy(self) -> float:
        return self.intent_correct / self.n if self.n else 0.0

    @property
    def tier_accuracy(self) -> float:
        return self.tier_correct / self.tier_n if self.tier_n else 0.0

    @property
    def without_llm(self) -> float:
        """Share decided by rules or a confident layer 2 (guesses would have needed the LLM)."""
        sure = self.layers["rules"] + self.layers["lexical"] + self.layers["embedding"]
        return sure / self.n if self.n else 0.0

    def share(self, layer: str) -> float:
        return self.layers[layer] / self.n if self.n else 0.0

    def layer_accuracy(self, layer: str) -> float | None:
        return self.layer_correct[layer] / self.layers[layer] if self.layers[layer] else None

    def add(self, item: LabelledMessage, decision: RouteDecision) -> None:
        self.n += 1
        self.layers[decision.layer] += 1
        self.confusion[(item.intent, decision.intent)] += 1
        ok = decision.intent == item.intent
        self.intent_correct += ok
        self.layer_correct[decision.layer] += ok
        tier_ok = True
        if item.intent == "career":
            # the tier function on its own (a wrong intent is already counted above)
            self.tier_n += 1
            tier = classify_tier(item.message).tier
            tier_ok = tier == item.tier
            self.tier_correct += tier_ok
        if not ok or not tier_ok:
            self.errors.append(
                {
                    "message": item.message[:120],
                    "gold": [item.intent, item.tier],
                    "got": [decision.intent, decision.tier if item.intent == "career" else None],
                    "layer": decision.layer,
                    "top": decision.top,
                }
            )

    def to_json(self) -> dict[str, Any]:
        return {
            "split": self.split,
            "messages": self.n,
            "intent_accuracy": round(self.intent_accuracy, 4),
            "tier_accuracy": round(self.tier_accuracy, 4),
            "career_messages": self.tier_n,
            "decided_without_llm": round(self.without_llm, 4),
            "layers": {
                layer: {"share": round(self.share(layer), 4), "accuracy": _round(self.layer_accuracy(layer))}
                for layer in LAYERS
                if self.layers[layer]
            },
            "confusion": {g: {p: self.confusion[(g, p)] for p in INTENTS} for g in INTENTS},
            "llm_calls": len(self.llm_ms),
            "llm_p50_ms": _percentile(self.llm_ms, 50),
            "llm_p90_ms": _percentile(self.llm_ms, 90),
            "errors": self.errors,
        }

    def format(self) -> str:
        lines = [
            f"split {self.split}: {self.n} messages ({self.tier_n} career)",
            f"  intent accuracy   {self.intent_accuracy:7.1%}",
            f"  tier accuracy     {self.tier_accuracy:7.1%}   (career messages, the tier function)",
            f"  without the LLM   {self.without_llm:7.1%}   (rules + a confident layer 2)",
            "  layer             share   accuracy",
        ]
        for layer in LAYERS:
            if self.layers[layer]:
                acc = self.layer_accuracy(layer)
                lines.append(
                    f"  {layer:<16} {self.share(layer):6.1%}   {acc:7.1%}"
                    if acc is not None
                    else f"  {layer}"
                )
        if self.llm_ms:
            lines.append(
                f"  LLM layer        {len(self.llm_ms)} calls, p50 {_percentile(self.llm_ms, 50):.0f} ms, "
                f"p90 {_percentile(self.llm_ms, 90):.0f} ms"
            )
        lines.append("  confusion (rows gold, columns routed)")
        lines.append("  " + " " * 10 + "".join(f"{p:>10}" for p in INTENTS))
        for g in INTENTS:
            lines.append(f"  {g:<10}" + "".join(f"{self.confusion[(g, p)]:>10}" for p in INTENTS))
        return "\n".join(lines)


def _round(x: float | None) -> float | None:
    return round(x, 4) if x is not None else None


def _percentile(values: Sequence[float], q: int) -> float | None:
    """The ``q``-th percentile (nearest rank), None without values."""
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)], 1)


def embed_messages(
    embedder: Embedder, messages: Sequence[LabelledMessage], cache_dir: Path | None = None
) -> Matrix:
    """Raw vectors of the (clipped) messages, through an on-disk cache when ``cache_dir`` is given:
    the labelled messages are embedded once per model, not on every evaluation."""
    if cache_dir is None:
        return np.asarray(embedder.embed_queries([clip(m.message) for m in messages]), dtype=np.float32)
    cached = PersistentQueryCache(embedder, cache_dir)
    vectors = cached.embed_queries([clip(m.message) for m in messages])
    cached.save()
    return vectors


async def evaluate(
    router: CascadeRouter,
    messages: Sequence[LabelledMessage],
    *,
    split: str = "test",
    vectors: Matrix | None = None,
) -> RoutingReport:
    """Route every message of ``split`` (one batch; ``vectors`` as from ``embed_messages`` for the
    same messages skip the embedding) and score the decisions."""
    chosen = [i for i, m in enumerate(messages) if split == "all" or m.split == split]
    items = [messages[i] for i in chosen]
    calls_before = router.llm.calls if router.llm is not None else 0
    decisions = await router.route_many(
        [m.message for m in items], vectors=vectors[chosen] if vectors is not None else None
    )
    report = RoutingReport(split=split)
    for item, decision in zip(items, decisions, strict=True):
        report.add(item, decision)
    if router.llm is not None and router.llm.calls > calls_before:
        report.llm_ms = list(router.llm.durations_ms)[-(router.llm.calls - calls_before) :]
    return report


@dataclass(frozen=True)
class FitResult:
    thresholds: Thresholds
    train: RoutingReport
    test: RoutingReport
    lexical: Thresholds | None = None


def fit_lexical(
    messages: Sequence[LabelledMessage], *, target_precision: float = 0.98, k: int = 3
) -> Thresholds:
    """Calibrate layer 2's lexical stage (``thresholds-lexical.json``) on the training split's messages
    that no rule decides *plus* every example scored against the other examples: the training messages
    alone are too easy for an n-gram scorer (every bar keeps 100 % precision, so the fit would accept
    nearly everything), while the examples left out one at a time include the hard, short, ambiguous
    phrasings (docs/routing.md, "Layer 2, stage 1")."""
    classifier = lexical_classifier(k=k)
    train = [m for m in messages if m.split == "train" and match_rules(m.message) is None]
    samples = list(zip(classifier.score([m.message for m in train]), [m.intent for m in train], strict=True))
    samples += classifier.held_out_examples()
    bars = fit_thresholds(
        samples, model=LEXICAL, examples_digest=classifier.digest, k=k, target_precision=target_precision
    )
    return replace(
        bars,
        k=k,
        target_precision=target_precision,
        report={
            "fitted_at": datetime.now(UTC).strftime("%Y-%m-%d"),
            "calibration_messages": len(train),
            "calibration_examples": len(samples) - len(train),
        },
    )


async def fit(
    embedder: Embedder,
    messages: Sequence[LabelledMessage],
    *,
    provider: LLMProvider | None = None,
    cache_dir: Path | None = None,
    target_precision: float = 0.98,
    k: int = 3,
    lexical: bool = True,
) -> FitResult:
    """Calibrate the thresholds on the training split's messages that the rules do not decide and on
    the examples left out one at a time (``SemanticClassifier.held_out_examples``), then report both
    splits with layer 3 off (``provider=None``: the LLM's share shows as
    ``embedding-guess``) or on. ``lexical``: also calibrate layer 2's first stage (``fit_lexical``),
    and report with it in front; the embedding stage's bars are fitted on the same messages either way
    (it must stand alone when the first stage is off)."""
    lexical_bars = fit_lexical(messages, target_precision=target_precision, k=k) if lexical else None
    vectors = embed_messages(embedder, messages, cache_dir)
    semantic = SemanticClassifier(embedder, k=k)
    cached = PersistentQueryCache(embedder, cache_dir) if cache_dir else None
    semantic.prepare(cached)
    if cached is not None:
        cached.save()
    train = [i for i, m in enumerate(messages) if m.split == "train" and match_rules(m.message) is None]
    scores = semantic.score_vectors([messages[i].message for i in train], vectors[train])
    samples = [(s, messages[i].intent) for s, i in zip(scores, train, strict=True)]
    # and every example that no rule decides, scored against the other examples: with the finished blind
    # sets among the examples (decision 0028) these are the hard, short and misleading phrasings that the
    # training split has too few of, so the bars and the guess are fitted on what layer 2 really meets
    left_out = [(s, intent) for text, s, intent in semantic.held_out_examples() if match_rules(text) is None]
    samples += left_out
    thresholds = fit_thresholds(
        samples, model=embedder.name, examples_digest=semantic.digest, k=k, target_precision=target_precision
    )
    # the no-LLM guess's bars, on the same points that the bars did not accept (docs/routing.md,
    # "No-LLM mode")
    thresholds = replace(thresholds, guess=fit_guess(samples, thresholds))
    router = CascadeRouter(
        embedder,
        provider,
        thresholds,
        cache_dir=cache_dir,
        lexical=lexical_bars if lexical_bars is not None else False,
    )
    train_report = await evaluate(router, messages, split="train", vectors=vectors)
    test_report = await evaluate(router, messages, split="test", vectors=vectors)
    summary = {
        "fitted_at": datetime.now(UTC).strftime("%Y-%m-%d"),
        "calibration_messages": len(train),
        "calibration_examples": len(left_out),
        "train": _summary(train_report),
        "test": _summary(test_report),
    }
    return FitResult(
        replace(thresholds, k=k, target_precision=target_precision, report=summary),
        train_report,
        test_report,
        lexical_bars,
    )


def _summary(r: RoutingReport) -> dict[str, Any]:
    full = r.to_json()
    return {
        key: full[key]
        for key in ("messages", "intent_accuracy", "tier_accuracy", "decided_without_llm", "layers")
    }
