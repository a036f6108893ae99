"""The router interface and its first layer. The embedding and LLM layers and the complexity tier
build on this interface (the routing issue)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from careerwise.routing.rules import match_rules


@dataclass(frozen=True)
class RouteDecision:
    intent: str
    tier: str | None
    layer: str
    rule_id: str | None = None
    reasons: list[str] = field(default_factory=list)


class Router(Protocol):
    async def route(self, message: str) -> RouteDecision: ...


class RulesRouter:
    """Rules only: a rule decides greeting / resume / booking; everything else is a career question
    answered by the streamed tool-use flow (tier 'simple')."""

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
        return RouteDecision(
            intent="career",
            tier="simple",
            layer="default",
            reasons=["no rule matched: career; the tier classifier is not enabled yet"],
        )
