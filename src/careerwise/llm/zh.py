"""Chinese output in Traditional characters with Taiwan vocabulary, for every provider.

OpenCC's ``s2twp`` converts Simplified text to Taiwan standard with Taiwan phrases (软件 -> 軟體). Text that is
already in Traditional characters but uses mainland words (項目, 數據庫, 信息) is first taken to Simplified
(``t2s``) so that the same phrase table applies. :class:`ZhStreamConverter` does this while streaming,
holding back a few trailing Han characters so a phrase cut between two chunks converts as a whole.
"""

from __future__ import annotations

import functools
import logging
import re
import subprocess
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from careerwise.tracing import background

log = logging.getLogger(__name__)

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def _is_han(ch: str) -> bool:
    return bool(_HAN.match(ch))


class ZhStreamConverter:
    """Convert streamed text to zh-TW piece by piece without cutting phrases.

    OpenCC converts phrases (软件 -> 軟體, 数据库 -> 資料庫), so a phrase cut between two chunks would convert
    differently. Of a trailing run of Han characters (and curly quotes, which become 「」 next to Chinese),
    only the part that a later character could still join to a phrase is held: with a
    :class:`TaiwanConverter`, the characters from the first place where the run's rest begins a longer
    phrase of OpenCC's tables (for any other converter, the whole run). The held part goes when a
    character that cannot be inside a phrase (punctuation, a space, Latin text) arrives, or at the end; a
    held part longer than ``max_run`` is let go but for its last ``holdback`` characters, so text is shown
    at most ``max_run`` characters late (a phrase across that cut may convert piecewise). Text without Han
    characters passes through unconverted, but for its curly quotes once the stream has had Chinese.
    """

    def __init__(self, convert: Callable[[str], str], holdback: int = 3, max_run: int = 6) -> None:
        self._convert = convert
        self._open_tail = convert.open_tail if isinstance(convert, TaiwanConverter) else len
        self._holdback = holdback
        self._max_run = max_run
        self._pending = ""
        self._had_han = False

    def feed(self, text: str) -> str:
        self._pending += text
        start = len(self._pending)
        while start > 0 and _joins(self._pending[start - 1]):
            start -= 1
        run = self._pending[start:]
        held = self._open_tail(run) if run else 0
        while held < len(run) and run[-held - 1] in _CURLY:
            held += 1  # a curly quote is converted together with the text after it
        if held > self._max_run:
            held = self._holdback
        cut = len(self._pending) - held
        ready, self._pending = self._pending[:cut], self._pending[cut:]
        return self._apply(ready)

    def flush(self) -> str:
        ready, self._pending = self._pending, ""
        return self._apply(ready)

    def _apply(self, text: str) -> str:
        if not text:
            return text
        if not _HAN.search(text):
            return text.translate(_QUOTES) if self._had_han else text
        self._had_han = True
        return self._convert(text)


def _joins(ch: str) -> bool:
    """Whether ``ch`` may be part of a phrase that converts as a whole."""
    return ch in _CURLY or _is_han(ch)


# Curly quotes around Chinese text are mainland typography; Taiwan writes 「」 and 『』.
_CURLY = "\u201c\u201d\u2018\u2019"
_QUOTES = str.maketrans(dict(zip(_CURLY, "「」『』", strict=True)))


class TaiwanConverter:
    """Any Chinese text to Taiwan standard characters and vocabulary, with OpenCC.

    ``t2s`` first, so that mainland words already written in Traditional characters (項目, 數據庫) reach
    ``s2twp``'s phrase table as the Simplified phrases it knows (项目 -> 專案, 数据库 -> 資料庫); text that is
    Taiwan usage already comes back unchanged. Curly quotes become 「」 in text that contains Han characters.
    """

    def __init__(self) -> None:
        import opencc

        self._to_simplified = opencc.OpenCC("t2s")
        self._to_taiwan = opencc.OpenCC("s2twp")
        self._phrases = _phrase_table()  # read in a thread: start-up does not wait for it

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Wait for the phrase tables; whether they were read."""
        return self._phrases.result(timeout) is not None

    def __call__(self, text: str) -> str:
        out = str(self._to_taiwan.convert(self._to_simplified.convert(text)))
        # s2twp writes the formal 臺 for 台 (台灣 -> 臺灣); everyday Taiwanese usage, and our own prompts, use 台.
        out = out.replace("臺", "台")
        return out.translate(_QUOTES) if _HAN.search(out) else out

    def open_tail(self, run: str) -> int:
        """How many trailing characters of ``run`` a later character could still join to a phrase.

        The run is read in Simplified form, the form every table's phrases are indexed in here, from the
        left by longest phrase, as OpenCC segments it; the tail starts where the rest of the run begins a
        longer phrase. Without the tables (or when the Simplified form differs in length) it is the whole
        run, which is always safe."""
        table = self._phrases.result() if self._phrases.done() else None
        if table is None:
            return len(run)
        simple = str(self._to_simplified.convert(run))
        if len(simple) != len(run):
            return len(run)
        return table.open_tail(simple)


def opencc_converter() -> TaiwanConverter:
    """A converter of its own (OpenCC's objects are not shared between threads); the phrase tables are
    read once per process."""
    return TaiwanConverter()


class _PhraseTable:
    """The phrases of the OpenCC tables that ``t2s`` and ``s2twp`` apply, in Simplified form."""

    def __init__(self, phrases: set[str]) -> None:
        self._phrases = phrases
        self._starts = {p[:i] for p in phrases for i in range(1, len(p))}
        self._longest = max(map(len, phrases), default=1)

    def open_tail(self, text: str) -> int:
        n, at = len(text), 0
        while at < n:
            if text[at:] in self._starts:
                return n - at
            step = 1
            for size in range(min(self._longest, n - at), 1, -1):
                if text[at : at + size] in self._phrases:
                    step = size
                    break
            at += step
        return 0


# the phrase tables of t2s (TSPhrases) and s2twp (its segmentation's and its two conversions')
_TABLES = (
    "TSPhrases",
    "STPhrases",
    "STPhrases_GeneratedFromRegionalPhrases",
    "TWPhrases",
    "TWVariantsPhrases",
)


@functools.cache
def _phrase_table() -> Future[_PhraseTable | None]:
    """The phrase tables, read once per process in a thread of their own."""
    future: Future[_PhraseTable | None] = Future()

    def read() -> None:
        try:
            future.set_result(_read_phrase_table())
        except Exception:
            log.exception("zh: reading OpenCC's phrase tables failed; Han runs are held whole")
            background.count_failure(background.ZH_PHRASES)
            future.set_result(None)

    threading.Thread(target=read, name="opencc-phrases", daemon=True).start()
    return future


def _read_phrase_table() -> _PhraseTable | None:
    """Read OpenCC's binary tables through the ``opencc_dict`` tool its package ships.

    Without them the stream converter holds every Han run whole (slower to show, never wrong), which is
    logged and counted."""
    import opencc

    root = Path(opencc.__file__).parent / "clib"
    tool = root / "bin" / "opencc_dict"
    keys: list[str] = []
    try:
        with tempfile.TemporaryDirectory(prefix="cw-opencc-") as tmp:
            for name in _TABLES:
                out = Path(tmp) / f"{name}.txt"
                subprocess.run(
                    [str(tool), "-i", str(root / "share" / "opencc" / f"{name}.ocd2"), "-o", str(out),
                     "-f", "ocd2", "-t", "text"],
                    check=True, capture_output=True, timeout=60,
                )  # fmt: skip
                keys += [line.split("\t", 1)[0] for line in out.read_text("utf-8").splitlines() if line]
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("zh: OpenCC's phrase tables could not be read (%s); Han runs are held whole", exc)
        background.count_failure(background.ZH_PHRASES)
        return None
    simple = str(opencc.OpenCC("t2s").convert("\n".join(keys))).split("\n")
    phrases = {s for k, s in zip(keys, simple, strict=True) if len(s) == len(k) and len(s) > 1}
    return _PhraseTable(phrases)


def convert_args(value: Any, convert: Callable[[str], str]) -> Any:
    """Convert the Han text inside tool arguments (a Simplified query searches a zh-TW corpus badly)."""
    if isinstance(value, str):
        return convert(value) if _HAN.search(value) else value
    if isinstance(value, dict):
        return {k: convert_args(v, convert) for k, v in value.items()}
    if isinstance(value, list):
        return [convert_args(v, convert) for v in value]
    return value
