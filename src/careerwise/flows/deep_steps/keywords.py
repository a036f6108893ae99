"""The words of a user's message that describe their situation, without question words and fillers.

:func:`situation_keywords` is deterministic and cheap (no model, no index): what a facet query or the
chain's fallback query combines with its own angle. :data:`EN_STOPWORDS` is shared with the merge
guard, so both read English the same way.
"""

from __future__ import annotations

import re
import unicodedata

_ZH_FILLERS = (
    "請問",
    "想請問",
    "想問",
    "我想知道",
    "應該不應該",
    "應不應該",
    "該不該",
    "該不改",
    "要不要",
    "值不值得",
    "值得嗎",
    "是不是",
    "可不可以",
    "能不能",
    "怎麼辦",
    "怎麼做",
    "怎麼",
    "如何",
    "什麼",
    "Summer",
    "summer",
    "老師",
    "我想",
    "我們",
    "我",
    "你",
    "妳",
    "嗎",
    "呢",
    "吧",
    "啊",
    "呀",
    "了",
    "的",
)
_ZH_JOINERS = re.compile(r"但是|但|而且|還是|或是|或者|可是|所以|因為|然後|和|跟|與")
_PUNCT = re.compile(r"[\s\W_]+")
EN_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "i",
        "me",
        "my",
        "we",
        "our",
        "you",
        "your",
        "he",
        "she",
        "it",
        "they",
        "them",
        "is",
        "am",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "do",
        "does",
        "did",
        "to",
        "of",
        "in",
        "on",
        "at",
        "for",
        "from",
        "with",
        "about",
        "as",
        "by",
        "or",
        "and",
        "but",
        "if",
        "so",
        "than",
        "then",
        "this",
        "that",
        "these",
        "those",
        "what",
        "which",
        "who",
        "whom",
        "how",
        "why",
        "when",
        "where",
        "should",
        "shall",
        "would",
        "could",
        "can",
        "will",
        "just",
        "really",
        "very",
        "any",
        "some",
        "more",
        "most",
        "have",
        "has",
        "had",
        "not",
        "no",
        "yes",
        "it's",
        "im",
        "i'm",
        "get",
        "got",
        "want",
        "wanted",
        "think",
        "summer",
        "please",
    ]
)
_EN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9+#.'-]*")


def situation_keywords(message: str, zh: bool, *, limit: int = 40) -> str:
    """The words of the user's message that describe their situation, without question words and
    fillers: what a facet query or the chain's fallback query combines with its own angle."""
    text = unicodedata.normalize("NFKC", message)
    if zh:
        for filler in _ZH_FILLERS:
            text = text.replace(filler, " ")
        text = _ZH_JOINERS.sub(" ", text)
        words = [w for w in _PUNCT.split(text) if w]
    else:
        words = [w.lower().strip(".'-") for w in _EN_WORD.findall(text)]
        words = [w for w in words if w and w not in EN_STOPWORDS]
    out = " ".join(dict.fromkeys(words))
    return out[:limit].strip()
