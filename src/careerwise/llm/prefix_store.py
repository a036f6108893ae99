"""The embedded model's evaluated prompt prefix, kept on disk so a new process does not read it again.

Every career answer starts with the same first system turn (the tool descriptions and the persona),
several hundred tokens that take the embedded model seconds to read on a small CPU. Within a
process llama.cpp's KV cache keeps them between requests (``local.prefill.prefill``); across processes (a
``careerwise chat``, a restart, each of ``serve --workers N``) this store keeps llama.cpp's state after
those tokens in ``data/cache/prefix-<digest>.state``, named by the model file and the exact tokens, so a
different persona, date or model never loads another's state. Files are written under a temporary name
and renamed into place; a file that fails to load is deleted and the prefix read again. Only the newest
:data:`KEEP` files are kept.

All methods run on the model's own thread (``LocalProvider`` owns the llama context there).
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from llama_cpp import Llama

log = logging.getLogger(__name__)
KEEP = 8


class PrefixStore:
    def __init__(self, directory: Path, model_id: str) -> None:
        self.directory = Path(directory)
        self.model_id = model_id
        self.loads = 0
        self.saves = 0

    def path_for(self, tokens: Sequence[int]) -> Path:
        digest = hashlib.sha256(self.model_id.encode())
        digest.update(",".join(map(str, tokens)).encode())
        return self.directory / f"prefix-{digest.hexdigest()[:24]}.state"

    def load(self, llm: Llama, tokens: Sequence[int]) -> bool:
        """Put the saved state after ``tokens`` into ``llm``; True if it is there now."""
        import llama_cpp

        path = self.path_for(tokens)
        if not path.is_file():
            return False
        capacity = len(tokens) + 8
        out = (llama_cpp.llama_token * capacity)()
        count = ctypes.c_size_t(0)
        ok = llama_cpp.llama_state_load_file(llm.ctx, str(path).encode(), out, capacity, ctypes.byref(count))
        if not ok or list(out[: count.value]) != list(tokens):
            log.warning(
                "local model: the saved prompt prefix %s did not load; reading the prefix again", path
            )
            path.unlink(missing_ok=True)
            llm.n_tokens = 0  # nothing of the failed load is trusted; the next eval starts from zero
            return False
        llm.input_ids[: len(tokens)] = tokens
        llm.n_tokens = len(tokens)
        self.loads += 1
        return True

    def save(self, llm: Llama, tokens: Sequence[int]) -> None:
        """Save ``llm``'s state, which must hold exactly ``tokens`` evaluated. A failure is logged: the
        next process reads the prefix itself, as it would without a store."""
        import llama_cpp

        path = self.path_for(tokens)
        if path.is_file():
            return
        tmp = ""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".prefix-", suffix=".tmp")
            os.close(fd)
            array = (llama_cpp.llama_token * len(tokens))(*tokens)
            if not llama_cpp.llama_state_save_file(llm.ctx, tmp.encode(), array, len(tokens)):
                raise OSError("llama_state_save_file returned false")
            os.replace(tmp, path)
            self.saves += 1
        except OSError as exc:
            log.warning("local model: could not save the prompt prefix to %s: %s", path, exc)
            if tmp:
                Path(tmp).unlink(missing_ok=True)
            return
        self._prune()

    def _prune(self) -> None:
        files = sorted(self.directory.glob("prefix-*.state"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in files[KEEP:]:
            old.unlink(missing_ok=True)
