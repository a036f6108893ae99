"""The steps the deep answers share (the medium chain, the complex parallel and compact flows) and the
resume review builds on (``careerwise.resume``): a public package, so no package reaches into another's
private parts. Callers use the names re-exported here; each module states its own guarantee.

* :mod:`.steps`: one LLM step (``ask_text`` / ``ask_json``) under a :class:`Budget`'s deadline, with its
  heartbeat, one retry and :class:`careerwise.errors.StepFailed` codes.
* :mod:`.replies`: the JSON object in a reply, validated; placeholders told apart from content.
* :mod:`.orchestration`: :func:`pump` streams an orchestration task's events; :class:`Outcome`.
* :mod:`.keywords`: :func:`situation_keywords`, the words of the user's situation.
* :mod:`.guard`: :func:`unsupported`, the merge/reflection guard (shared with ``fact_checks``).
* :mod:`.notices`: sources, numbered passages, ``degraded`` events and their causes.
* :mod:`.ladder`: :func:`simple_or_excerpts` / :func:`excerpts`, the bottom of the degradation ladder.
"""

from careerwise.flows.deep_steps.guard import MIN_OVERLAP, named_tokens, numbers, overlap, unsupported
from careerwise.flows.deep_steps.keywords import situation_keywords
from careerwise.flows.deep_steps.ladder import EXCERPT_CHARS, EXCERPTS, excerpts, simple_or_excerpts
from careerwise.flows.deep_steps.notices import (
    CAUSES,
    LINES,
    cause,
    degraded,
    passages,
    source_of,
    sources_of,
)
from careerwise.flows.deep_steps.orchestration import Outcome, pump, section_events
from careerwise.flows.deep_steps.replies import (
    TEMPLATE_PHRASES,
    clean_items,
    extract_json,
    is_placeholder,
    parse_model,
)
from careerwise.flows.deep_steps.steps import (
    CHAIN_TEMPERATURE,
    HEARTBEAT_TASK,
    REFLECTION_TEMPERATURE,
    Budget,
    Emit,
    ask_json,
    ask_text,
    budget_for,
    complete,
    heartbeat,
)

__all__ = [
    "CAUSES",
    "CHAIN_TEMPERATURE",
    "EXCERPTS",
    "EXCERPT_CHARS",
    "HEARTBEAT_TASK",
    "LINES",
    "MIN_OVERLAP",
    "REFLECTION_TEMPERATURE",
    "TEMPLATE_PHRASES",
    "Budget",
    "Emit",
    "Outcome",
    "ask_json",
    "ask_text",
    "budget_for",
    "cause",
    "clean_items",
    "complete",
    "degraded",
    "excerpts",
    "extract_json",
    "heartbeat",
    "is_placeholder",
    "named_tokens",
    "numbers",
    "overlap",
    "parse_model",
    "passages",
    "pump",
    "section_events",
    "simple_or_excerpts",
    "situation_keywords",
    "source_of",
    "sources_of",
    "unsupported",
]
