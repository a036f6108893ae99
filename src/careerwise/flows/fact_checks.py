"""Mechanical fact checks for the deep answers: which numbers and names a text asserts, and whether its
sources contain them.

Both sides of every comparison go through the same normaliser, so a fact written differently is still the
same fact: full-width digits (３ = 3), thousands separators (29,500 = 29500), Chinese numerals (三年 = 3年,
兩千五 = 2500), the 萬 / 億 / 千 multipliers (五萬 = 5萬 = 50000, 1.5萬 = 15000) and percentages written as
成 or 百分之 (一成 = 10%, 三成五 = 35%, 百分之三十 = 30%).

Used by the merge guard of the parallel flow (``deep_steps.unsupported``), by the medium chain's check of
its final report (:func:`check_text`), by the report guards, and by the resume review and its evaluation
(``careerwise.resume.rewrites``, ``careerwise.evals.resumes``): public for that reason. What it cannot
see: a paraphrase that changes the meaning without changing a number or a name (「需求穩定」 → 「需求大增」),
Chinese names without a marker (a company written in Han characters), and English number words ("three
years").
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from careerwise.llm.canary import REDACTED

# --------------------------------------------------------------------------- Chinese numerals

_DIGIT = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "兩": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_SMALL_UNIT = {"十": 10, "百": 100, "千": 1000}
_BIG_UNIT = {"萬": 10_000, "万": 10_000, "億": 100_000_000, "亿": 100_000_000}
_NUMERAL_CHARS = "".join([*_DIGIT, *_SMALL_UNIT, *_BIG_UNIT])
_NUMERAL_RUN = re.compile(f"[{_NUMERAL_CHARS}]+")

# words that contain a numeral but state no number (do not "fix" these into digits: 一定 is "surely",
# 兩難 "a dilemma", 十分 "very", 千萬 "by all means"); replaced before numerals are read
_IDIOMS = (
    "一成不變",
    "一五一十",
    "三心二意",
    "三不五時",
    "五花八門",
    "七上八下",
    "亂七八糟",
    "千辛萬苦",
    "萬無一失",
    "獨一無二",
    "一方面",
    "一口氣",
    "百分百",
    "一定",
    "一起",
    "一般",
    "一些",
    "一樣",
    "一直",
    "一切",
    "一下",
    "一點",
    "一旦",
    "一致",
    "一邊",
    "一再",
    "一向",
    "一味",
    "一律",
    "統一",
    "唯一",
    "萬一",
    "萬全",
    "萬能",
    "萬用",
    "千萬",
    "十分",
    "十足",
    "兩難",
    "兩者",
    "兩全",
    "兩回事",
    "兩樣",
    "兩邊",
    "二手",
    "二度",
    "不二",
    "再三",
    "三思",
    "四處",
    "四周",
    "百般",
    "百貨",
    "百科",
    "老百姓",
)


# an idiom right after a numeral is part of a number: 三千萬 is 30,000,000, 十萬一千 is 101,000
_IDIOM = re.compile(f"(?<![0-9{_NUMERAL_CHARS}])(?:" + "|".join(sorted(_IDIOMS, key=len, reverse=True)) + ")")


def _chinese_value(run: str) -> int | None:
    """The integer a run of Chinese numerals writes (三 = 3, 三十五 = 35, 兩千五 = 2500, 三萬五 = 35000,
    一百零五 = 105), or None when the run is not a number on its own (a lone unit: 百, 萬)."""
    if not any(c in _DIGIT for c in run) and not run.startswith("十"):
        return None
    total = 0  # finished 萬 / 億 groups
    section = 0  # the part below the current big unit
    digit: int | None = None
    last_unit = 1  # the unit of the last term, for 兩千五 (= 2500) and 三萬五 (= 35000)
    zero_seen = False
    for ch in run:
        if ch in _DIGIT:
            value = _DIGIT[ch]
            if value == 0:
                zero_seen = True
            # 一二三 written digit by digit (rare) reads as digits
            digit = value if digit is None else digit * 10 + value
        elif ch in _SMALL_UNIT:
            unit = _SMALL_UNIT[ch]
            section += (1 if digit is None else digit) * unit
            digit, last_unit, zero_seen = None, unit, False
        else:
            unit = _BIG_UNIT[ch]
            section += digit or 0
            total += (section or 1) * unit
            section, digit, last_unit, zero_seen = 0, None, unit, False
    if digit is not None:
        # a digit after a unit without 零 is the next place down: 兩千五 = 2500, 三萬五 = 35000
        section += digit * (last_unit // 10) if last_unit >= 10 and not zero_seen else digit
    return total + section


_PERCENT_WORDS = re.compile(r"百分之([0-9.]+|[" + _NUMERAL_CHARS + r"]+)")
# 三成, 3成, 三成五 (= 35 %); not 成長 / 成功 / 成為 / 成本 / 成果 / 成熟 / 成就 / 成績
_TENTHS = re.compile(r"(\d+(?:\.\d+)?)成(\d)?(?![長功為本果熟就績員立交])")
# 5萬, 1.5 萬, 2萬5千, 3萬5 (= 35000), 2千
_ARABIC_TIMES = re.compile(
    r"(\d+(?:\.\d+)?)\s*([萬万億亿])(?:\s*(\d+)\s*千|(\d)(?![\d.]))?|(\d+(?:\.\d+)?)\s*千"
)


def _decimal(value: float) -> str:
    text = f"{value:.6f}".rstrip("0").rstrip(".")
    return text or "0"


def normalize_numbers(text: str) -> str:
    """``text`` with every number written one way: ASCII digits, no thousands separators, Chinese numerals
    and the 萬 / 千 / 億 multipliers resolved, 成 and 百分之 as %. Only for comparing facts (the
    user still sees the original text)."""
    text = unicodedata.normalize("NFKC", text)  # full-width digits and punctuation: ３ → 3, ，→ ,
    text = re.sub(r"(?<=\d)[,，](?=\d{3}(?!\d))", "", text)  # 29,500 → 29500 (and 1,234,567)
    text = _IDIOM.sub(lambda m: "〃" * len(m.group()), text)
    text = _PERCENT_WORDS.sub(lambda m: f"{_percent_word(m.group(1))}%", text)

    def numeral(m: re.Match[str]) -> str:
        run = m.group()
        after = text[m.end() : m.end() + 1]
        # a lone 一 is mostly "a" (一份工作, 一個方向), not a figure; 一成 / 一萬 are figures
        if run == "一" and after not in ("成", "%"):
            return run
        value = _chinese_value(run)
        return run if value is None else str(value)

    text = _NUMERAL_RUN.sub(numeral, text)
    text = _ARABIC_TIMES.sub(_times, text)
    text = _TENTHS.sub(lambda m: f"{_decimal(float(m.group(1)) * 10 + int(m.group(2) or 0))}%", text)
    return text


def _times(m: re.Match[str]) -> str:
    if m.group(5) is not None:  # 2千
        return _decimal(float(m.group(5)) * 1000)
    unit = _BIG_UNIT[m.group(2)]
    value = float(m.group(1)) * unit
    if m.group(3) is not None:  # 2萬5千
        value += int(m.group(3)) * 1000
    elif m.group(4) is not None:  # 3萬5: the next place down
        value += int(m.group(4)) * unit // 10
    return _decimal(value)


def _percent_word(raw: str) -> str:
    if raw[0].isdigit():
        return raw
    value = _chinese_value(raw)
    return raw if value is None else str(value)


# --------------------------------------------------------------------------- what a text asserts

_NUMBER = re.compile(r"\d+(?:\.\d+)?")
# numbers that are not facts: a list mark, a citation of a passage (〔1〕, [2]), an ordinal (第 3, Step 2),
# and the answer counting its own items (三個建議, 3 tips)
_LIST_MARK = re.compile(r"^\s*(?:\d{1,2}[.)、](?!\d)\s*|[-*・•]\s*)", re.M)
_CITATION = re.compile(r"[〔\[【(（]\s*\d{1,2}(?:\s*[,，、]\s*\d{1,2})*\s*[〕\]】)）]")
_ORDINAL = re.compile(r"第\s*\d+|(?i:\b(?:step|no\.?|round|phase|part)\s*\d+)")
_OWN_COUNT = re.compile(
    r"\d+\s*(?:個|項|點|條)?\s*(?:建議|重點|步驟|方向|面向|問題|要點|原則)"
    r"|(?i:\b\d+\s+(?:tips?|steps?|points?|ways?|things?|ideas?|questions?)\b)"
)
_TITLE = re.compile(r"《([^《》]{1,40})》")
_EN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9+#.'-]*")
_HAN = re.compile(r"[\u3400-\u9fff]")


def _strip_non_facts(text: str) -> str:
    text = _LIST_MARK.sub(" ", text)
    text = _CITATION.sub(" ", text)
    text = _ORDINAL.sub(" ", text)
    return _OWN_COUNT.sub(" ", text)


def _canonical(number: str) -> str:
    return _decimal(float(number)) if "." in number else number.lstrip("0") or "0"


def numbers(text: str) -> set[str]:
    """The numbers ``text`` asserts, normalised (29,500 = 29500 = 2.95萬; 三成 = 30), without list marks,
    passage citations, ordinals and counts of the answer's own items."""
    return {_canonical(n) for n in _NUMBER.findall(_strip_non_facts(normalize_numbers(text)))}


def all_numbers(text: str) -> set[str]:
    """Every number in a source text, normalised (a source's 〔1〕 or 第 3 may still be what a claim cites)."""
    return {_canonical(n) for n in _NUMBER.findall(normalize_numbers(text))}


def latin_words(text: str) -> list[tuple[str, bool]]:
    """(word, sentence-initial) for every Latin word."""
    out: list[tuple[str, bool]] = []
    for m in _EN_WORD.finditer(text):
        before = text[: m.start()].rstrip()
        out.append((m.group().rstrip(".'-"), not before or before[-1] in '.!?:;"(「『'))
    return out


def named_tokens(text: str) -> set[str]:
    """Tokens that name something: in Chinese text every Latin word of 2+ letters (React, LinkedIn, AWS);
    in English text capitalised words not starting a sentence, acronyms, and words with digits or +/#."""
    # our own canary marker is not a claim of the model's (the canary guard wrote it)
    text = unicodedata.normalize("NFKC", _LIST_MARK.sub("", text.replace(REDACTED, " ")))
    out: set[str] = set()
    han = bool(_HAN.search(text))
    for word, initial in latin_words(text):
        if len(word) < 2:
            continue
        if han or (
            (word[0].isupper() and not initial and word != "I")
            or word.isupper()
            or re.search(r"[\d+#]", word)
        ):
            out.add(word.lower())
    return out


def all_latin(texts: Iterable[str]) -> set[str]:
    return {w.lower() for t in texts for w, _ in latin_words(unicodedata.normalize("NFKC", t))}


def titles(text: str) -> set[str]:
    """Titles in 《》 (books, courses, reports): named works a source must contain."""
    return {m.strip() for m in _TITLE.findall(unicodedata.normalize("NFKC", text)) if m.strip()}


# Common terms, acronyms and job titles that are vocabulary, not facts: the fact check does not ask a source
# for them (「UI/UX 設計」, "AI tools", "HR interview", "set OKRs"). Only generic words belong here, never a
# company, a product, a course or a certificate: those are claims a source must contain. The user's own
# words are allowed as well, because the callers put the user's messages among the sources.
COMMON_TERMS = frozenset(
    {
        "ai",
        "api",
        "app",
        "b2b",
        "b2c",
        "ba",
        "bd",
        "ceo",
        "cfo",
        "cto",
        "cv",
        "ui",
        "ux",
        "hr",
        "pm",
        "po",
        "qa",
        "it",
        "kpi",
        "kpis",
        "okr",
        "okrs",
        "roi",
        "sql",
        "seo",
        "sop",
        "star",
        "offer",
        "email",
        "online",
        "side",
        "project",
        "portfolio",
        "resume",
        "mba",
        "saas",
        "ok",
        "vs",
        "q&a",
        "1on1",
        "1-on-1",
        "one-on-one",
        "wfh",
        "remote",
        "data",
        "coding",
    }
)


@dataclass(frozen=True)
class Known:
    """What a set of sources contains, read once: their numbers, Latin words and (normalised) text."""

    numbers: frozenset[str]
    latin: frozenset[str]
    text: str


def known(sources: Sequence[str]) -> Known:
    return Known(
        numbers=frozenset(n for s in sources for n in all_numbers(s)),
        latin=frozenset(all_latin(sources)),
        text=unicodedata.normalize("NFKC", " ".join(sources)),
    )


def unsupported_claim(text: str, sources: Sequence[str] | Known) -> str | None:
    """Why ``text`` asserts a number, a name or a title that none of ``sources`` contains, or None.
    Common terms and acronyms (:data:`COMMON_TERMS`: UI, UX, AI, HR, KPI, …) are vocabulary, not names."""
    pool = sources if isinstance(sources, Known) else known(sources)
    extra = sorted(numbers(text) - pool.numbers, key=lambda n: (len(n), n))
    if extra:
        return f"numbers not in its sources: {', '.join(extra)}"
    names = sorted(named_tokens(text) - pool.latin - COMMON_TERMS)
    if names:
        return f"names not in its sources: {', '.join(names)}"
    works = sorted(t for t in titles(text) if t not in pool.text)
    if works:
        return f"titles not in its sources: {', '.join(works)}"
    return None


# --------------------------------------------------------------------------- checking a whole text

# a sentence ends at 。！？!? (with a closing quote or bracket) or at ". " / "; " in English
_SENTENCE_END = re.compile(r"(?<=[。！？!?；])[」』）)]*|(?<=[.;])(?=\s)")
_BULLET = re.compile(r"^(\s*(?:\d{1,2}[.)、](?!\d)\s*|[-*・•]\s*)?)(.*)$")


@dataclass
class FactCheck:
    """A text with its unsupported sentences removed, and what was removed and why."""

    text: str
    dropped: list[tuple[str, str]] = field(default_factory=list)


def sentences(line: str) -> list[str]:
    """A line cut into sentences, each keeping its end mark (joined again they are the line)."""
    out: list[str] = []
    start = 0
    for m in _SENTENCE_END.finditer(line):
        if m.end() > start:
            out.append(line[start : m.end()])
            start = m.end()
    if start < len(line):
        out.append(line[start:])
    return [s for s in out if s.strip()] or [line]


def check_text(text: str, sources: Sequence[str]) -> FactCheck:
    """``text`` without the sentences that assert a number, a name or a title found in no source. A list
    item whose every sentence is dropped goes with its bullet; the line structure stays otherwise."""
    pool = known(sources)
    kept_lines: list[str] = []
    dropped: list[tuple[str, str]] = []
    for line in text.split("\n"):
        m = _BULLET.match(line)
        assert m is not None  # the pattern matches every line
        mark, body = m.group(1), m.group(2)
        if not body.strip():
            kept_lines.append(line)
            continue
        kept: list[str] = []
        for sentence in sentences(body):
            why = unsupported_claim(sentence, pool)
            if why is None:
                kept.append(sentence)
            else:
                dropped.append((sentence.strip(), why))
        if kept:
            kept_lines.append(mark + "".join(kept).strip())
    cleaned = re.sub(r"\n{3,}", "\n\n", "\n".join(kept_lines)).strip()
    return FactCheck(cleaned, dropped)
