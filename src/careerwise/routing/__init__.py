"""Routing: decide the intent (and, for career, the tier) of a message, cheapest layer first.

rules (``rules.py``, free) → embedding similarity (``semantic.py`` with ``thresholds.json``, cheap) →
LLM classifier (``llm_classifier.py``, rare); ``cascade.py`` runs them, ``tier.py`` is classifyTier.
See docs/routing.md.
"""

from careerwise.routing.cascade import CascadeRouter
from careerwise.routing.llm_classifier import LLMIntentClassifier, LLMVerdict, parse_verdict
from careerwise.routing.router import LAYERS, ContextualRouter, RouteDecision, Router, RulesRouter
from careerwise.routing.rules import RULES, Rule, match_rules
from careerwise.routing.semantic import INTENTS, IntentScores, SemanticClassifier, load_examples
from careerwise.routing.thresholds import Thresholds, fit_thresholds, load_thresholds
from careerwise.routing.tier import TierResult, classify_tier

__all__ = [
    "INTENTS",
    "LAYERS",
    "RULES",
    "CascadeRouter",
    "ContextualRouter",
    "IntentScores",
    "LLMIntentClassifier",
    "LLMVerdict",
    "RouteDecision",
    "Router",
    "Rule",
    "RulesRouter",
    "SemanticClassifier",
    "Thresholds",
    "TierResult",
    "classify_tier",
    "fit_thresholds",
    "load_examples",
    "load_thresholds",
    "match_rules",
    "parse_verdict",
]
