"""The router interface, the routing record every turn gets, and the rules-only router."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from careerwise.routing.rules import match_rules
from careerwise.routing.tier import classify_tier

# Which layer decided: "rules", "embedding", "llm", "llm-fallback" (the LLM failed or answered
# something unusable: career), "embedding-guess" (no-LLM mode: the message would have gone to the LLM,
# the best embedding intent was taken instead), "default" (RulesRouter: no rule matched), "dialogue" (the
# engine, not a router: an open multi-turn dialogue such as a booking claimed the message), "upload" (a
# file sent to POST /api/resumes: the caller names the route and the flow).
# "history": a short follow-up kept the intent of the conversation's previous turn (followup.py).
# "lexical": layer 2's first stage (character n-grams, lexical.py) was sure; the embedding stage was
# skipped.
LAYERS = (
    "rules",
    "lexical",
    "embedding",
    "history",
    "llm",
    "llm-fallback",
    "embedding-guess",
    "default",
    "dialogue",
    "upload",
)


@dataclass(frozen=True)
class RouteDecision:
    intent: str
    tier: str | None
    layer: str
    rule_id: str | None = None
    reasons: list[str] = field(default_factory=list)
    # layer 2: every intent's score, the best two, the margin between them, the bar the best had to clear
    scores: dict[str, float] | None = None
    top: list[tuple[str, float]] | None = None
    margin: float | None = None
    threshold: float | None = None
    required_margin: float | None = None
    # layer 3
    llm_intent: str | None = None
    llm_confidence: float | None = None
    # why the LLM's answer was not used: llm_invalid_json / llm_error / llm_timeout
    fallback: str | None = None
    tier_reasons: list[str] = field(default_factory=list)
    duration_ms: float | None = None
    # layer 2 stage by stage, in the order they ran: {"stage": "lexical" | "embedding", "model", "scores",
    # "top", "margin", "threshold", "required_margin", "accepted"}; the top-level layer-2 fields above
    # are those of the last stage that ran (the one that decided, or the one that passed the message on)
    stages: list[dict[str, Any]] | None = None

    def to_json(self) -> dict[str, Any]:
        """Plain JSON (the CLI's ``--json``, traces); ``top`` as [[intent, score], ...]."""
        return {
            "intent": self.intent,
            "tier": self.tier,
            "layer": self.layer,
            "rule_id": self.rule_id,
            "reasons": list(self.reasons),
            "scores": dict(self.scores) if self.scores is not None else None,
            "top": [[name, score] for name, score in self.top] if self.top is not None else None,
            "margin": self.margin,
            "threshold": self.threshold,
            "required_margin": self.required_margin,
            "llm_intent": self.llm_intent,
            "llm_confidence": self.llm_confidence,
            "fallback": self.fallback,
            "tier_reasons": list(self.tier_reasons),
            "duration_ms": self.duration_ms,
            "stages": [dict(stage) for stage in self.stages] if self.stages is not None else None,
        }


class Router(Protocol):
    async def route(self, message: str) -> RouteDecision: ...


@runtime_checkable
class ContextualRouter(Protocol):
    """A router that can also use the conversation's earlier user turns (oldest first): the engine
    calls this instead of ``route`` when the router has it (the history rule, followup.py)."""

    async def route_in_context(self, message: str, previous: Sequence[str]) -> RouteDecision: ...


class RulesRouter:
    """Rules only (no model at all): a rule decides greeting / resume / booking; everything else is a
    career question with its tier."""

    async def route(self, message: str) -> RouteDecision:
        rule = match_rules(message)
        if rule is not None:
            return RouteDecision(
                intent=rule.intent,
                tier=None,
                layer="rules",
                rule_id=rule.id,
                reasons=[f"rule {rule.id} matched"],
            )
        tier = classify_tier(message)
        return RouteDecision(
            intent="career",
            tier=tier.tier,
            layer="default",
            reasons=["no rule matched: career", *tier.reasons],
            tier_reasons=tier.reasons,
        )
