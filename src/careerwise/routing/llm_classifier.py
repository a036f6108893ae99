"""Layer 3: the LLM as a classifier, for the messages the cheaper layers are not sure about.

The model must answer with one label (``career``, quotes tolerated), or, in the older form, exactly one
JSON object ``{"intent": ..., "confidence": ...}`` (a ```json fence around it is tolerated, nothing else
is). Anything else, a provider error or a timeout is a
``Failure`` with a stable code; the cascade turns it into the career fallback, recorded on the
decision. The user never sees an error from routing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections import deque
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from careerwise.errors import LLMError
from careerwise.llm.types import ChatMessage, CompletionRequest, LLMProvider

log = logging.getLogger(__name__)

PROMPT_CHARS = 600  # a pasted resume does not need to reach the classifier whole

# Short on purpose: on the embedded model the prompt's length and the answer's are most of layer 3's
# time, so the definitions are one line each and the answer is one label (a few tokens), not JSON.
SYSTEM_PROMPT = """Label the user's message to Summer, a career coach in Taiwan. Labels:
- "greeting": only small talk (hello, thanks, bye, who are you, the weather, mood), nothing asked.
- "resume": asks Summer to review, rewrite or write their own resume, CV, 自傳, cover letter or \
104/LinkedIn profile for them, even a single line or bullet, or pastes one.
- "booking": about a session with Summer: book, change, cancel, price, refunds, online or in person, \
how long, what to bring. A meeting with the user's manager, HR or a recruiter is "career".
- "career": any question about work, jobs, interviews, salary, careers, or how to write a resume, \
自傳 or cover letter; a \
short follow-up («那如果是新創呢», "and in Japan?") is "career", never "greeting".
- "offtopic": a request unrelated to work and careers (weather forecast, recipes, code errors, \
homework, poems, jokes, sports, health, pets).
If a message mixes them: booking, then resume, then career, then offtopic, then greeting.
Answer with the label only."""

LABELS = ("greeting", "career", "resume", "booking", "offtopic")

_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S | re.I)


class LLMVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    intent: Literal["greeting", "career", "resume", "booking", "offtopic"]
    confidence: float | None = Field(ge=0.0, le=1.0)


@dataclass(frozen=True)
class Verdict:
    intent: str
    confidence: float | None
    raw: str
    duration_ms: float


@dataclass(frozen=True)
class Failure:
    code: Literal["llm_invalid_json", "llm_error", "llm_timeout"]
    detail: str
    raw: str
    duration_ms: float


_LABEL = re.compile(r'^\W*"?(' + "|".join(LABELS) + r')"?\W*$', re.I)


def parse_verdict(text: str) -> LLMVerdict:
    """Strict: the whole answer is one label (what the prompt asks for; quotes and a full stop around
    it are tolerated, and it carries no confidence: ``confidence`` is then None), or one JSON object of
    the schema (optionally inside a ```json fence; a model that answers in the older JSON form is still
    understood). Raises ``ValueError`` (pydantic's ``ValidationError`` is one) for anything else."""
    body = text.strip()
    label = _LABEL.match(body)
    if label:
        return LLMVerdict(intent=label.group(1).lower(), confidence=None)  # type: ignore[arg-type]
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    return LLMVerdict.model_validate_json(body)


class LLMIntentClassifier:
    # 16 tokens: a label is 1-3 tokens; the room lets a model that still answers in JSON finish it
    def __init__(self, provider: LLMProvider, *, timeout: float = 20.0, max_tokens: int = 16) -> None:
        self.provider = provider
        self.timeout = timeout
        self.max_tokens = max_tokens
        # every call's time (answer, failure or timeout), the latest 1 000: the evaluation's latency figures
        self.calls = 0
        self.durations_ms: deque[float] = deque(maxlen=1000)

    def request(self, message: str) -> CompletionRequest:
        text = message if len(message) <= PROMPT_CHARS else message[:PROMPT_CHARS] + " …"
        return CompletionRequest(
            messages=[ChatMessage("system", SYSTEM_PROMPT), ChatMessage("user", text)],
            max_tokens=self.max_tokens,
            temperature=0.0,
            tool_choice="none",
            metadata={"purpose": "route"},
            # no json_schema: the embedded model's grammar costs more than the label's few tokens and
            # holds only an answer that opens with "{" (docs/routing.md, "Layer 3")
        )

    async def _collect(self, request: CompletionRequest) -> str:
        parts: list[str] = []
        async with contextlib.aclosing(self.provider.stream(request)) as stream:  # type: ignore[type-var]
            async for chunk in stream:
                if chunk.text:
                    parts.append(chunk.text)
        return "".join(parts)

    async def classify(self, message: str) -> Verdict | Failure:
        result = await self._classify(message)
        self.calls += 1
        self.durations_ms.append(result.duration_ms)
        return result

    async def _classify(self, message: str) -> Verdict | Failure:
        started = time.perf_counter()

        def ms() -> float:
            return round(1000 * (time.perf_counter() - started), 2)

        raw = ""
        try:
            async with asyncio.timeout(self.timeout):
                raw = await self._collect(self.request(message))
        except TimeoutError:
            log.warning("routing: the LLM classifier took longer than %.0f s", self.timeout)
            return Failure("llm_timeout", f"no answer within {self.timeout:g} s", raw, ms())
        except LLMError as exc:
            log.warning("routing: the LLM classifier failed: %s", exc)
            return Failure("llm_error", f"{type(exc).__name__}: {exc}", raw, ms())
        try:
            verdict = parse_verdict(raw)
        except (ValidationError, ValueError) as exc:
            log.warning("routing: the LLM classifier's answer is not the JSON asked for: %r", raw[:200])
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            return Failure("llm_invalid_json", first, raw, ms())
        return Verdict(verdict.intent, verdict.confidence, raw, ms())
