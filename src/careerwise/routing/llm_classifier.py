"""Layer 3: the LLM as a classifier, for the messages the cheaper layers are not sure about.

The model must answer with exactly one JSON object ``{"intent": ..., "confidence": ...}`` (a ```json
fence around it is tolerated, nothing else is). Anything else, a provider error or a timeout is a
``Failure`` with a stable code; the cascade turns it into the career fallback, recorded on the
decision. The user never sees an error from routing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from careerwise.errors import LLMError
from careerwise.llm.types import ChatMessage, CompletionRequest, LLMProvider

log = logging.getLogger(__name__)

PROMPT_CHARS = 600  # a pasted resume does not need to reach the classifier whole

SYSTEM_PROMPT = """You route messages sent to Summer, a career coach in Taiwan. Classify the user's \
message into exactly one intent:
- "greeting": only small talk: hello, thanks, goodbye, who are you, what can you do, who made you, \
chit-chat about the weather or the user's mood, personal questions to Summer (what she likes, which \
languages she speaks). A message that asks anything about work or careers is not a greeting.
- "resume": the user wants their own resume, CV, 自傳, cover letter or job-site self-introduction \
(104, 1111, LinkedIn) reviewed, shortened, rewritten or written from scratch, also casually worded, in \
English, or as a single line or bullet to rewrite (including a pasted resume). General questions about \
how to write a resume are "career".
- "booking": anything about a consultation session with Summer: booking, changing or cancelling it, \
its price, rates, discounts, payment, refunds, whether it is online or in person, how long it lasts, \
what to bring or prepare. A meeting with the user's own manager, HR or a recruiter, or a job \
interview, is "career".
- "career": any career question (jobs, interviews, salary, switching careers, workplace problems) \
and anything else. A short follow-up without context («那如果是新創呢», "and in Japan?", 「還有呢」) \
continues a career conversation: "career", never "greeting".
If a message mixes intents, booking wins over resume, resume over career, and greeting only when \
there is nothing else.

Answer with only this JSON object and nothing else:
{"intent": "greeting" | "career" | "resume" | "booking", "confidence": a number from 0 to 1}

Examples:
「嗨嗨，今天第一次來」 -> {"intent": "greeting", "confidence": 0.95}
「幫我看看我寫的自傳」 -> {"intent": "resume", "confidence": 0.95}
「履歷要寫幾頁？」 -> {"intent": "career", "confidence": 0.8}
「下週可以約諮詢嗎」 -> {"intent": "booking", "confidence": 0.95}
「諮詢可以退費嗎」 -> {"intent": "booking", "confidence": 0.9}
"what should I bring to our session?" -> {"intent": "booking", "confidence": 0.9}
「主管明天找我單獨面談，會是要資遣嗎」 -> {"intent": "career", "confidence": 0.85}
「那如果是新創呢」 -> {"intent": "career", "confidence": 0.7}
"should I take the offer?" -> {"intent": "career", "confidence": 0.9}"""

_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S | re.I)


class LLMVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    intent: Literal["greeting", "career", "resume", "booking"]
    confidence: float = Field(ge=0.0, le=1.0)


@dataclass(frozen=True)
class Verdict:
    intent: str
    confidence: float
    raw: str
    duration_ms: float


@dataclass(frozen=True)
class Failure:
    code: Literal["llm_invalid_json", "llm_error", "llm_timeout"]
    detail: str
    raw: str
    duration_ms: float


def parse_verdict(text: str) -> LLMVerdict:
    """Strict: the whole answer is one JSON object of the schema (optionally inside a ```json fence).
    Raises ``ValueError`` (pydantic's ``ValidationError`` is one) for anything else."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    return LLMVerdict.model_validate_json(body)


class LLMIntentClassifier:
    def __init__(self, provider: LLMProvider, *, timeout: float = 20.0, max_tokens: int = 48) -> None:
        self.provider = provider
        self.timeout = timeout
        self.max_tokens = max_tokens

    def request(self, message: str) -> CompletionRequest:
        text = message if len(message) <= PROMPT_CHARS else message[:PROMPT_CHARS] + " …"
        return CompletionRequest(
            messages=[ChatMessage("system", SYSTEM_PROMPT), ChatMessage("user", text)],
            max_tokens=self.max_tokens,
            temperature=0.0,
            tool_choice="none",
            metadata={"purpose": "route"},
        )

    async def _collect(self, request: CompletionRequest) -> str:
        parts: list[str] = []
        async with contextlib.aclosing(self.provider.stream(request)) as stream:  # type: ignore[type-var]
            async for chunk in stream:
                if chunk.text:
                    parts.append(chunk.text)
        return "".join(parts)

    async def classify(self, message: str) -> Verdict | Failure:
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
