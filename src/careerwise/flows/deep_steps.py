"""The steps the deep answers share (the medium chain, the complex parallel and compact flows) and the
resume review builds on (``careerwise.resume``): a public module, so no package reaches into another's
private parts.

* ``ask_text`` / ``ask_json``: one LLM step, non-streamed (the provider's stream collected), under the
  step deadline of a :class:`Budget`; ``ask_json`` extracts a JSON object, validates it with a Pydantic
  model and retries once with the validation error. A step that cannot give a usable result raises
  :class:`careerwise.errors.StepFailed` with a stable ``code``. Given ``emit``, a step sends a
  ``waiting`` progress event every ``deep_heartbeat`` seconds while it runs (:func:`heartbeat`).
* :func:`pump`: runs an orchestration coroutine as a task and yields the events it emits as they come,
  so a flow can report progress while agents run concurrently (and cancels the task if the client goes).
* :func:`unsupported`: the merge/reflection guard: numbers, named tokens and titles of a statement must
  appear in the texts it rests on (read by ``fact_checks``, which the chain's fact check shares).
* :func:`simple_or_excerpts` / :func:`excerpts`: the bottom of the degradation ladder.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
import unicodedata
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from careerwise.errors import LLMError, LLMTimeoutError, LLMUnavailableError, StepFailed
from careerwise.events import (
    DegradedEvent,
    Event,
    ProgressEvent,
    ReportEvent,
    ReportSection,
    SectionEvent,
    Source,
)
from careerwise.flows import fact_checks
from careerwise.flows.base import FlowContext
from careerwise.flows.tool_use import tool_use_flow
from careerwise.knowledge.fence import fenced, head_line
from careerwise.knowledge.index import Hit
from careerwise.llm.clean import estimate_tokens
from careerwise.llm.profile import DEFAULT_PROFILE, ProviderProfile, profile_of
from careerwise.llm.types import ChatMessage, CompletionRequest
from careerwise.tracing.background import DEEP_TASK_AFTER_CLOSE, count_failure

log = logging.getLogger(__name__)

CHAIN_TEMPERATURE = 0.5
REFLECTION_TEMPERATURE = 0.3

T = TypeVar("T", bound=BaseModel)
Emit = Callable[[Event], None]


# --------------------------------------------------------------------------- failures and deadlines


class Budget:
    """The deep attempt's deadline (``deep_turn_timeout``, the turn's ceiling) and each step's.

    A step's deadline follows the provider's speed when its profile knows it: reading the step's prompt
    and writing its planned output (``max_tokens``), with the profile's safety factor and floor
    (:meth:`ProviderProfile.step_deadline`), capped by what is left of the attempt. A provider of unknown
    speed, or a step that names no planned output, gets the fixed ``deep_step_timeout``."""

    def __init__(self, step: float, total: float, profile: ProviderProfile = DEFAULT_PROFILE) -> None:
        self.step = step
        self.profile = profile
        self.deadline = time.monotonic() + total

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def step_timeout(self, messages: Sequence[ChatMessage] = (), max_tokens: int = 0) -> float:
        left = self.remaining()
        if left <= 0:
            raise StepFailed("turn_deadline", "the deep answer ran out of time")
        if self.profile.speed_known and max_tokens > 0:
            prompt = sum(estimate_tokens(m.content) for m in messages)
            return self.profile.step_deadline(prompt, max_tokens, ceiling=left)
        return min(self.step, left)


def budget_for(ctx: FlowContext) -> Budget:
    """The budget of a deep attempt on ``ctx``'s provider, with its profile as it stands now."""
    return Budget(ctx.options.deep_step_timeout, ctx.options.deep_turn_timeout, profile_of(ctx.provider))


# --------------------------------------------------------------------------- calling the LLM


async def complete(ctx: FlowContext, request: CompletionRequest) -> str:
    """One completion, non-streamed: the provider's stream collected. Usage and calls are counted."""
    ctx.state.llm_calls += 1
    parts: list[str] = []
    async for chunk in ctx.provider.stream(request):
        ctx.state.add_usage(chunk.usage)
        if chunk.text:
            parts.append(chunk.text)
    return "".join(parts)


HEARTBEAT_TASK = "careerwise-heartbeat"  # the name prefix of the heartbeat tasks (tests look for leftovers)


@asynccontextmanager
async def heartbeat(emit: Emit | None, step: str, interval: float) -> AsyncIterator[None]:
    """While the body runs, a ``progress`` event (stage ``waiting``, the step, the seconds so far) every
    ``interval`` seconds, so a long LLM call (40-60 s on the embedded model) does not leave the stream
    silent. The beat is cancelled and awaited before the body's caller goes on, so no beat can follow
    (or be reordered after) the step's own events; nothing is left running when the step ends, fails or
    is cancelled."""
    if emit is None or interval <= 0:
        yield
        return
    started = time.monotonic()

    async def beat() -> None:
        while True:
            await asyncio.sleep(interval)
            elapsed = time.monotonic() - started
            emit(
                ProgressEvent(
                    stage="waiting",
                    detail=f"{step}: {elapsed:.0f} s",
                    step=step,
                    elapsed_s=round(elapsed, 1),
                )
            )

    task = asyncio.create_task(beat(), name=f"{HEARTBEAT_TASK}:{step}")
    try:
        yield
    finally:
        task.cancel()  # suspended in its sleep: it cannot emit again
        await asyncio.wait({task})  # gone before the caller emits its next event (never swallows a cancel)


def _failure(exc: LLMError) -> StepFailed:
    if isinstance(exc, LLMTimeoutError):
        return StepFailed("timeout", str(exc))
    if isinstance(exc, LLMUnavailableError):
        return StepFailed("llm_unavailable", str(exc), unreachable=True)
    return StepFailed("llm_error", str(exc))


async def _attempts(
    ctx: FlowContext,
    messages: list[ChatMessage],
    *,
    temperature: float,
    max_tokens: int,
    budget: Budget,
    label: str,
    accept: Callable[[str], object],
    note: Callable[[str], str],
    emit: Emit | None = None,
    json_schema: dict[str, Any] | None = None,
) -> object:
    """Up to two attempts of one step under one step deadline. ``accept`` turns the reply into the
    result or raises ``ValueError`` (the reason goes back to the model once). With ``emit``, a heartbeat
    reports the step as waiting every ``deep_heartbeat`` seconds while it runs. ``json_schema``
    constrains the reply where the provider can (a grammar on the embedded model, ``response_format``
    on a server); ``accept`` still checks it."""
    started = time.perf_counter()
    conversation = list(messages)
    try:
        async with (
            heartbeat(emit, label, ctx.options.deep_heartbeat),
            asyncio.timeout(budget.step_timeout(messages, max_tokens)),
        ):
            attempt = 0
            while True:
                attempt += 1
                request = CompletionRequest(
                    messages=conversation,
                    max_tokens=max_tokens,
                    temperature=temperature,
                    metadata={"purpose": label},  # names the LLM-call span (tracing/llm_calls.py)
                    json_schema=json_schema,
                )
                try:
                    reply = await complete(ctx, request)
                except LLMError as exc:
                    if exc.retryable and attempt == 1 and ctx.options.llm_retries > 0:
                        ctx.state.retries += 1
                        log.warning("deep %s: retrying after %s: %s", label, type(exc).__name__, exc)
                        continue
                    raise _failure(exc) from exc
                try:
                    return accept(reply)
                except ValueError as exc:
                    code = "empty" if not reply.strip() else "invalid_json"
                    if attempt >= 2:
                        raise StepFailed(code, str(exc)) from exc
                    ctx.state.retries += 1
                    log.warning("deep %s: %s, asking once more: %s", label, code, exc)
                    conversation = [
                        *messages,
                        ChatMessage(role="assistant", content=reply),
                        ChatMessage(role="user", content=note(str(exc))),
                    ]
    except TimeoutError as exc:
        raise StepFailed("timeout", f"{label} took longer than its deadline") from exc
    finally:
        ctx.state.timings[f"{label}_ms"] = 1000 * (time.perf_counter() - started)


def _json_note(error: str) -> str:
    return (
        "你的回覆無法使用 / Your reply could not be used: "
        f"{error[:400]}\n請只回傳一個符合上述 schema 的 JSON 物件 / Reply with one JSON object that follows "
        "the schema above, and nothing else."
    )


def _text_note(error: str) -> str:
    return "你的回覆是空的，請直接回答上面的要求。/ Your reply was empty; please answer the request above."


def _non_empty(reply: str) -> str:
    text = reply.strip()
    if not text:
        raise ValueError("the reply was empty")
    return text


async def ask_text(
    ctx: FlowContext,
    messages: list[ChatMessage],
    *,
    temperature: float,
    max_tokens: int,
    budget: Budget,
    label: str,
    emit: Emit | None = None,
) -> str:
    result = await _attempts(
        ctx,
        messages,
        temperature=temperature,
        max_tokens=max_tokens,
        budget=budget,
        label=label,
        emit=emit,
        accept=_non_empty,
        note=_text_note,
    )
    assert isinstance(result, str)
    return result


async def ask_json(
    ctx: FlowContext,
    messages: list[ChatMessage],
    model: type[T],
    *,
    temperature: float,
    max_tokens: int,
    budget: Budget,
    label: str,
    emit: Emit | None = None,
    json_schema: dict[str, Any] | None = None,
) -> T:
    def accept(reply: str) -> T:
        return parse_model(model, reply)

    result = await _attempts(
        ctx,
        messages,
        temperature=temperature,
        max_tokens=max_tokens,
        budget=budget,
        label=label,
        emit=emit,
        accept=accept,
        note=_json_note,
        json_schema=json_schema,
    )
    assert isinstance(result, model)
    return result


# --------------------------------------------------------------------------- JSON

_FENCE = re.compile(r"```(?:json|JSON)?")


def extract_json(text: str) -> dict[str, object]:
    """The first JSON object in a reply, also when it is wrapped in a code fence or some prose."""
    cleaned = _FENCE.sub("", text)
    decoder = json.JSONDecoder()
    for i, ch in enumerate(cleaned):
        if ch != "{":
            continue
        try:
            value, _ = decoder.raw_decode(cleaned, i)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    raise ValueError("no JSON object found in the reply" if text.strip() else "the reply was empty")


def parse_model(model: type[T], text: str) -> T:
    """``text``'s JSON object validated by ``model``; ``ValueError`` with a short reason otherwise."""
    value = extract_json(text)
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'value'}: {err['msg']}" for err in exc.errors()[:5]
        )
        raise ValueError(f"the JSON does not follow the schema ({problems})") from exc


# a small model may copy the schema's example values instead of filling them in
_PLACEHOLDER = re.compile(
    r"^\s*(?:具體發現|關鍵洞察|concrete finding|key insight)\s*\d*\s*$|^[\s…．.·\-]*$", re.IGNORECASE
)
TEMPLATE_PHRASES = (
    "沒改就省略",
    "修正後的完整內容",
    "每項修正寫一句話",
    "omit if unchanged",
    "whole corrected content",
    "one sentence per fix",
)


def is_placeholder(text: str) -> bool:
    """An example value of a prompt's schema (具體發現1, …) or a template phrase, not content."""
    return bool(_PLACEHOLDER.match(text)) or any(p in text for p in TEMPLATE_PHRASES)


def clean_items(items: Iterable[object], limit: int) -> list[str]:
    """Non-empty strings that are not placeholders, stripped, at most ``limit`` of them."""
    out = [str(i).strip() for i in items if isinstance(i, str | int | float) and str(i).strip()]
    return [i for i in out if not is_placeholder(i)][:limit]


# --------------------------------------------------------------------------- events from a task


async def pump(run: Callable[[Emit], Coroutine[Any, Any, None]]) -> AsyncIterator[Event]:
    """Run ``run(emit)`` as a task and yield every event it emits, as soon as it emits it. Its exception
    (if any) is raised after the events emitted before it; closing the generator cancels the task."""
    queue: asyncio.Queue[Event] = asyncio.Queue()
    task = asyncio.create_task(run(queue.put_nowait))
    try:
        while True:
            getter = asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
            if getter in done:
                yield getter.result()
                continue
            getter.cancel()
            break
        while not queue.empty():
            yield queue.get_nowait()
        task.result()
    finally:
        if not task.done():
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass  # the cancel above: the reader went away, nothing failed
            except Exception:  # the task failed as it was stopped: nobody reads its events any more
                log.exception("deep: the flow's task failed after its reader had gone")
                count_failure(DEEP_TASK_AFTER_CLOSE)


# --------------------------------------------------------------------------- situation keywords

_ZH_FILLERS = (
    "請問",
    "想請問",
    "想問",
    "我想知道",
    "應該不應該",
    "應不應該",
    "該不該",
    "該不改",
    "要不要",
    "值不值得",
    "值得嗎",
    "是不是",
    "可不可以",
    "能不能",
    "怎麼辦",
    "怎麼做",
    "怎麼",
    "如何",
    "什麼",
    "Summer",
    "summer",
    "老師",
    "我想",
    "我們",
    "我",
    "你",
    "妳",
    "嗎",
    "呢",
    "吧",
    "啊",
    "呀",
    "了",
    "的",
)
_ZH_JOINERS = re.compile(r"但是|但|而且|還是|或是|或者|可是|所以|因為|然後|和|跟|與")
_PUNCT = re.compile(r"[\s\W_]+")
_EN_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "i",
        "me",
        "my",
        "we",
        "our",
        "you",
        "your",
        "he",
        "she",
        "it",
        "they",
        "them",
        "is",
        "am",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "do",
        "does",
        "did",
        "to",
        "of",
        "in",
        "on",
        "at",
        "for",
        "from",
        "with",
        "about",
        "as",
        "by",
        "or",
        "and",
        "but",
        "if",
        "so",
        "than",
        "then",
        "this",
        "that",
        "these",
        "those",
        "what",
        "which",
        "who",
        "whom",
        "how",
        "why",
        "when",
        "where",
        "should",
        "shall",
        "would",
        "could",
        "can",
        "will",
        "just",
        "really",
        "very",
        "any",
        "some",
        "more",
        "most",
        "have",
        "has",
        "had",
        "not",
        "no",
        "yes",
        "it's",
        "im",
        "i'm",
        "get",
        "got",
        "want",
        "wanted",
        "think",
        "summer",
        "please",
    ]
)
_EN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9+#.'-]*")


def situation_keywords(message: str, zh: bool, *, limit: int = 40) -> str:
    """The words of the user's message that describe their situation, without question words and
    fillers: what a facet query or the chain's fallback query combines with its own angle."""
    text = unicodedata.normalize("NFKC", message)
    if zh:
        for filler in _ZH_FILLERS:
            text = text.replace(filler, " ")
        text = _ZH_JOINERS.sub(" ", text)
        words = [w for w in _PUNCT.split(text) if w]
    else:
        words = [w.lower().strip(".'-") for w in _EN_WORD.findall(text)]
        words = [w for w in words if w and w not in _EN_STOP]
    out = " ".join(dict.fromkeys(words))
    return out[:limit].strip()


# --------------------------------------------------------------------------- the guard

_LIST_MARK = re.compile(r"^\s*(?:\d{1,2}[.)、]\s+|[-*・•]\s*)")
_HAN = re.compile(r"[\u3400-\u9fff]")
_HAN_RUN = re.compile(r"[\u3400-\u9fff]+")
# the numbers and names a statement asserts, read the same way by the merge guard and the chain's check
numbers = fact_checks.numbers
named_tokens = fact_checks.named_tokens
_latin_words = fact_checks.latin_words


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def _bigrams(text: str) -> set[str]:
    grams: set[str] = set()
    for run in _HAN_RUN.findall(text):
        grams.update(run[i : i + 2] for i in range(len(run) - 1))
    return grams


def _content_words(text: str) -> set[str]:
    return {w.lower() for w, _ in _latin_words(text) if len(w) > 3 and w.lower() not in _EN_STOP}


def overlap(statement: str, sources: Sequence[str]) -> float | None:
    """Share of the statement's Han bigrams (or English content words) found in ``sources``; None when
    the statement is too short to judge."""
    joined = _norm(" ".join(sources))
    s = _norm(statement)
    mine, theirs = (
        (_bigrams(s), _bigrams(joined)) if _HAN.search(s) else (_content_words(s), _content_words(joined))
    )
    if len(mine) < 4:
        return None
    return len(mine & theirs) / len(mine)


MIN_OVERLAP = 0.15


def unsupported(statement: str, cited: Sequence[str], allowed: Sequence[str]) -> str | None:
    """Why ``statement`` asserts something its sources do not contain, or None if it does not.

    Every number and named token must appear in ``cited`` + ``allowed`` (the cited findings, their
    agents' chunks, the user's own message); and the statement must share some wording with ``cited``.
    """
    body = _LIST_MARK.sub("", statement)
    problem = fact_checks.unsupported_claim(body, [*cited, *allowed])
    if problem is not None:
        return problem
    share = overlap(body, cited)
    if share is not None and share < MIN_OVERLAP:
        return f"little in common with what it cites ({share:.2f} < {MIN_OVERLAP})"
    return None


# --------------------------------------------------------------------------- sources and lines


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


# --------------------------------------------------------------------------- the bottom of the ladder

EXCERPTS = 3
EXCERPT_CHARS = 360


def _excerpt(text: str) -> str:
    text = text.strip()
    if len(text) <= EXCERPT_CHARS:
        return text
    cut = text[:EXCERPT_CHARS]
    end = max(cut.rfind(p) for p in "。！？.!?\n")
    return (cut[: end + 1] if end > EXCERPT_CHARS // 2 else cut).rstrip() + "…"


async def excerpts(ctx: FlowContext, hits: Sequence[Hit], error: Exception) -> AsyncIterator[Event]:
    """The LLM is unreachable: the best knowledge-base passages found so far (or found now for the raw
    message), with a plain notice. Without any passage the error is raised for the engine to report."""
    found = list(hits)
    if not found and ctx.kb is not None and ctx.kb.available:
        try:
            found = (await ctx.kb.search(ctx.message, top_k=EXCERPTS, candidates=12)).hits[:EXCERPTS]
        except Exception:
            log.exception("deep: the excerpt search failed")
            # an event, so the trace and careerwise_retrieval_failures_total{kind="search_failed"} show it
            yield degraded("excerpts_search_failed", ctx.zh)
    best: dict[int, Hit] = {}
    for h in sorted(found, key=lambda h: h.score, reverse=True):
        best.setdefault(h.chunk.id, h)
    chosen = list(best.values())[:EXCERPTS]
    if not chosen:
        raise error if isinstance(error, LLMError) else LLMUnavailableError(str(error))
    ctx.state.path = "excerpts"
    yield degraded("llm_unreachable", ctx.zh)
    yield ReportEvent(
        title="知識庫摘錄" if ctx.zh else "From the knowledge base",
        path="excerpts",
        sections=[
            ReportSection(
                heading=h.chunk.title + (f" › {h.chunk.section}" if h.chunk.section else ""),
                body=_excerpt(h.chunk.text),
                sources=[source_of(h)],
            )
            for h in chosen
        ],
    )


async def simple_or_excerpts(
    ctx: FlowContext, hits: Sequence[Hit], *, skip_reason: str | None = None
) -> AsyncIterator[Event]:
    """The streamed tool-use answer; if the LLM fails before any text, the excerpts. ``skip_reason``: a
    degraded reason the caller already reported (not repeated)."""
    ctx.state.path = "B"
    try:
        async for event in tool_use_flow(ctx):
            if isinstance(event, DegradedEvent) and event.reason == skip_reason:
                continue
            yield event
    except LLMError as exc:
        if ctx.state.shown_text:
            raise
        log.warning("deep: the streamed answer failed too (%s); showing excerpts", exc)
        async for event in excerpts(ctx, hits, exc):
            yield event


@dataclass
class Outcome:
    """What an orchestration left for its flow: whether it answered, and if not, why."""

    done: bool = False
    failure: StepFailed | None = None
    hits: list[Hit] | None = None


def section_events(report: ReportEvent) -> list[SectionEvent]:
    """The report's sections as ``section`` events, in report order (decision 0016): the full design
    sends them when its report is complete, just before the ``report`` event that repeats them."""
    return [
        SectionEvent(
            index=i, heading=s.heading, body=s.body, risk_level=s.risk_level, sources=list(s.sources)
        )
        for i, s in enumerate(report.sections)
    ]
