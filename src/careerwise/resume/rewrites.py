"""Rewrites of a resume's weakest lines, and the checks that keep them honest.

A rewrite is the model's (JSON constrained by :func:`rewrites_schema`, one per line asked, in order) or,
when the model gives none that passes the guard, a rule template (:func:`template_rewrite`). Neither
may add a figure the line lacks: :func:`placeholder_figures` turns every figure the original does not
state into ``[X]`` for the user to fill in, and :func:`rewrite_problem` refuses a rewrite that still
states one, names a tool or company the resume does not, changes nothing, or is not about its line.
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
    by_rules: bool = False  # the rules' template, not the model's  # the lines worth rewriting are achievements and the pitch


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


def with_result_placeholder(rewrite: str, zh: bool) -> str:
    """A rewrite that states no result yet gets one to fill in (Summer's 動、量、果、比: a result with a
    figure), as a placeholder: ``…，讓[成果指標]提升 [X]%`` / ``…, raising [metric] by [X]%``."""
    if is_quantified(rewrite) or PLACEHOLDER in rewrite:
        return rewrite
    body = rewrite.rstrip("。.;；，, ")
    return f"{body}，讓[成果指標]提升 [X]%" if zh else f"{body}, raising [metric] by [X]%"


def template_rewrite(line: str, zh: bool) -> Rewrite:
    """The rules' rewrite of a weak line: the weak opener made an action, the result and its baseline
    asked for as placeholders. It adds no figure and no fact: the user fills in ``[X]``."""
    body = strip_heading(line.strip()).lstrip("-*•·▪ ").strip()
    stripped = body.rstrip("。.;；")
    if zh:
        for weak, verb in _OPENERS_ZH.items():
            if stripped.startswith(weak):
                stripped = verb + stripped[len(weak) :]
                break
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
    low = stripped.lower()
    for weak, verb in _OPENERS_EN.items():
        if low.startswith(weak):
            rest = stripped[len(weak) :].lstrip(" :,-")
            rest = re.sub(r"^(?:with|on|in|to)\s+", "", rest, flags=re.IGNORECASE)
            stripped = f"{verb} {rest}"
            break
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
