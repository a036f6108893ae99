"""The three-layer cascade: rules (free) → embedding similarity (cheap) → LLM classifier (rare).

Each message stops at the first layer that is sure; a career message then gets its tier. The decision
records which layer decided and why (rule id; or scores, margin and threshold; or the LLM's answer or
its failure), so every turn's trace can explain its route.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from careerwise.knowledge.embeddings import Embedder, Matrix
from careerwise.llm.types import LLMProvider
from careerwise.routing._vectors import PersistentQueryCache
from careerwise.routing.llm_classifier import Failure, LLMIntentClassifier
from careerwise.routing.router import RouteDecision
from careerwise.routing.rules import Rule, match_rules
from careerwise.routing.semantic import IntentScores, SemanticClassifier
from careerwise.routing.thresholds import NEVER, Thresholds, load_thresholds
from careerwise.routing.tier import classify_tier

log = logging.getLogger(__name__)

# Example vectors per (model, examples) for the life of the process: routers are cheap to build.
_PREPARED: dict[tuple[str, str], SemanticClassifier] = {}


def _r(x: float) -> float:
    return round(float(x), 4)


class CascadeRouter:
    """``await route(message)`` → ``RouteDecision``.

    ``provider=None`` or ``no_llm=True``: messages that would reach the LLM get the best embedding
    intent instead, with layer ``"embedding-guess"``. ``thresholds=None`` loads the packaged
    ``thresholds.json``; thresholds fitted for another model or other examples are not trusted (the
    embedding layer then never decides alone, it only guesses). ``cache_dir`` keeps the example vectors
    on disk between runs (user messages are never written there).
    """

    def __init__(
        self,
        embedder: Embedder,
        provider: LLMProvider | None,
        thresholds: Thresholds | None = None,
        *,
        examples: Mapping[str, Sequence[str]] | None = None,
        no_llm: bool = False,
        llm_timeout: float = 20.0,
        cache_dir: Path | None = None,
    ) -> None:
        self.thresholds = thresholds or load_thresholds()
        self.semantic = SemanticClassifier(embedder, examples, k=self.thresholds.k)
        prepared = _PREPARED.get((embedder.name, self.semantic.digest))
        if prepared is not None:
            # reuse the example vectors already computed in this process, but keep OUR embedder for
            # messages: a router must never embed with another router's model instance
            self.semantic.adopt(prepared)
        self.cache_dir = cache_dir
        self.llm = LLMIntentClassifier(provider, timeout=llm_timeout) if provider is not None else None
        self.no_llm = no_llm or provider is None
        self.trusted = (
            self.thresholds.model == embedder.name and self.thresholds.examples_digest == self.semantic.digest
        )
        if not self.trusted:
            log.warning(
                "routing: thresholds.json was fitted for %s/%s, not %s/%s; the embedding layer will not "
                "decide alone until `careerwise route --fit` is run",
                self.thresholds.model,
                self.thresholds.examples_digest,
                embedder.name,
                self.semantic.digest,
            )
        self.counts: Counter[str] = Counter()  # decisions per layer, and fallbacks per code

    # -- preparation ---------------------------------------------------------------------------

    def _prepare_blocking(self) -> None:
        if self.semantic.ready:
            return
        if self.cache_dir is not None:
            cached = PersistentQueryCache(self.semantic.embedder, self.cache_dir)
            self.semantic.prepare(cached)
            cached.save()
        else:
            self.semantic.prepare()
        _PREPARED.setdefault((self.semantic.embedder.name, self.semantic.digest), self.semantic)

    async def prepare(self) -> None:
        """Embed the example utterances now (off the event loop) instead of on the first message."""
        await asyncio.to_thread(self._prepare_blocking)

    # -- routing -------------------------------------------------------------------------------

    async def route(self, message: str) -> RouteDecision:
        return (await self.route_many([message]))[0]

    async def route_many(
        self, messages: Sequence[str], *, vectors: Matrix | None = None
    ) -> list[RouteDecision]:
        """Route a batch: the rules per message, one batched embedding call for the rest, then the LLM
        (one message at a time) for what is still undecided. ``vectors`` (raw message vectors, one per
        message) skip the embedding call, for evaluations that embed once."""
        started = time.perf_counter()
        out: list[RouteDecision | None] = [None] * len(messages)
        pending: list[int] = []
        for i, message in enumerate(messages):
            rule = match_rules(message)
            if rule is not None:
                out[i] = self._by_rule(message, rule)
            else:
                pending.append(i)
        if pending:
            await self.prepare()
            texts = [messages[i] for i in pending]
            if vectors is not None:
                rows = vectors[pending]
                scores = await asyncio.to_thread(self.semantic.score_vectors, texts, rows)
            else:
                scores = await asyncio.to_thread(self.semantic.score, texts)
            for i, s in zip(pending, scores, strict=True):
                out[i] = await self._after_rules(messages[i], s)
        # for a batch: the batch's time divided by its size
        elapsed = round(1000 * (time.perf_counter() - started) / max(1, len(messages)), 2)
        decisions = [replace(d, duration_ms=elapsed) for d in out if d is not None]
        for d in decisions:
            self.counts[d.layer] += 1
            if d.fallback:
                self.counts[d.fallback] += 1
        return decisions

    def _by_rule(self, message: str, rule: Rule) -> RouteDecision:
        return self._finish(
            message,
            intent=rule.intent,
            layer="rules",
            reasons=[f"rule {rule.id} matched: {rule.description}"],
            rule_id=rule.id,
        )

    async def _after_rules(self, message: str, s: IntentScores) -> RouteDecision:
        (best, best_score), (second, second_score) = s.best, s.runner_up
        threshold = self.thresholds.thresholds.get(best, NEVER)
        layer2 = {
            "scores": {name: _r(v) for name, v in s.scores.items()},
            "top": [(best, _r(best_score)), (second, _r(second_score))],
            "margin": _r(s.margin),
            "threshold": threshold,
            "required_margin": self.thresholds.margin,
        }
        summary = (
            f"embedding: {best} {best_score:.3f} (threshold {threshold:.3f}), "
            f"{second} {second_score:.3f}, margin {s.margin:.3f} (required {self.thresholds.margin:.3f})"
        )
        if self.trusted and self.thresholds.accepts(s):
            return self._finish(message, intent=best, layer="embedding", reasons=[summary], **layer2)
        why = (
            "thresholds were fitted for another model or examples"
            if not self.trusted
            else f"{best} below its threshold"
            if best_score < threshold
            else "margin too small"
        )
        if self.no_llm or self.llm is None:
            # The guess: the best intent if it cleared its own threshold (only the margin failed), else
            # career, the default when unsure (as the LLM fallback). Chosen on the training split: the
            # plain best intent was right for 1 of 6 unsure training messages, this rule for 6 of 6.
            guess = best if self.trusted and best_score >= threshold else "career"
            return self._finish(
                message,
                intent=guess,
                layer="embedding-guess",
                reasons=[summary, f"not sure ({why}); no-LLM mode: guessed {guess}"],
                **layer2,
            )
        result = await self.llm.classify(message)
        if isinstance(result, Failure):
            return self._finish(
                message,
                intent="career",
                layer="llm-fallback",
                reasons=[
                    summary,
                    f"not sure ({why}): asked the LLM",
                    f"LLM failed ({result.code}: {result.detail}); fell back to career",
                ],
                fallback=result.code,
                **layer2,
            )
        return self._finish(
            message,
            intent=result.intent,
            layer="llm",
            reasons=[
                summary,
                f"not sure ({why}): asked the LLM",
                f"LLM: {result.intent} (confidence {result.confidence:.2f}, {result.duration_ms:.0f} ms)",
            ],
            llm_intent=result.intent,
            llm_confidence=result.confidence,
            **layer2,
        )

    def _finish(
        self, message: str, *, intent: str, layer: str, reasons: list[str], **fields: object
    ) -> RouteDecision:
        tier = None
        tier_reasons: list[str] = []
        if intent == "career":
            t = classify_tier(message)
            tier, tier_reasons = t.tier, t.reasons
        return RouteDecision(
            intent=intent,
            tier=tier,
            layer=layer,
            reasons=[*reasons, *tier_reasons],
            tier_reasons=tier_reasons,
            **fields,  # type: ignore[arg-type]
        )
