"""Rewrites of a resume's weakest lines, and the checks that keep them honest.

A rewrite is the model's (JSON constrained by :func:`rewrites_schema`, one per line asked, in order) or,
when the model gives none that passes the guard, a rule template (:func:`template_rewrite`). Neither
may add a figure the line lacks: :func:`placeholder_figures` turns every figure the original does not
state into ``[X]`` for the user to fill in, and :func:`rewrite_problem` refuses a rewrite that still
states one, names a tool or company the resume does not, changes nothing, or is not about its line.

Only an achievement line is asked for a result (:func:`asks_result`): the section the line belongs to
decides, so a summary, an objective or a skills list never gets "raising [metric] by [X]%".
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from careerwise.flows import deep_steps, fact_checks
from careerwise.resume.scoring import is_quantified, strip_heading

REWRITE_CHARS = 120
WHY_CHARS = 60
_HAN = re.compile(r"[\u3400-\u9fff]")
_LATIN = re.compile(r"[A-Za-z][A-Za-z0-9+#.-]*")


@dataclass(frozen=True)
class Rewrite:
    original: str
    rewrite: str | None = None  # None: the line needs a rewrite, but none could be shown
    why: str = ""
    by_rules: bool = False  # the rules' template, not the model's


class RewriteItem(BaseModel):
    model_config = ConfigDict(extra="ignore")
    rewrite: str = Field(min_length=1)
    why: str = ""

    @field_validator("rewrite", "why", mode="before")
    @classmethod
    def _text(cls, v: object) -> object:
        return v.strip() if isinstance(v, str) else v


class RewritesOutput(BaseModel):
    """One rewrite per line asked, in the order asked (the model never names a line)."""

    model_config = ConfigDict(extra="ignore")
    rewrites: list[RewriteItem] = Field(min_length=1)


def rewrites_schema(count: int) -> dict[str, Any]:
    item = {
        "type": "object",
        "properties": {
            "rewrite": {"type": "string", "minLength": 1, "maxLength": REWRITE_CHARS},
            "why": {"type": "string", "maxLength": WHY_CHARS},
        },
        "required": ["rewrite", "why"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"rewrites": {"type": "array", "items": item, "minItems": count, "maxItems": count}},
        "required": ["rewrites"],
        "additionalProperties": False,
    }


def rewrites_model(count: int) -> type[RewritesOutput]:
    class Checked(RewritesOutput):
        @model_validator(mode="after")
        def _count(self) -> Checked:
            if len(self.rewrites) != count:
                raise ValueError(
                    f"{len(self.rewrites)} rewrites for {count} lines; give exactly {count}, in order"
                )
            return self

    return Checked


PLACEHOLDER = "[X]"
_FIGURE = re.compile(r"\d+(?:[.,]\d+)*")
_BARE_X = re.compile(r"(?<![\w\[])(?:X|Ｘ|N)(?![\w\]])")


def placeholder_figures(rewrite: str, original: str) -> str:
    """``rewrite`` with every figure the original line does not state replaced by ``[X]`` (so 「提升 35%」
    becomes 「提升 [X]%」), and a bare ``X`` written as ``[X]``: the user's achievements are theirs to
    count."""
    known = deep_steps.numbers(original) | _facts_all(original)

    def keep_or_hide(m: re.Match[str]) -> str:
        found = deep_steps.numbers(m.group(0)) or {m.group(0)}
        return m.group(0) if found <= known else PLACEHOLDER

    return _BARE_X.sub(PLACEHOLDER, _FIGURE.sub(keep_or_hide, rewrite))


def _facts_all(text: str) -> set[str]:
    return fact_checks.all_numbers(text)


_HEADING_PREFIX = re.compile(r"^[^:：|｜】\]]{1,24}[:：|｜】\]]\s*")
_OPENERS_ZH = {
    "負責": "主責",
    "協助": "協同",
    "幫忙": "協同",
    "參與": "參與",
    "處理": "處理",
    "從事": "從事",
    "執行": "執行",
    "支援": "支援",
    "配合": "配合",
}
_OPENERS_EN = {
    "responsible for": "Managed",
    "helped": "Contributed to",
    "assisted": "Contributed to",
    "worked on": "Delivered",
    "participated": "Took part",
    "involved in": "Took part in",
    "duties included": "Handled",
    "tasked with": "Handled",
    "in charge of": "Managed",
    "supported": "Contributed to",
}


# The sections whose lines are achievements, so that their rewrites ask for a result: what the user did
# (the experience section, which also holds projects, internships and leadership). A summary or
# objective, a skills list, an education or contact line says who the user is or what they know, and
# "raising [metric] by [X]%" there would ask for an achievement the line never claimed. A line in no
# section is not asked either: the chain rewrites only lines inside a section (``weakest_lines``), and
# where a line's role is unknown a missing prompt costs less than a wrong one.
ACHIEVEMENT_KINDS = frozenset({"experience"})


def asks_result(kind: str | None) -> bool:
    """Whether a rewrite of a line of section ``kind`` asks for a result (:data:`ACHIEVEMENT_KINDS`)."""
    return kind in ACHIEVEMENT_KINDS


def with_result_placeholder(rewrite: str, zh: bool, *, kind: str | None) -> str:
    """An achievement line's rewrite that states no result yet gets one to fill in (Summer's 動、量、果、比:
    a result with a figure), as a placeholder: ``…，讓[成果指標]提升 [X]%`` / ``…, raising [metric] by
    [X]%``. A line of any other section (``kind``) is returned as it is."""
    if not asks_result(kind) or is_quantified(rewrite) or PLACEHOLDER in rewrite:
        return rewrite
    body = rewrite.rstrip("。.;；，, ")
    return f"{body}，讓[成果指標]提升 [X]%" if zh else f"{body}, raising [metric] by [X]%"


def _active(text: str, zh: bool) -> str:
    """``text`` with its weak opener made an action (負責 → 主責, "Responsible for" → "Managed")."""
    if zh:
        for weak, verb in _OPENERS_ZH.items():
            if text.startswith(weak):
                return verb + text[len(weak) :]
        return text
    low = text.lower()
    for weak, verb in _OPENERS_EN.items():
        if low.startswith(weak):
            rest = text[len(weak) :].lstrip(" :,-")
            rest = re.sub(r"^(?:with|on|in|to)\s+", "", rest, flags=re.IGNORECASE)
            return f"{verb} {rest}"
    return text


# what the rules' template appends to a line that is no achievement, by section (zh tail, en tail, zh
# why, en why): what that section needs instead of a result (Summer: a summary says at a glance what you
# do; a skill names its level), as a placeholder in words, never a figure
_TAILS: dict[str, tuple[str, str, str, str]] = {
    "summary": (
        "，擅長[核心專長]",
        ", specialising in [your core strength]",
        "自我介紹要讓人一眼看出你是做什麼的：職稱、年資與最擅長的事；[核心專長] 請換成你自己的話，沒有就刪掉。",
        "A summary should say at a glance what you do: your role, your experience and what you do best; "
        "put your own words in place of [your core strength], or drop it.",
    ),
    "skills": (
        "（每項註明程度或用法：[程度]）",
        " (add your level or use for each: [level])",
        "技能要寫出具體工具與程度，不只列關鍵字；[程度] 請換成你自己的話，沒有就刪掉。",
        "Name each tool with your level or what you did with it, not keywords alone; put your own words "
        "in place of [level], or drop it.",
    ),
}
_FACT_TAIL = (
    "（補上與目標職位相關的重點：[重點]）",
    " (add what matters for the role: [point])",
    "這一行寫的是事實，不需要成果數字；可補上與目標職位相關的重點，[重點] 請換成你自己的話，沒有就刪掉。",
    "This line states a fact and needs no result figure; add what in it matters for the role, in your "
    "own words in place of [point], or drop it.",
)


def template_rewrite(line: str, zh: bool, *, kind: str | None) -> Rewrite:
    """The rules' rewrite of a weak line of section ``kind``, its weak opener made an action. An
    achievement line (:func:`asks_result`) is asked for its result and baseline as placeholders; a
    summary line for what the user does best, a skills line for the level, any other line for what
    matters to the role, none of them for a result. It adds no figure and no fact: the user fills in
    the brackets."""
    body = strip_heading(line.strip()).lstrip("-*•·▪ ").strip()
    stripped = _active(body.rstrip("。.;；"), zh)
    if not asks_result(kind):
        tail_zh, tail_en, why_zh, why_en = _TAILS.get(kind or "", _FACT_TAIL)
        return Rewrite(
            original=line.strip(),
            rewrite=stripped + (tail_zh if zh else tail_en),
            why=why_zh if zh else why_en,
            by_rules=True,
        )
    if zh:
        tail = (
            "（比較基準：原本為 [X]）"
            if is_quantified(stripped)
            else "，讓[成果指標]從 [X] 提升到 [X]（[X]%）"
        )
        return Rewrite(
            original=line.strip(),
            rewrite=f"{stripped}{tail}",
            why="以動詞開頭、寫出成果與比較基準；[X] 請填入你的實際數字，沒有就刪掉該句。",
            by_rules=True,
        )
    tail = (
        " (baseline: [X] before)" if is_quantified(stripped) else ", raising [metric] from [X] to [X] ([X]%)"
    )
    return Rewrite(
        original=line.strip(),
        rewrite=f"{stripped}{tail}",
        why="Lead with the action and show the result against a baseline; put your real figures in "
        "place of [X], or drop the clause.",
        by_rules=True,
    )


def _plain(text: str) -> str:
    """A line without its bullet, its inline heading, its case and its punctuation (to compare)."""
    return re.sub(r"[\W_]+", "", strip_heading(text.strip()).lower())


def _units(text: str) -> set[str]:
    """Han bigrams and Latin words of a line (what two lines about the same thing share)."""
    han = _HAN.findall(text)
    return {a + b for a, b in itertools.pairwise(han)} | {w.lower() for w in _LATIN.findall(text)}


MIN_SHARED = 0.3  # of the original's words or bigrams a rewrite of it keeps


def rewrite_problem(original: str, rewrite: str, *, resume: str, role: str | None) -> str | None:
    """Why a rewrite (figures already made placeholders) cannot be shown, or None: it still states a
    figure the line does not (a number in words), names a tool or company the resume does not, changes
    nothing, or is not about the line (it keeps under a third of the line's words: another line or the
    prompt copied)."""
    if _plain(rewrite) == _plain(original):
        return "the same as the original"
    if len(rewrite) > 3 * len(original) + 20:
        return "longer than the line allows (lines merged)"
    mine = _units(strip_heading(original))
    if mine and len(mine & _units(rewrite)) / len(mine) < MIN_SHARED:
        return "not a rewrite of this line"
    if deep_steps.is_placeholder(rewrite):
        return "a template phrase"
    invented = sorted(deep_steps.numbers(rewrite) - deep_steps.numbers(original) - _facts_all(original))
    if invented:
        return f"invents figures: {', '.join(invented)}"
    known = {w.lower().rstrip(".") for w in _LATIN.findall(f"{resume}\n{role or ''}")}
    names = sorted(n for n in deep_steps.named_tokens(rewrite) if n not in known and n not in ("x", "[x]"))
    if names:
        return f"names what the resume does not: {', '.join(names)}"
    return None
