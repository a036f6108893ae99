"""Flows: one module per flow, each an async generator of events. Looked up by intent and tier."""

from careerwise.flows.base import FlowContext, FlowRegistry, TurnState
from careerwise.flows.greeting import greeting_flow
from careerwise.flows.tool_use import tool_use_flow

__all__ = [
    "FlowContext",
    "FlowRegistry",
    "TurnState",
    "greeting_flow",
    "tool_use_flow",
]
