"""The embedded model as an LLM provider: :class:`LocalProvider` loads the weights on demand, renders the
request (``chatml``), and generates on one dedicated thread, turning the model's text into text chunks or
tool calls as it streams.

The first non-whitespace characters of the output decide: ``{``, a ````` fence or ``<tool_call>`` are held
until the JSON object is complete and parsed; anything else streams to the caller token by token.

Runtime: one model, one request at a time (an asyncio.Lock), all llama.cpp work on one dedicated thread;
tokens come back through an asyncio queue, and a stop flag checked per token (and between 64-token slices
of prompt evaluation) ends generation within one step when the consumer goes away.
"""

from __future__ import annotations

import asyncio
import codecs
import concurrent.futures
import json
import logging
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from careerwise.errors import LLMError, LLMUnavailableError
from careerwise.llm.grammar import call_opening, call_or_text, call_rest
from careerwise.llm.local.branch import branch_share, open_text
from careerwise.llm.local.calls import finish_call
from careerwise.llm.local.chatml import IM_END, IM_START, first_turn_len, render_prompt
from careerwise.llm.local.lookup import PromptLookup, drafting
from careerwise.llm.local.prefill import prefill
from careerwise.llm.local.weights import _import_llama, _model_id, _model_params, _unavailable
from careerwise.llm.prefix_store import PrefixStore
from careerwise.llm.profile import SLOW_PASSAGE_BUDGET, ProviderProfile, measured
from careerwise.llm.textcalls import Suppressed, TextOut, ToolCallDetector, ToolOut, call_delta
from careerwise.llm.types import CompletionRequest, StreamChunk, Usage
from careerwise.llm.zh import ZhStreamConverter, convert_args, opencc_converter

if TYPE_CHECKING:
    from llama_cpp import Llama
    from llama_cpp.llama_grammar import LlamaGrammar

# the package's one logger: operators and tests select the embedded model's records by this name
log = logging.getLogger("careerwise.llm.local")

# the embedded model on a CPU: tool calls written as text, a few hundred tokens of passages, slow, one
# request at a time; its speeds are measured from its own calls (LocalProvider._measure)
LOCAL_PROFILE = ProviderProfile(
    tool_calling="constrained", passage_budget_tokens=SLOW_PASSAGE_BUDGET, slow=True, concurrency=1
)

# Qwen2.5 recommended sampling (generation_config.json); temperature comes from the request.
_SAMPLING: dict[str, Any] = {"top_p": 0.8, "top_k": 20, "min_p": 0.0, "repeat_penalty": 1.05}
# the most tokens a call's arguments may take after its opening (a query is a few words)
_CALL_TOKENS = 96


@dataclass(frozen=True)
class _Done:
    """Sentinel from the worker thread: generation ended (see the future for the result or error)."""


@dataclass(frozen=True)
class _GenResult:
    finish_reason: str
    completion_tokens: int
    # the model thread's own timing of llama.cpp's work: prompt tokens evaluated (those not already in
    # the KV cache) and the seconds it took; the seconds the generation loop took
    prompt_evaluated: int = 0
    prompt_seconds: float = 0.0
    gen_seconds: float = 0.0
    call_share: float | None = None  # with a grammar: the call branch's share at the first token


class LocalProvider:
    """The embedded model as an :class:`~careerwise.llm.types.LLMProvider` (one request at a time)."""

    def __init__(
        self,
        *,
        model_path: Path,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        convert_zh: bool = True,
        repack_weights: bool = True,
        profile: ProviderProfile = LOCAL_PROFILE,
        prefix_dir: Path | None = None,
        decision_temperature: float = 0.0,
        call_threshold: float = 0.0,
        measure_speed: bool = True,
        prompt_lookup: bool = True,
    ) -> None:
        """``prefix_dir``: where the evaluated first system turn is kept between processes
        (``prefix_store``); None keeps it only in this process's KV cache. ``decision_temperature``: the
        temperature of the first token when a grammar holds it to a call or text (0: the model's most
        likely branch); a call keeps it to its end, text goes on at the request's temperature.
        ``call_threshold``: decide by the branches' probability instead: a call when the model gives the
        tokens that open one at least this share of the probability of all tokens that may open either
        branch (0: the first token is sampled as above).
        ``measure_speed``: fold each generation's reading and writing speeds into ``profile``.
        ``prompt_lookup``: let a generation without a grammar check drafts copied from the request's own
        turns (``lookup``): sampled the same way, in fewer single-token steps where it quotes the passages."""
        self.name = "local"
        self.model = Path(model_path).stem
        self.profile = profile
        self._measure = measure_speed
        self._lookup = prompt_lookup
        self._model_path = Path(model_path)
        self._n_ctx = n_ctx
        self._repack_weights = repack_weights
        self._n_threads = n_threads if n_threads is not None else max(os.cpu_count() or 1, 1)
        self._convert_zh = convert_zh
        self._llm: Llama | None = None
        self._stop_ids: frozenset[int] = frozenset()
        self._zh: Callable[[str], str] | None = None
        self._load_lock = asyncio.Lock()
        self._loading: asyncio.Future[Llama] | None = None
        self._busy = asyncio.Lock()
        # One thread owns the model: loading, generation and closing run there in order, so a generation
        # that is still winding down after its consumer left can never overlap the next one.
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="local-llm")
        self._current_stop: threading.Event | None = None
        self._closed = False
        self.load_error: str | None = None  # why the last load failed (/readyz shows it)
        self._constrain = profile.tool_calling == "constrained"
        self._decision_temperature = decision_temperature
        self._call_threshold = call_threshold or None
        self._grammar_masked: tuple[int, ...] = ()
        self._grammars: dict[tuple[str, ...], LlamaGrammar] = {}
        self._prefix_store = (
            PrefixStore(prefix_dir, model_id=_model_id(self._model_path)) if prefix_dir is not None else None
        )

    # -- lifecycle -------------------------------------------------------------------------------

    @property
    def loaded(self) -> bool:
        """Whether the weights are in memory (``/readyz`` reports it; the first request loads them)."""
        return self._llm is not None

    async def warm(self) -> None:
        """Load the model now instead of on the first request (takes seconds)."""
        await self._ensure_loaded()

    async def _ensure_loaded(self) -> Llama:
        if self._closed:
            raise _unavailable("local model provider is closed")
        if self._llm is not None:
            return self._llm
        async with self._load_lock:
            if self._llm is None:
                if self._loading is None:
                    loop = asyncio.get_running_loop()
                    self._loading = loop.run_in_executor(self._executor, self._load_blocking)
                loading = self._loading
                try:
                    # Shielded: a caller cancelled mid-load must not waste the load; the next caller gets it.
                    llm = await asyncio.shield(loading)
                except LLMError as exc:
                    self.load_error = str(exc)
                    raise
                finally:
                    if loading.done():
                        self._loading = None  # loaded, or failed: a later call tries again (file fixed?)
                if self._convert_zh and self._zh is None:
                    self._zh = opencc_converter()
                self._llm = llm
                self.load_error = None
            return self._llm

    def _load_blocking(self) -> Llama:
        if not self._model_path.is_file():
            raise _unavailable(f"local model file not found: {self._model_path}")
        llama_cls = _import_llama()
        try:
            with _model_params(repack_weights=self._repack_weights):
                llm = llama_cls(
                    model_path=str(self._model_path),
                    n_ctx=self._n_ctx,
                    n_threads=self._n_threads,
                    n_threads_batch=self._n_threads,
                    verbose=False,
                )
        except (ValueError, RuntimeError, OSError) as exc:  # llama-cpp raises ValueError on a bad file
            raise _unavailable(f"could not load the local model {self._model_path}: {exc}") from exc
        # End of turn: the GGUF's EOS plus the ChatML markers (a new <|im_start|> means the turn is over too).
        stop_ids = {llm.token_eos()}
        for marker in (IM_END, IM_START, "<|endoftext|>"):
            ids = llm.tokenize(marker.encode(), add_bos=False, special=True)
            if len(ids) == 1:
                stop_ids.add(ids[0])
        self._stop_ids = frozenset(stop_ids)
        # stop tokens llama.cpp does not count as the end of generation: a grammar lets such a token
        # through at any point (its text is empty), which would cut a call off mid-string
        import llama_cpp

        vocab = llama_cpp.llama_model_get_vocab(llm.model)
        self._grammar_masked = tuple(t for t in stop_ids if not llama_cpp.llama_vocab_is_eog(vocab, t))
        return llm

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._current_stop is not None:
            self._current_stop.set()
        llm, self._llm = self._llm, None
        loop = asyncio.get_running_loop()
        if llm is not None:
            await loop.run_in_executor(self._executor, llm.close)  # queued after any running generation
        self._executor.shutdown(wait=False)

    # -- streaming -------------------------------------------------------------------------------

    async def stream(self, request: CompletionRequest) -> AsyncIterator[StreamChunk]:
        llm = await self._ensure_loaded()
        allow_calls = bool(request.tools) and request.tool_choice != "none"
        prompt = render_prompt(request.messages, request.tools, allow_calls=allow_calls)
        detector = ToolCallDetector([t.name for t in request.tools], enabled=allow_calls)
        zh = ZhStreamConverter(self._zh) if self._zh is not None else None

        async with self._busy:
            prompt_tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
            prefix_len = self._prefix_len(llm, prompt, prompt_tokens)
            # drafts come from the request's own turns, after the fixed system turn (already measured
            # when the prefix store is on)
            own_turns = (prefix_len or first_turn_len(llm, prompt, prompt_tokens)) if self._lookup else None
            budget = self._n_ctx - len(prompt_tokens)
            if budget < 1:
                err = LLMError(
                    f"local model: the prompt has {len(prompt_tokens)} tokens, the context only {self._n_ctx}"
                )
                err.retryable = False
                raise err
            max_tokens = min(request.max_tokens, budget)

            loop = asyncio.get_running_loop()
            queue: asyncio.Queue[str | _Done] = asyncio.Queue()
            stop = threading.Event()
            self._current_stop = stop

            def emit(item: str | _Done) -> None:
                try:
                    loop.call_soon_threadsafe(queue.put_nowait, item)
                except RuntimeError:  # the event loop is gone: nobody is listening any more
                    stop.set()

            job = loop.run_in_executor(
                self._executor,
                self._generate_blocking,
                llm,
                list(prompt_tokens),
                prefix_len,
                max_tokens,
                request.temperature,
                self._grammar_for(request, allow_calls=allow_calls),
                stop,
                emit,
                self._opening_for(request, allow_calls=allow_calls),
                own_turns,
                # the answer round of a constrained profile: tools are described but may not be called
                self._constrain and bool(request.tools) and not allow_calls and request.json_schema is None,
            )
            finished = False
            tool_called = False
            try:
                while True:
                    item = await queue.get()
                    if isinstance(item, _Done):
                        break
                    for event in detector.feed(item):
                        if isinstance(event, TextOut):
                            visible = zh.feed(event.text) if zh is not None else event.text
                            if visible:
                                yield StreamChunk(text=visible)
                        else:
                            stop.set()  # the call (or machinery) is complete: do not generate the rest
                            chunk = self._tool_chunk(event)
                            if chunk is not None:
                                tool_called = True
                                yield chunk
                try:
                    result = await job
                except (RuntimeError, ValueError, OSError) as exc:
                    raise LLMUnavailableError(f"local model failed while generating: {exc}") from exc
                if not tool_called:
                    for event in detector.finish():
                        if isinstance(event, TextOut):
                            visible = zh.feed(event.text) if zh is not None else event.text
                            if visible:
                                yield StreamChunk(text=visible)
                        else:
                            chunk = self._tool_chunk(event)
                            if chunk is not None:
                                tool_called = True
                                yield chunk
                if zh is not None and not detector.done:
                    tail = zh.flush()
                    if tail:
                        yield StreamChunk(text=tail)
                finished = True
                if self._measure:
                    self.profile = measured(
                        self.profile,
                        prompt_tokens=result.prompt_evaluated,
                        prompt_seconds=result.prompt_seconds,
                        gen_tokens=result.completion_tokens,
                        gen_seconds=result.gen_seconds,
                    )
                yield StreamChunk(
                    usage=Usage(prompt_tokens=len(prompt_tokens), completion_tokens=result.completion_tokens),
                    finish_reason="tool_calls" if tool_called else result.finish_reason,
                )
            finally:
                stop.set()  # checked before every token: an abandoned stream stops within one token
                if self._current_stop is stop:
                    self._current_stop = None
                if not finished:
                    job.add_done_callback(_log_abandoned_failure)

    def _tool_chunk(self, event: ToolOut | Suppressed) -> StreamChunk | None:
        convert = self._zh
        delta = call_delta(event, (lambda a: convert_args(a, convert)) if convert is not None else None)
        return StreamChunk(tool_deltas=(delta,)) if delta is not None else None

    def _grammar_for(self, request: CompletionRequest, *, allow_calls: bool) -> LlamaGrammar | None:
        """The grammar this request samples under: a call or text when tools are offered (constrained
        profile), else the request's JSON schema as a grammar (its reply is then that JSON by
        construction: the first token is ``{``, so the call-or-text switch never fires), else none."""
        if allow_calls:
            return self._grammar([t.name for t in request.tools]) if self._constrain else None
        if request.json_schema is None:
            return None
        from llama_cpp.llama_grammar import LlamaGrammar

        key = ("json_schema", json.dumps(request.json_schema, sort_keys=True, ensure_ascii=False))
        if key not in self._grammars:
            self._grammars[key] = LlamaGrammar.from_json_schema(key[1], verbose=False)
        return self._grammars[key]

    def _opening_for(self, request: CompletionRequest, *, allow_calls: bool) -> str | None:
        """What a call must begin with, where the call-or-text grammar leaves it only one way to go up to
        its first argument's value (``grammar.call_opening``); None without the grammar."""
        if not (allow_calls and self._constrain):
            return None
        return call_opening([(t.name, t.parameters) for t in request.tools])

    def _grammar(self, names: list[str]) -> LlamaGrammar:
        from llama_cpp.llama_grammar import LlamaGrammar

        key = tuple(names)
        if key not in self._grammars:
            self._grammars[key] = LlamaGrammar.from_string(call_or_text(names), verbose=False)
        return self._grammars[key]

    def _prefix_len(self, llm: Llama, prompt: str, tokens: Sequence[int]) -> int:
        """How many of ``tokens`` make the prompt's first system turn (the part the prefix store keeps);
        0 without a store, or when the turn's tokens are not a prefix of the whole prompt's."""
        if self._prefix_store is None:
            return 0
        return first_turn_len(llm, prompt, tokens)

    def _generate_blocking(
        self,
        llm: Llama,
        prompt_tokens: list[int],
        prefix_len: int,
        max_tokens: int,
        temperature: float,
        grammar: LlamaGrammar | None,
        stop: threading.Event,
        emit: Callable[[str | _Done], None],
        opening: str | None = None,
        lookup_from: int | None = None,
        text_only: bool = False,
    ) -> _GenResult:
        """Runs on the model thread: sample token by token, push decoded text, honour ``stop``. With a
        ``grammar`` (a call or text, ``llm/grammar.py``) the first token picks the branch: a call keeps
        the grammar to its end, text drops it after that first token. With an ``opening`` (what the call
        must begin with), a call is finished by ``calls.finish_call`` instead. With ``lookup_from`` and no
        grammar, drafts copied from the prompt's tokens from that index on are checked in batches
        (``lookup``); every token is sampled as it would be without them. With ``text_only`` (tools described but
        ``tool_choice`` "none"), the first token is one that opens text, as the grammar's text branch
        defines it: the answer round cannot open with a call that would be refused and asked again."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        generated = 0
        first_call = False
        finish_reason = "length"
        try:
            started = time.perf_counter()
            counted: list[int] = []
            if not prefill(
                llm, prompt_tokens, stop, prefix_len=prefix_len, store=self._prefix_store, evaluated=counted
            ):
                return _GenResult("stop", 0)
            prompt_seconds = time.perf_counter() - started
            evaluated = sum(counted)
            # with a grammar the first token is the model's choice between a call and an answer: taken at
            # the decision temperature (its most likely branch at 0), the rest at the request's
            from llama_cpp import LogitsProcessorList

            first_temp = self._decision_temperature if grammar is not None else temperature
            masked = list(self._grammar_masked) if grammar is not None else []
            shares: list[float] = []
            opened: list[float] = []  # with text_only: the share a call had at the first token

            def first_token(_ids: Any, scores: Any) -> Any:
                if masked:
                    scores[masked] = -np.inf
                if grammar is not None and not shares:  # the first token: the choice of a branch
                    share, calls, texts = branch_share(llm, scores)
                    shares.append(share)
                    if self._call_threshold is not None:
                        shut = texts if share >= self._call_threshold else calls
                        scores[shut] = -np.inf
                if text_only and not opened:  # the first token of an answer round opens text
                    opened.append(open_text(llm, scores))
                return scores

            with_processor = grammar is not None or masked or text_only
            processors = LogitsProcessorList([first_token]) if with_processor else None
            gen_started = time.perf_counter()
            draft = PromptLookup(lookup_from) if lookup_from is not None and grammar is None else None
            # the block evaluates at most the prompt, max_tokens written and one draft beyond the last
            reach = len(prompt_tokens) + max_tokens + (draft.draft_tokens if draft is not None else 0)
            with drafting(llm, draft, last_position=reach):
                tokens = llm.generate(
                    prompt_tokens, temp=first_temp, grammar=grammar, logits_processor=processors, **_SAMPLING
                )
                try:
                    while True:
                        token = next(tokens)
                        if stop.is_set():
                            finish_reason = "stop"
                            break
                        if token in self._stop_ids:
                            finish_reason = "stop"
                            break
                        generated += 1
                        raw = llm.detokenize([token], special=False)
                        piece = decoder.decode(raw)
                        if piece:
                            emit(piece)
                        if generated >= max_tokens:
                            break
                        if generated == 1:
                            first_call = raw.startswith(b"{")
                            if first_call and opening is not None and opening.startswith(piece):
                                tokens.close()
                                reason, more = finish_call(
                                    llm, [*prompt_tokens, token], opening[len(piece) :], temperature=first_temp,
                                    budget=min(max_tokens - generated, _CALL_TOKENS), stop=stop,
                                    stop_ids=self._stop_ids, grammars=(None, self._rest_grammar()),
                                    sampling=_SAMPLING, emit=emit,
                                )  # fmt: skip
                                finish_reason, generated = reason, generated + more
                                break
                        if grammar is not None and generated == 1 and not raw.startswith(b"{"):
                            # the text branch: the rest is free, so the grammar's per-token cost ends here; the
                            # new generator finds the prompt in the KV cache and reads just this token
                            tokens.close()
                            tokens = llm.generate([*prompt_tokens, token], temp=temperature, **_SAMPLING)
                finally:
                    tokens.close()
            gen_seconds = time.perf_counter() - gen_started
            tail = decoder.decode(b"", final=True)
            if tail:
                emit(tail)
            share = shares[0] if shares else None
            if share is not None:
                log.info("local: first token %s; the call branch had %.2f of the choice",
                         "began a call" if first_call else "began text", share)  # fmt: skip
            if opened and opened[0] >= 0.5:
                log.info("local: the answer round opened text where a call had %.2f of the choice", opened[0])
            return _GenResult(finish_reason, generated, evaluated, prompt_seconds, gen_seconds, share)
        finally:
            emit(_Done())

    def _rest_grammar(self) -> LlamaGrammar:
        from llama_cpp.llama_grammar import LlamaGrammar

        key = ("call_rest",)
        if key not in self._grammars:
            self._grammars[key] = LlamaGrammar.from_string(call_rest(), verbose=False)
        return self._grammars[key]


def _log_abandoned_failure(fut: asyncio.Future[_GenResult]) -> None:
    """A stream was abandoned mid-generation; surface a late failure in the log instead of dropping it."""
    if fut.cancelled():
        return
    exc = fut.exception()
    if exc is not None:
        log.warning("local generation failed after its consumer left: %r", exc)
