"""The mechanical checks the report guards apply to a report's text, one sentence or list item at a time:
the shared normaliser (NFKC, character bigrams and word stems, list-item keys), a statement attributed to
the user that the user never wrote, a cited source called inapplicable, a wrong comparison of the user's
figure with a cited one (and its correction), a list item cut off mid-sentence, and near-duplicate items.

Pure functions of text: what each guard does with a finding (drop, correct, count) is decided in
``report_guards``.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from careerwise.flows import fact_checks

# --------------------------------------------------------------------------- shared text helpers

_BULLET = re.compile(r"^(\s*(?:\d{1,2}[.)、](?!\d)\s*|[-*・•]\s*)?)(.*)$")
_HAN_RUN = re.compile(r"[\u3400-\u9fff]+")
_DIGITS = re.compile(r"\d+(?:\.\d+)?")
_WORD = re.compile(r"[A-Za-z]+")
_EN_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "i",
        "me",
        "my",
        "you",
        "your",
        "to",
        "of",
        "in",
        "on",
        "at",
        "for",
        "with",
        "and",
        "or",
        "but",
        "is",
        "am",
        "are",
        "was",
        "were",
        "be",
        "been",
        "that",
        "this",
        "it",
        "its",
        "as",
        "so",
        "do",
        "does",
        "did",
        "have",
        "has",
        "had",
        "want",
        "wants",
        "wanting",
        "would",
        "could",
        "should",
        "will",
        "can",
        "about",
        "from",
        "not",
        "no",
        "very",
        "really",
        "more",
        "most",
        "some",
        "any",
        "just",
        "also",
    ]
)
# words that say how something was said, not what: left out before the user's words are compared
_ZH_FILLER = re.compile(
    r"自己|想要|希望|打算|目前|現在|已經|覺得|認為|可能|一些|非常|比較|真的|一直|正在|還是|其實|"
    r"你的|您的|你|您|妳|我|他|她|的|了|在|是|有|很|也|都|就|會|要|想|對|和|與|跟"
)


@functools.lru_cache(maxsize=1024)
def _nfkc(text: str) -> str:
    # every check reads the same sentence normalised: once is enough
    return unicodedata.normalize("NFKC", text)


def _grams(text: str) -> set[str]:
    """Han bigrams (a lone Han character counts as itself), English word stems (five letters) and the
    digits as written: two items that state different figures are not the same item (a figure written
    two ways, 4 萬 and 四萬, counts as different here: the guard errs towards keeping an item)."""
    text = _nfkc(text)
    grams: set[str] = {f"#{n}" for n in _DIGITS.findall(text.replace(",", ""))}
    for run in _HAN_RUN.findall(_ZH_FILLER.sub(" ", text)):
        grams.update([run] if len(run) == 1 else (run[i : i + 2] for i in range(len(run) - 1)))
    for word in _WORD.findall(text):
        w = word.lower().strip("'-")
        if len(w) > 2 and w not in _EN_STOP:
            grams.add(w[:5])
    return grams


def _item_key(text: str) -> str:
    """A list item reduced to its words: case, width, punctuation, spaces and list marks do not count."""
    body = _BULLET.match(text)
    assert body is not None  # the pattern matches every line
    return re.sub(r"[\W_]+", "", _nfkc(body.group(2)).lower())


# --------------------------------------------------------------------------- invented user statements

_ZH_ATTRIBUTION = re.compile(
    r"(?:正如|如同|就像)?(?:你|妳|您|使用者|用戶|當事人)(?:之前|先前|剛才|剛剛|也|曾經|曾|有)?"
    r"(?:所說的?|所提到?的?|提到過?|提及|提過|說過|說到|表示|指出|分享過?|透露|坦言|強調|描述|告訴(?:我|我們)?)"
    r"|(?:根據|從|依)(?:你|妳|您|使用者)的(?:描述|說法|訊息|分享)"
)
_EN_ATTRIBUTION = re.compile(
    r"\b(?:as\s+)?(?:you|the\s+user)(?:'ve|\s+have|\s+has|\s+had)?\s+"
    r"(?:mentioned|said|stated|noted|told\s+(?:me|us)|shared|explained|indicated|described|pointed\s+out)"
    r"(?:\s+that)?"
    r"|\bas\s+you\s+(?:say|put\s+it)\b|\baccording\s+to\s+you\b"
    r"|\bfrom\s+what\s+you\s+(?:said|told\s+(?:me|us)|shared|described)\b",
    re.I,
)
_CLAUSE_END = re.compile(r"[，,；;。.!?！？]")
SUPPORT_SHARE = 0.5  # at least half of what is attributed must be the user's own wording


def _attributed(sentence: str) -> str | None:
    """What ``sentence`` says the user said, or None when it attributes nothing to the user."""
    m = _ZH_ATTRIBUTION.search(sentence) or _EN_ATTRIBUTION.search(sentence)
    if m is None:
        return None
    rest = sentence[m.end() :].lstrip(" ，,:：「\"'")
    clause = _CLAUSE_END.split(rest, maxsplit=1)[0].strip()
    if len(clause) < 2:  # 「如你所說，…」: the claim is the next clause, or what came before the marker
        clause = rest.strip() or sentence[: m.start()]
    return clause


def invented_attribution(sentence: str, user_text: str) -> str | None:
    """Why ``sentence`` attributes to the user something their messages do not contain, or None.

    Supported means: every number in the attributed words is one of the user's numbers (4 萬 = 40000),
    and at least :data:`SUPPORT_SHARE` of its Han bigrams / English word stems are in the user's messages.
    Filler words (自己, 想要, 目前, …) do not count on either side."""
    claim = _attributed(sentence)
    if claim is None:
        return None
    extra = fact_checks.numbers(claim) - fact_checks.all_numbers(user_text)
    if extra:
        return f"attributes numbers the user never gave: {', '.join(sorted(extra))}"
    mine = _grams(claim)
    if not mine:
        return None  # nothing to judge: 「如你所說」 alone
    share = len(mine & _grams(user_text)) / len(mine)
    if share < SUPPORT_SHARE:
        return f"attributes words the user never wrote ({share:.2f} of them in the user's messages)"
    return None


# --------------------------------------------------------------------------- "the article does not apply"

_NOT_APPLICABLE = re.compile(
    r"不適用|不太適用|與你(?:的情況|的狀況|的處境)?無關|跟你(?:的情況|的狀況|的處境)?無關"
    r"|\bnot\s+applicable\b|\bdo(?:es)?\s*(?:not|n't)\s+apply\b|\birrelevant\b",
    re.I,
)
# the sentence is about a cited source, not about a tactic: 〔2〕, [1], 這篇文章, 該段落, "the article"
_ABOUT_SOURCE = re.compile(
    r"[〔\[【]\s*\d{1,2}\s*[〕\]】]|文章|段落|這篇|該篇|資料|來源|知識庫|"
    r"\b(?:article|passage|source|this\s+piece|the\s+guide)\b",
    re.I,
)


def calls_source_inapplicable(sentence: str) -> bool:
    """True when ``sentence`` says a cited source does not apply (「〔2〕不適用」, "the article does not
    apply to you"); a tactic said not to fit a situation (「這招不適用於外商」) is content and stays."""
    s = _nfkc(sentence)
    return bool(_NOT_APPLICABLE.search(s)) and bool(_ABOUT_SOURCE.search(s))


# --------------------------------------------------------------------------- numeric comparisons

_REFERENCE = re.compile(
    r"平均|均值|中位數|行情|市場水準|市場水平|一般水準|\baverage\b|\bmedian\b|\bmean\b|\bmarket\s+rate\b"
    r"|\btypical\b",
    re.I,
)
# the negated forms first: 不低於 says "above", 不超過 says "below"
_SAYS_ABOVE_NEG = re.compile(r"不低於|不輸|\bnot\s+(?:below|lower|less|under)\b", re.I)
_SAYS_BELOW_NEG = re.compile(r"不高於|不超過|未超過|沒有超過|\bnot\s+(?:above|higher|more|over)\b", re.I)
_SAYS_ABOVE = re.compile(
    r"高於|超過|超出|優於|勝過|之上|以上|偏高|比.{0,8}高|"
    r"\babove\b|\bhigher\s+than\b|\bmore\s+than\b|\bexceeds?\b|\bover\b|\bahead\s+of\b|\bbetter\s+than\b",
    re.I,
)
_SAYS_BELOW = re.compile(
    r"低於|不到|未達|不及|落後|不如|偏低|之下|以下|比.{0,8}低|"
    r"\bbelow\b|\blower\s+than\b|\bless\s+than\b|\bunder\b|\bshort\s+of\b|\bbehind\b",
    re.I,
)
_RANGE = re.compile(
    r"(\d+(?:\.\d+)?)\s*(?:[-–—~～]|至|到|\bto\b)\s*(\d+(?:\.\d+)?)\s*([萬万千kK](?![A-Za-z]))?"
)
_K = re.compile(r"(\d+(?:\.\d+)?)\s*[kK](?![A-Za-z])")
_YEAR = re.compile(r"^(?:19[5-9]\d|20\d\d)$")
_ABOUT_USER = re.compile(r"你|您|妳|使用者|用戶|\byou\b|\byour\b", re.I)
MONEY_MIN = 1000  # a figure the comparison guard reads as an amount (salaries, not years of experience)


@dataclass(frozen=True)
class Figure:
    low: float
    high: float

    def text(self, zh: bool) -> str:
        if self.low == self.high:
            return _amount(self.low, zh)
        low, high = _amount(self.low, zh), _amount(self.high, zh)
        if low.endswith(" 萬") and high.endswith(" 萬"):
            return f"{low[:-2]}–{high}"  # 4.5–4.7 萬
        return f"{low}–{high}"


def _amount(value: float, zh: bool) -> str:
    if zh and value >= 10_000 and value % 100 == 0:
        return f"{fact_checks._decimal(value / 10_000)} 萬"
    return f"{value:,.0f}"


def figures(text: str) -> list[Figure]:
    """The amounts in ``text`` (≥ :data:`MONEY_MIN`, years left out), a range as one figure: 4.5–4.7 萬 =
    45000–47000 (the unit after the range applies to both ends), 45k-47k, 4 萬 = 40000."""

    def unit_both(m: re.Match[str]) -> str:
        if _YEAR.match(m.group(1)) and _YEAR.match(m.group(2)) and not m.group(3):
            return m.group()  # 2025-2026: years, not a range of amounts
        unit = m.group(3) or ""
        return f"{m.group(1)}{unit}〜{m.group(2)}{unit}"

    text = re.sub(r"(?<=\d)[,，](?=\d{3}(?!\d))", "", _nfkc(text))  # 29,500 → 29500
    text = _K.sub(lambda m: fact_checks._decimal(float(m.group(1)) * 1000), text)  # 45k → 45000
    text = fact_checks.normalize_numbers(_RANGE.sub(unit_both, text))
    out: list[Figure] = []
    pending: float | None = None
    for m in re.finditer(r"(\d+(?:\.\d+)?)(\s*〜\s*)?", text):
        value = float(m.group(1))
        if pending is not None:
            out.append(Figure(min(pending, value), max(pending, value)))
            pending = None
            continue
        if m.group(2):
            pending = value
            continue
        if value >= MONEY_MIN and not _YEAR.match(m.group(1)):
            out.append(Figure(value, value))
    return [f for f in out if f.low >= MONEY_MIN]


def _claimed_direction(sentence: str) -> str | None:
    """ "above" or "below" when ``sentence`` compares with a reference (an average, a median, the market
    rate) in one direction only; None otherwise (no reference, "near", or both directions)."""
    s = _nfkc(sentence)
    if not _REFERENCE.search(s):
        return None
    above = bool(_SAYS_ABOVE_NEG.search(s))
    below = bool(_SAYS_BELOW_NEG.search(s))
    rest = _SAYS_BELOW_NEG.sub(" ", _SAYS_ABOVE_NEG.sub(" ", s))
    above = above or bool(_SAYS_ABOVE.search(rest))
    below = below or bool(_SAYS_BELOW.search(rest))
    if above == below:
        return None
    return "above" if above else "below"


def _comparable(user: float, cited: Figure) -> bool:
    """Same order of magnitude: a monthly figure is not compared with a yearly one."""
    return cited.low / 3 <= user <= cited.high * 3


def _reference_figures(passages: Sequence[str]) -> list[Figure]:
    """Figures stated in the same clause as an average / median / market-rate word in the cited passages
    (「平均月薪約 4.5–4.7 萬，資深可達 6 萬」: 4.5–4.7 萬 only)."""
    out: list[Figure] = []
    for passage in passages:
        for clause in re.split(r"[\n。！？!?；;，,](?!\d)", _nfkc(passage)):
            if _REFERENCE.search(clause):
                out.extend(figures(clause))
    return out


def wrong_comparison(
    sentence: str, user_figures: Sequence[Figure], references: Sequence[Figure]
) -> tuple[Figure, Figure, str] | None:
    """(the user's figure, the cited figure, the true direction) when ``sentence`` claims the opposite
    direction; None when it is right or when the figures do not decide it (no user figure, several that
    disagree, a cited figure of another magnitude, or the user's figure inside the cited range)."""
    claim = _claimed_direction(sentence)
    if claim is None or not user_figures or not references:
        return None
    own = figures(sentence)
    users = [u for u in user_figures if any(u.low == f.low for f in own)]
    if not users and not _ABOUT_USER.search(sentence):
        return None  # not about the user (「要高於行情，目標 5 萬以上」)
    users = users or list(user_figures)
    others = [f for f in own if all(f.low != u.low for u in user_figures)]
    if any(f not in references for f in others):
        return None  # the sentence compares with a figure no cited average states: not the guard's case
    cited = others or list(references)
    verdicts: list[tuple[Figure, Figure, str]] = []  # in the order of the figures: the first one is named
    for u in users:
        for c in cited:
            if not _comparable(u.low, c):
                continue
            truth = "below" if u.low < c.low else "above" if u.low > c.high else "within"
            verdicts.append((u, c, truth))
    directions = {v[2] for v in verdicts}
    if len(directions) != 1:
        return None  # nothing comparable, or the figures disagree: the guard does not guess
    truth = directions.pop()
    if truth == "within" or truth == claim:
        return None
    return verdicts[0]


def corrected(user: Figure, cited: Figure, truth: str, zh: bool) -> str:
    if zh:
        word = "低於" if truth == "below" else "高於"
        return f"依引用資料，平均約 {cited.text(True)}；你的 {user.text(True)}{word}這個水準。"
    word = "below" if truth == "below" else "above"
    return f"The cited figures put the average at {cited.text(False)}; your {user.text(False)} is {word} it."


# --------------------------------------------------------------------------- truncated items

# a sentence's end mark, with the closing quotes or brackets after it; a closing quote alone is not one
# (「HR 面：確認「穩定」」 ends a phrase, not a sentence)
_ENDS_WHOLE = re.compile(r"[。！？!?．.…~～][」』）)\]】》\"'”’]*\s*$")
_ENDS_CUT = re.compile(
    r"(?:[，、：；,:;（(「『\[【《\-–—/&+]|\b(?:and|or|the|a|an|to|of|with|for|in|on|at|by|but|that)\b)\s*$",
    re.I,
)
_OPEN_CLOSE = (("（", "）"), ("(", ")"), ("「", "」"), ("『", "』"), ("【", "】"), ("《", "》"))


def is_truncated(item: str, siblings: Sequence[str]) -> bool:
    """True when the list item ``item`` stops mid-sentence: it ends on a comma, a joiner or an open
    bracket, leaves a bracket open, or lacks the end mark every one of its siblings has."""
    body = item.rstrip()
    if _ENDS_CUT.search(body):
        return True
    if any(body.count(o) > body.count(c) for o, c in _OPEN_CLOSE):
        return True
    whole = [s for s in siblings if s.strip()]
    return bool(whole) and all(_ENDS_WHOLE.search(s) for s in whole) and not _ENDS_WHOLE.search(body)


def _cut_back(item: str) -> str:
    """The whole sentences at the start of a cut-off item ('' when there are none)."""
    parts = fact_checks.sentences(item)
    whole = [p for p in parts if _ENDS_WHOLE.search(p.rstrip())]
    kept: list[str] = []
    for p in parts:
        if p not in whole:
            break
        kept.append(p)
    return "".join(kept).strip()


# --------------------------------------------------------------------------- near-duplicate items

NEAR_DUPLICATE = 0.8  # Jaccard of the two items' bigrams / word stems


def _near(a: set[str], b: set[str]) -> bool:
    """Nearly the same wording and exactly the same figures."""
    if len(a) < 4 or len(b) < 4:
        return False
    if {g for g in a if g.startswith("#")} != {g for g in b if g.startswith("#")}:
        return False
    return len(a & b) / len(a | b) >= NEAR_DUPLICATE
