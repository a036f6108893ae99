"""Remote providers through the official ``openai`` async client (Groq, OpenAI, Ollama, vLLM, llama.cpp).

The SDK sends the request; the streamed body is read by :mod:`careerwise.llm.sse` and, once the answer
shows, at the pace of :mod:`careerwise.llm.paced_reads`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import ssl
from collections.abc import AsyncIterator, Sequence
from typing import Any, Literal

import aiohttp
import anyio
import httpx
import httpx2
import openai

from careerwise.errors import LLMError, LLMTimeoutError, LLMToolsUnsupportedError, LLMUnavailableError
from careerwise.llm.clean import estimate_tokens, request_text
from careerwise.llm.grammar import TEXT_ONLY, call_or_text
from careerwise.llm.paced_reads import FULL_READ, pause
from careerwise.llm.profile import DEFAULT_PROFILE, ProviderProfile, measured
from careerwise.llm.sse import BodyReader, merge_text
from careerwise.llm.types import CompletionRequest, StreamChunk, Usage
from careerwise.loadwatch import StreamPace
from careerwise.tracing.background import LLM_PROFILE_PROBE, LLM_STREAM_CUT, count_failure

log = logging.getLogger(__name__)

_TOOL_REFUSALS = ("tool", "function")


class StreamCutError(LLMUnavailableError):
    """The server ended our stream without a finish reason while another of our requests had started:
    a server that serves one request at a time and interrupts the running one for a new one (llama.cpp's
    Python server does: it sends ``[DONE]`` early). Retryable: the call is worth making again, alone."""


def is_llama_cpp(models: object, server_header: str) -> bool:
    """Whether a ``GET /models`` answer comes from a llama.cpp server: the C++ ``llama-server`` names
    itself in the ``Server`` header and lists its models as ``owned_by: "llamacpp"``; llama-cpp-python's
    ``python -m llama_cpp.server`` lists them as ``owned_by: "me"`` with an empty ``permissions`` list."""
    if "llama" in server_header.lower():
        return True
    data = models.get("data") if isinstance(models, dict) else None
    for item in data if isinstance(data, list) else []:
        if not isinstance(item, dict):
            continue
        owner = item.get("owned_by")
        if owner == "llamacpp" or (owner == "me" and "permissions" in item):
            return True
    return False


class OpenAIProvider:
    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        connect_timeout: float,
        read_timeout: float,
        stream_usage: bool = True,
        http_client: Literal["aiohttp", "httpx"] = "aiohttp",
        stream_pace: float | StreamPace = 0.0,
        profile: ProviderProfile = DEFAULT_PROFILE,
        measure_speed: bool = True,
        detect_concurrency: bool = False,
        detect_grammar: bool = False,
    ) -> None:
        """``measure_speed``: fold each call's speeds into ``profile`` (not when they are declared).
        ``detect_concurrency``: before the first call, ask ``GET /models`` whether the server is a
        llama.cpp server, which serves one request at a time (not when the concurrency is declared).
        ``detect_grammar``: the same question, for the tool calls: a llama.cpp server's model writes its
        calls as text, so a request that offers tools with ``tool_choice`` auto carries the call-or-text
        grammar (``llm/grammar.py``) and the profile says ``constrained``."""
        self.name = "openai-compatible"
        self.model = model
        self.profile = profile
        self._measure = measure_speed
        self._detect_concurrency = detect_concurrency and profile.concurrency > 1
        self._detect_pending = self._detect_concurrency or detect_grammar
        self._detect_grammar = detect_grammar
        self._grammar = False  # a llama.cpp server that takes the call-or-text grammar
        self._detecting: asyncio.Lock | None = None
        # requests being streamed, and how many were started: a stream cut off while a later one had
        # started was cut by that one (a server serving one request at a time)
        self._inflight = 0
        self._started = 0
        self._idle: tuple[asyncio.AbstractEventLoop, asyncio.Event] | None = None
        self._stream_usage = stream_usage
        # a number is a fixed pace; a StreamPace may rise while the process is behind (loadwatch.py)
        pace = stream_pace if isinstance(stream_pace, StreamPace) else StreamPace(base=stream_pace)
        # Paced reads need a read that returns everything buffered: aiohttp's does (up to 16 KiB); the
        # httpx2 path returns one HTTP chunk a read, so a pace there would fall behind the provider.
        self._pace = pace if http_client == "aiohttp" and pace.base > 0 else None
        if pace.base and self._pace is None:
            log.info("%s: stream pacing needs the aiohttp client; reading every chunk", self.name)
        timeout = openai.Timeout(read_timeout, connect=connect_timeout)
        # The SDK's aiohttp transport (its ``DefaultAioHttpClient``) unless ``http_client="httpx"``: the
        # default httpx2 path reads every streamed chunk through anyio and pure-Python h11, about a third
        # of a streamed turn's CPU in the issue #10 profile; aiohttp's reads are native asyncio with a C
        # parser. Requests, headers, status errors and timeouts stay the SDK's either way.
        transport = openai.DefaultAioHttpClient(timeout=timeout) if http_client == "aiohttp" else None
        # Retries are ours (one layer, never after the first visible token), so the SDK's are off.
        self._client = openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout, http_client=transport
        )

    async def aclose(self) -> None:
        await self._client.close()

    def _body(self, request: CompletionRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [m.to_openai() for m in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if request.tools:
            body["tools"] = [t.to_openai() for t in request.tools]
            body["tool_choice"] = request.tool_choice
            if self._grammar and request.json_schema is None:
                # auto: both branches stay open, the model still chooses between a call and an answer;
                # none (the round after the tools ran): an answer, not another call
                body["grammar"] = (
                    call_or_text([t.name for t in request.tools], tagged=True)
                    if request.tool_choice == "auto"
                    else TEXT_ONLY
                )
        if request.json_schema is not None:
            # OpenAI, llama.cpp's server and vLLM constrain the reply to the schema; the caller still
            # validates the reply, so a server that ignores the field costs at most a retry
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": request.json_schema},
            }
        return body

    # -- concurrency -----------------------------------------------------------------------------

    async def _detect(self) -> None:
        """Once, before the first call: a llama.cpp server gets concurrency 1. A failed probe is logged
        and counted, and tried again at the next call; the call itself goes ahead (it reports its own
        failure if the server is down)."""
        if not self._detect_pending:
            return
        if self._detecting is None:
            self._detecting = asyncio.Lock()
        async with self._detecting:
            if not self._detect_pending:
                return
            try:
                raw = await self._client.models.with_raw_response.list(timeout=5.0)
                body = raw.http_response.json()
                server = raw.http_response.headers.get("server", "")
            except (openai.OpenAIError, httpx.HTTPError, httpx2.HTTPError, ValueError) as exc:
                log.warning("%s: GET /models to tell the server's kind failed: %r", self.name, exc)
                count_failure(LLM_PROFILE_PROBE)
                return
            self._detect_pending = False
            if not is_llama_cpp(body, server):
                return
            if self._detect_concurrency:
                self.profile = dataclasses.replace(self.profile, concurrency=1)
                log.info("%s: a llama.cpp server: one request at a time (concurrency 1)", self.name)
            if self._detect_grammar:
                self._grammar = True
                self.profile = dataclasses.replace(self.profile, tool_calling="constrained")
                log.info(
                    "%s: a llama.cpp server: tool calls constrained by a call-or-text grammar", self.name
                )

    def _idle_event(self) -> asyncio.Event:
        loop = asyncio.get_running_loop()
        if self._idle is None or self._idle[0] is not loop:
            self._idle = (loop, asyncio.Event())
            if self._inflight == 0:
                self._idle[1].set()
        return self._idle[1]

    async def _enter(self) -> int:
        """Wait for a turn (a provider of concurrency 1 runs one request at a time, counting those
        started before it was found to be so) and register the request; returns its sequence number."""
        while self.profile.concurrency <= 1 and self._inflight > 0:
            idle = self._idle_event()
            idle.clear()
            await idle.wait()
        self._inflight += 1
        self._started += 1
        return self._started

    def _leave(self) -> None:
        self._inflight -= 1
        if self._inflight == 0 and self._idle is not None:
            self._idle[1].set()

    def _stream_cut(self) -> None:
        """A stream was cut off by a later request: from now on one request at a time."""
        count_failure(LLM_STREAM_CUT)
        was = self.profile.concurrency
        self.profile = dataclasses.replace(
            self.profile, concurrency=1, stream_cuts=self.profile.stream_cuts + 1
        )
        log.warning(
            "%s: the server cut a stream off when another request started; concurrency %d -> 1",
            self.name,
            was,
        )

    async def stream(self, request: CompletionRequest) -> AsyncIterator[StreamChunk]:
        """One call, at most :attr:`ProviderProfile.concurrency` at a time once the server is known to
        serve one at a time. A call cut off by another (:class:`StreamCutError`) is made once more,
        alone, when it had shown nothing yet; a cut after text was passed on is raised (retryable: a
        deep step makes its call again, ``flows/deep_steps/``)."""
        await self._detect()
        for attempt in (1, 2):
            passed_on = False
            seq = await self._enter()
            try:
                async for chunk in self._stream_once(request, seq):
                    passed_on = True
                    yield chunk
                return
            except StreamCutError:
                if passed_on or attempt == 2:
                    raise
                log.warning("%s: retrying the cut call alone", self.name)
            finally:
                self._leave()

    def _measured(self, request: CompletionRequest, timing: _Timing) -> None:
        if not self._measure or timing.first is None or timing.last is None:
            return
        usage = timing.usage
        prompt = (
            usage.prompt_tokens if usage and usage.prompt_tokens else estimate_tokens(request_text(request))
        )
        written = usage.completion_tokens if usage and usage.completion_tokens else timing.pieces
        self.profile = measured(
            self.profile,
            prompt_tokens=prompt,
            prompt_seconds=timing.first - timing.sent,
            gen_tokens=max(0, written - 1),  # the first token's time is in the prompt's
            gen_seconds=timing.last - timing.first,
        )

    async def _stream_once(self, request: CompletionRequest, seq: int) -> AsyncIterator[StreamChunk]:
        """The request goes through the official SDK (its auth, headers, status errors, timeouts); the
        streamed body is read as raw bytes and parsed here, one ``json.loads`` a chunk. The SDK's own
        stream builds a pydantic model for every chunk, the largest share of a streamed turn's CPU in
        the issue #10 profile (docs/benchmarks.md).

        Once the consumer says the answer's text is showing (``request.pacing``), the body is read at
        most once every ``stream_pace`` seconds and each read's consecutive text chunks are merged, so
        a 20 ms cadence costs one pass of the layers above per pace instead of per chunk
        (docs/decisions/0008-stream-pacing.md). Before that, every chunk is read as it comes. An
        adaptive :class:`StreamPace` lengthens the pace while the event loop is behind (its amendment)."""
        body = self._body(request)
        extra: dict[str, Any] = {}
        if self._stream_usage:
            extra["stream_options"] = {"include_usage": True}
        # A server that ignores max_tokens must not fill our memory or the user's screen: past this many
        # characters the answer ends as if the model had hit its token limit (finish_reason "length").
        reader = BodyReader(self.name, cap=max(16_000, request.max_tokens * 16))
        pace = self._pace
        pacing = request.pacing if pace is not None else None
        timing = _Timing(sent=asyncio.get_running_loop().time())
        try:
            # The body is plain JSON already: as ``extra_body`` the SDK sends it as it is instead of walking
            # it through its typed-parameter transform (about 0.7 ms of loop CPU a call, the same JSON;
            # docs/benchmarks.md, "The fixed work of a turn, part 2"). ``messages=[]`` is overwritten.
            async with self._client.chat.completions.with_streaming_response.create(
                stream=True, model=body.pop("model"), messages=[], extra_body={**body, **extra}
            ) as response:
                loop = asyncio.get_running_loop()
                async for data in response.http_response.aiter_bytes():
                    read_at = loop.time()
                    chunks, error = reader.parse(data)
                    timing.saw(chunks, read_at)
                    for k, chunk in enumerate(chunks):
                        if pacing is not None and pacing.active:  # may turn on while we yield
                            for merged in merge_text(chunks[k:]):
                                yield merged
                            break
                        yield chunk
                    if error is not None:
                        raise error  # after the chunks that came before it: nothing shown is lost
                    if reader.ended:
                        break  # [DONE] or the size cap: the rest of the body, if any, is not read
                    if (
                        pace is not None
                        and pacing is not None
                        and pacing.active
                        and not reader.finished
                        and len(data) < FULL_READ
                    ):
                        seconds = pacing.last_pace = pace.current()  # the base, or more while behind
                        await pause(pacing, read_at + seconds - loop.time(), response.http_response)
            if not reader.finished:
                # every OpenAI-compatible server ends a complete answer with a finish_reason; a stream that
                # stops without one was cut off, and showing it as a complete answer would hide that
                if self._started > seq:
                    self._stream_cut()
                    raise StreamCutError(
                        f"{self.name}: the server cut the stream off when another request started"
                    )
                raise LLMUnavailableError(f"{self.name}: the stream ended without a finish reason (cut off)")
            self._measured(request, timing)
        except json.JSONDecodeError as exc:
            log.warning("%s: a malformed chunk in the stream: %s", self.name, exc)
            raise LLMUnavailableError(f"{self.name}: a malformed chunk in the stream: {exc}") from exc
        except (openai.APITimeoutError, httpx2.TimeoutException, httpx.TimeoutException) as exc:
            refused = _aiohttp_connection_error(exc)
            if refused is not None:
                raise LLMUnavailableError(f"{self.name}: connection failed: {refused}") from exc
            raise LLMTimeoutError(f"{self.name}: no data within the read deadline") from exc
        except openai.APIConnectionError as exc:
            raise LLMUnavailableError(f"{self.name}: connection failed: {exc}") from exc
        except openai.APIStatusError as exc:
            raise _status_error(exc, tools_offered=bool(request.tools)) from exc
        except (
            httpx2.HTTPError,
            httpx.HTTPError,
            aiohttp.ClientError,
            anyio.EndOfStream,
            ssl.SSLError,
        ) as exc:
            # a reset mid-stream surfaces as a raw HTTP error
            raise LLMUnavailableError(f"{self.name}: stream broke: {exc!r}") from exc


@dataclasses.dataclass
class _Timing:
    """When a call was sent, when its first and last pieces of output arrived, how many pieces (a
    llama.cpp server sends a token a chunk) and the usage the server reported, if any."""

    sent: float
    first: float | None = None
    last: float | None = None
    pieces: int = 0
    usage: Usage | None = None

    def saw(self, chunks: Sequence[StreamChunk], at: float) -> None:
        for chunk in chunks:
            if chunk.usage is not None:
                self.usage = chunk.usage
            if chunk.text or chunk.tool_deltas:
                self.pieces += 1
                if self.first is None:
                    self.first = at
                self.last = at


def _aiohttp_connection_error(exc: BaseException) -> aiohttp.ClientConnectionError | None:
    """The SDK's aiohttp transport maps every ``aiohttp.ClientConnectionError`` (refused, reset before the
    answer) to a *connect timeout*; the httpx2 path calls those connection errors. The cause chain tells
    them apart, so the user sees "unavailable", not "timed out", whichever transport runs."""
    seen: BaseException | None = exc
    for _ in range(8):  # the SDK error -> the httpx2 error -> the aiohttp error
        if seen is None:
            return None
        if isinstance(seen, aiohttp.ClientConnectionError) and not isinstance(
            seen, aiohttp.ServerTimeoutError
        ):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _status_error(exc: openai.APIStatusError, *, tools_offered: bool) -> LLMError:
    status = exc.status_code
    text = str(exc.message).lower()
    if tools_offered and status in (400, 422) and any(w in text for w in _TOOL_REFUSALS):
        return LLMToolsUnsupportedError(f"provider refused tools: {exc.message}")
    if status == 429 or status >= 500:
        return LLMUnavailableError(f"provider answered {status}: {exc.message}")
    err = LLMError(f"provider answered {status}: {exc.message}")
    err.retryable = False
    return err
