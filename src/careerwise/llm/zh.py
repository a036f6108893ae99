"""Chinese output in Traditional characters with Taiwan vocabulary, for every provider.

OpenCC's ``s2twp`` converts Simplified text to Taiwan standard with Taiwan phrases (软件 -> 軟體). Text that is
already in Traditional characters but uses mainland words (項目, 數據庫, 信息) is first taken to Simplified
(``t2s``) so that the same phrase table applies. :class:`ZhStreamConverter` does this while streaming,
holding back a few trailing Han characters so a phrase cut between two chunks converts as a whole.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def _is_han(ch: str) -> bool:
    return bool(_HAN.match(ch))


class ZhStreamConverter:
    """Convert streamed text to zh-TW piece by piece without cutting phrases.

    OpenCC converts phrases (软件 -> 軟體, 数据库 -> 資料庫), so a phrase cut between two chunks would convert
    differently. A trailing run of Han characters (and curly quotes, which become 「」 next to Chinese) is
    held until a character that cannot be inside a phrase (punctuation, a space, Latin text) arrives, or
    the end; a run longer than ``max_run`` is let go but for its last ``holdback`` characters, so a long
    unpunctuated run is shown at most ``max_run`` characters late (a phrase across that cut may convert
    piecewise). Text without Han characters passes through unconverted.
    """

    def __init__(self, convert: Callable[[str], str], holdback: int = 3, max_run: int = 6) -> None:
        self._convert = convert
        self._holdback = holdback
        self._max_run = max_run
        self._pending = ""

    def feed(self, text: str) -> str:
        self._pending += text
        cut = len(self._pending)
        while cut > 0 and _joins(self._pending[cut - 1]):
            cut -= 1
        if len(self._pending) - cut > self._max_run:
            cut = len(self._pending) - self._holdback
        ready, self._pending = self._pending[:cut], self._pending[cut:]
        return self._apply(ready)

    def flush(self) -> str:
        ready, self._pending = self._pending, ""
        return self._apply(ready)

    def _apply(self, text: str) -> str:
        if not text or not _HAN.search(text):
            return text
        return self._convert(text)


def _joins(ch: str) -> bool:
    """Whether ``ch`` may be part of a phrase that converts as a whole."""
    return ch in _CURLY or _is_han(ch)


# Curly quotes around Chinese text are mainland typography; Taiwan writes 「」 and 『』.
_CURLY = "\u201c\u201d\u2018\u2019"
_QUOTES = str.maketrans(dict(zip(_CURLY, "「」『』", strict=True)))


def opencc_converter() -> Callable[[str], str]:
    """Any Chinese text to Taiwan standard characters and vocabulary.

    ``t2s`` first, so that mainland words already written in Traditional characters (項目, 數據庫) reach
    ``s2twp``'s phrase table as the Simplified phrases it knows (项目 -> 專案, 数据库 -> 資料庫); text that is
    Taiwan usage already comes back unchanged. Curly quotes become 「」 in text that contains Han characters.
    """
    import opencc

    to_simplified = opencc.OpenCC("t2s")
    to_taiwan = opencc.OpenCC("s2twp")

    def convert(text: str) -> str:
        out = str(to_taiwan.convert(to_simplified.convert(text)))
        # s2twp writes the formal 臺 for 台 (台灣 -> 臺灣); everyday Taiwanese usage, and our own prompts, use 台.
        out = out.replace("臺", "台")
        return out.translate(_QUOTES) if _HAN.search(out) else out

    return convert


def convert_args(value: Any, convert: Callable[[str], str]) -> Any:
    """Convert the Han text inside tool arguments (a Simplified query searches a zh-TW corpus badly)."""
    if isinstance(value, str):
        return convert(value) if _HAN.search(value) else value
    if isinstance(value, dict):
        return {k: convert_args(v, convert) for k, v in value.items()}
    if isinstance(value, list):
        return [convert_args(v, convert) for v in value]
    return value
