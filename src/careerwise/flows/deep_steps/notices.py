"""What a deep answer shows about its sources and its failures.

:func:`sources_of` turns hits into the report's sources (each chunk once, in hit order);
:func:`passages` numbers them for a prompt, each fenced so a passage cannot close its own fence.
:func:`degraded` gives the ``degraded`` event of a named reason in the user's language, and
:func:`cause` the words for a :class:`careerwise.errors.StepFailed` code; an unknown code is shown as
it is, never dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from careerwise.events import DegradedEvent, Source
from careerwise.knowledge.fence import fenced, head_line
from careerwise.knowledge.index import Hit


def source_of(hit: Hit) -> Source:
    return Source(
        id=hit.chunk.document_id,
        title=hit.chunk.title,
        section=hit.chunk.section or None,
        score=round(hit.score, 4),
    )


def sources_of(hits: Iterable[Hit]) -> list[Source]:
    seen: set[int] = set()
    out: list[Source] = []
    for h in hits:
        if h.chunk.id not in seen:
            seen.add(h.chunk.id)
            out.append(source_of(h))
    return out


def passages(hits: Sequence[Hit], *, start: int = 1) -> str:
    """Chunks as numbered reference passages for a prompt."""
    blocks = []
    for n, h in enumerate(hits, start):
        # a passage cannot close its own fence: the markers in its head and its text are defused
        blocks.append(f"〔{n}〕{head_line(h.chunk.title, h.chunk.section)}\n{fenced(h.chunk.text)}")
    return "\n\n".join(blocks)


CAUSES = {
    "timeout": ("逾時", "timed out"),
    "turn_deadline": ("超過整體時限", "out of time"),
    "invalid_json": ("回覆格式錯誤", "invalid reply"),
    "empty": ("沒有回覆內容", "empty reply"),
    "llm_unavailable": ("語言模型服務無法連線", "the language model is unreachable"),
    "llm_error": ("語言模型服務錯誤", "language model error"),
    "no_knowledge": ("知識庫沒有相關資料", "no matching knowledge"),
    "knowledge_search_failed": ("知識庫搜尋失敗", "the knowledge search failed"),
    "internal_error": ("內部錯誤", "internal error"),
}

LINES = {
    "deep_agent_failed": (
        "「{facet}」的分析沒有完成（{cause}），報告中標示為暫無資料。",
        "The {facet} analysis did not finish ({cause}); the report marks it as missing.",
    ),
    "deep_agents_failed": (
        "多面向分析沒有完成（{cause}），改用逐步分析。",
        "The multi-facet analysis did not finish ({cause}); a step-by-step analysis follows instead.",
    ),
    "deep_resume_unavailable": (
        "無法讀取你儲存的履歷（{cause}），實戰準備的分析沒有參考履歷。",
        "Your stored resume could not be read ({cause}); the practical preparation does not use it.",
    ),
    "deep_merge_failed": (
        "報告整合沒有完成（{cause}），以下直接列出各面向的分析結果。",
        "Combining the analyses did not finish ({cause}); each facet's findings are listed as they are.",
    ),
    "deep_reflection_failed": (
        "自我檢查沒有完成（{cause}），以下是未經複查的分析。",
        "The self-review did not finish ({cause}); the analysis below was not double-checked.",
    ),
    "deep_chain_failed": (
        "深度分析沒有完成（{cause}），改用一般回答。",
        "The in-depth analysis did not finish ({cause}); a regular answer follows instead.",
    ),
    "deep_knowledge_search_failed": (
        "知識庫搜尋失敗，無法做深度分析，改用一般回答。",
        "The knowledge search failed, so there is no in-depth analysis; a regular answer follows.",
    ),
    "excerpts_search_failed": (
        "語言模型無法連線，知識庫搜尋也失敗了，無法提供相關段落。",
        "The language model is unreachable and the knowledge search failed too, so no passages can be shown.",
    ),
    "deep_knowledge_unavailable": (
        "知識庫目前無法使用，無法做深度分析，改用一般回答。",
        "The knowledge base is unavailable, so there is no in-depth analysis; a regular answer follows.",
    ),
    "llm_unreachable": (
        "Summer 暫時無法回應（語言模型服務無法連線）。以下是知識庫中與你的問題最相關的段落，供你先參考。",
        "Summer cannot answer right now (the language model is unreachable). Below are the most relevant "
        "passages from her knowledge base.",
    ),
}


def cause(code: str, zh: bool) -> str:
    pair = CAUSES.get(code, (code, code))
    return pair[0] if zh else pair[1]


def degraded(reason: str, zh: bool, **values: str) -> DegradedEvent:
    pair = LINES[reason]
    return DegradedEvent(reason=reason, message=(pair[0] if zh else pair[1]).format(**values))
