"""The typed events every flow yields (shared/DESIGN.md principle 1).

The SSE stream, the full-JSON reply, the trace rows and the CLI's ``--json`` output are all
made from these same objects; nobody rebuilds a value from an earlier snapshot.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True)


Intent = Literal["greeting", "career", "resume", "booking", "offtopic"]
Tier = Literal["simple", "medium", "complex"]


class RouteEvent(_Event):
    type: Literal["route"] = "route"
    intent: Intent
    tier: Tier | None = None
    layer: str
    rule_id: str | None = None
    flow: str
    reasons: list[str] = Field(default_factory=list)
    # the routing record (docs/routing.md): layer-2 scores, the best two, margin and threshold
    scores: dict[str, float] | None = None
    top: list[tuple[str, float]] | None = None
    margin: float | None = None
    threshold: float | None = None
    required_margin: float | None = None
    llm_intent: str | None = None
    llm_confidence: float | None = None
    fallback: str | None = Field(
        default=None, description="Why the LLM's answer was not used, if it was not."
    )
    tier_reasons: list[str] = Field(default_factory=list)
    duration_ms: float | None = None
    stages: list[dict[str, Any]] | None = Field(
        default=None, description="Layer 2 stage by stage (lexical, embedding): scores, margin, threshold."
    )


# the phase of a delta that quotes the articles' own sentences after the search (decision 0023)
QUOTE_PHASE = 2
# the names a tool_call event can carry for the project's own tools: the knowledge search the model
# calls, and the answer cache's replay; any other name is the model's invention
SEARCH_TOOL = "searchKnowledge"
ANSWER_CACHE_TOOL = "answerCache"


class DeltaEvent(_Event):
    type: Literal["delta"] = "delta"
    text: str
    phase: int = Field(
        description="1: the first LLM round (path B); 3: after tool results (path A); 2: the articles' own "
        "sentences quoted after the search, before the grounded answer (decision 0023)."
    )
    notice: bool = Field(default=False, description="True for the text-then-tool notice line.")


class ToolCallEvent(_Event):
    type: Literal["tool_call"] = "tool_call"
    call_id: str
    name: str
    requested_arguments: dict[str, Any] = Field(description="What the model asked for (parsed).")
    effective_arguments: dict[str, Any] = Field(description="What the tool actually ran with.")
    reason: str = Field(description="Why effective differs from requested, or 'as requested'.")
    raw_arguments: str | None = Field(default=None, description="Set when the arguments did not parse.")
    after_text: bool = Field(default=False, description="The model called the tool after text was shown.")


class Source(BaseModel):
    model_config = ConfigDict(frozen=True)
    id: str
    title: str
    section: str | None = None
    score: float | None = None


class ToolResultEvent(_Event):
    type: Literal["tool_result"] = "tool_result"
    call_id: str
    name: str
    ok: bool
    returned: int = Field(description="How many items the tool returned (chunks for searchKnowledge).")
    sources: list[Source] = Field(default_factory=list)
    error: str | None = None
    duration_ms: float = 0.0


class ReportSection(BaseModel):
    model_config = ConfigDict(frozen=True)
    heading: str
    body: str
    risk_level: Literal["low", "medium", "high"] | None = None
    sources: list[Source] = Field(default_factory=list)


class ReportEvent(_Event):
    type: Literal["report"] = "report"
    title: str
    sections: list[ReportSection]
    path: str | None = Field(
        default=None, description="Which deep path wrote it: parallel, chain or excerpts."
    )
    missing_facets: list[str] = Field(
        default_factory=list, description="Facets shown as having no analysis, e.g. 'market: no_knowledge'."
    )
    dropped_statements: int | None = Field(
        default=None,
        description="Statements removed before the user saw them: the merge's uncited/unsupported ones "
        "(parallel), or the sentences the chain's fact check found no source for (chain).",
    )
    guards: dict[str, int] | None = Field(
        default=None,
        description="What each report guard did (flows/report_guards.py), every guard listed, 0 = ran and "
        "found nothing: invented_user_statements, not_applicable, wrong_comparisons, duplicate_items, "
        "truncated_items, duplicate_sources, off_domain_hits. None: the report was not guarded (excerpts).",
    )
    reflection: list[str] | None = Field(
        default=None, description="What the reflection round corrected ([] = reviewed, nothing changed)."
    )


class SectionEvent(_Event):
    """One section of a deep report, sent as soon as it is ready (decision 0016). The final ``report``
    event still carries every section; a client that shows sections replaces them with the report."""

    type: Literal["section"] = "section"
    index: int = Field(description="0-based position of this section in the final report.")
    heading: str
    body: str
    risk_level: Literal["low", "medium", "high"] | None = None
    sources: list[Source] = Field(default_factory=list)


class ProgressEvent(_Event):
    type: Literal["progress"] = "progress"
    stage: Literal[
        "facet_search",
        "agent_started",
        "agent_finished",
        "merge",
        "chain_step",
        "reflection",
        "fact_check",
        "resume",
        "waiting",
        "guards",  # what the report guards did (flows/report_guards.py), before the report
    ]
    detail: str | None = None
    # set on "waiting" (the heartbeat while one LLM step runs): which step, and for how long so far
    step: str | None = None
    elapsed_s: float | None = None


class DegradedEvent(_Event):
    type: Literal["degraded"] = "degraded"
    reason: str = Field(description="A stable machine-readable code, e.g. 'tools_unsupported'.")
    message: str = Field(description="One line the user sees.")


class DoneEvent(_Event):
    type: Literal["done"] = "done"
    trace_id: str
    conversation_id: str
    message_id: str
    status: Literal["ok", "error", "cancelled"]
    path: str = Field(description="A (tool used), B (answered directly), or the flow name.")
    usage: dict[str, int] = Field(default_factory=dict)


class ErrorEvent(_Event):
    type: Literal["error"] = "error"
    code: str
    message: str
    retryable: bool = False


Event = Annotated[
    RouteEvent
    | DeltaEvent
    | ToolCallEvent
    | ToolResultEvent
    | ReportEvent
    | SectionEvent
    | ProgressEvent
    | DegradedEvent
    | DoneEvent
    | ErrorEvent,
    Field(discriminator="type"),
]
EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


def event_to_sse(event: Event) -> bytes:
    """One Server-Sent Events frame: ``event: <type>`` and the JSON payload on one data line."""
    return f"event: {event.type}\ndata: {event.model_dump_json()}\n\n".encode()
