"""Routing: decide the intent (and, for career, the tier) of a message, cheapest layer first."""

from careerwise.routing.router import RouteDecision, Router, RulesRouter
from careerwise.routing.rules import RULES, Rule, match_rules

__all__ = ["RULES", "RouteDecision", "Router", "Rule", "RulesRouter", "match_rules"]
