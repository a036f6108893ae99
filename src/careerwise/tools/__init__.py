"""Tools the model may call. Tools register themselves in a registry; flows ask it by intent."""

from careerwise.tools.registry import Resolution, Tool, ToolOutput, ToolRegistry
from careerwise.tools.search_knowledge import SearchKnowledgeTool

__all__ = ["Resolution", "SearchKnowledgeTool", "Tool", "ToolOutput", "ToolRegistry"]
