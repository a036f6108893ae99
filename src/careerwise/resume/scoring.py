"""Scores (1–5) per section on four criteria, from the language model or from rules, and the checks
on the model's scores and rewrites.

Criteria: ``quantified`` (achievements with numbers), ``relevance`` (to the target role), ``wording``
(an action verb first, not 「負責」/"responsible for"), ``length``; the contact block is scored on
``completeness`` alone (the details themselves are masked before anyone reads them). A section's score is
the rounded mean of its criteria that apply. The rules are the fallback when the model's scoring fails,
and they pick the weakest lines when the model names none.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from careerwise.flows import _deep
from careerwise.resume.contact import ContactSummary
from careerwise.resume.structure import ResumeStructure

CRITERIA = ("quantified", "relevance", "wording", "length", "completeness")
CRITERIA_LABELS = {
    "quantified": ("量化", "quantified"),
    "relevance": ("相關性", "relevance"),
    "wording": ("用詞", "wording"),
    "length": ("長度", "length"),
    "completeness": ("完整度", "completeness"),
}
REWRITE_KINDS = ("experience", "summary")  # the lines worth rewriting are achievements and the pitch


class SectionScore(BaseModel):
    model_config = ConfigDict(extra="ignore")
    section: str
    quantified: int | None = Field(default=None, ge=1, le=5)
    relevance: int | None = Field(default=None, ge=1, le=5)
    wording: int | None = Field(default=None, ge=1, le=5)
    length: int | None = Field(default=None, ge=1, le=5)
    completeness: int | None = Field(default=None, ge=1, le=5)
    comment: str = ""

    @field_validator("quantified", "relevance", "wording", "length", "completeness", mode="before")
    @classmethod
    def _number(cls, v: object) -> object:
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, str) and v.strip().isdigit():
            return int(v.strip())
        return v

    @field_validator("comment", mode="before")
    @classmethod
    def _comment(cls, v: object) -> object:
        if v is None:
            return ""
        return "" if isinstance(v, str) and _deep.is_placeholder(v) else v

    @model_validator(mode="after")
    def _some_criterion(self) -> SectionScore:
        if not self.criteria():
            raise ValueError(f"{self.section}: no criterion scored")
        return self

    def criteria(self) -> dict[str, int]:
        return {c: v for c in CRITERIA if (v := getattr(self, c)) is not None}

    @property
    def score(self) -> int:
        values = list(self.criteria().values())
        return max(1, min(5, int(sum(values) / len(values) + 0.5)))


class ScoringOutput(BaseModel):
    """The model's scores: one entry per section it was shown, and the weakest lines (``L12``)."""

    model_config = ConfigDict(extra="ignore")
    sections: list[SectionScore] = Field(min_length=1)
    weakest: list[str] = Field(default_factory=list)

    @field_validator("weakest", mode="before")
    @classmethod
    def _weakest(cls, v: object) -> object:
        if isinstance(v, list):
            return [re.sub(r"[^\dLl]", "", str(i)).upper() for i in v if str(i).strip()]
        return v


def scoring_model(expected: list[str], rewritable: set[int]) -> type[ScoringOutput]:
    """``ScoringOutput`` that also insists on a score for every section shown and on line ids that
    exist (so a wrong answer goes back to the model once, with the reason)."""

    class Checked(ScoringOutput):
        @model_validator(mode="after")
        def _fits(self) -> Checked:
            scored = {s.section for s in self.sections}
            missing = [k for k in expected if k not in scored]
            if missing:
                raise ValueError(f"no score for: {', '.join(missing)}")
            for line_id in self.weakest:
                if not line_id.startswith("L") or not line_id[1:].isdigit():
                    raise ValueError(f"weakest: {line_id!r} is not a line id like L12")
                if int(line_id[1:]) - 1 not in rewritable:
                    raise ValueError(f"weakest: {line_id} is not a line of the experience or summary")
            return self

    return Checked


class RewriteItem(BaseModel):
    model_config = ConfigDict(extra="ignore")
    line: str
    rewrite: str = Field(min_length=1)
    why: str = ""

    @field_validator("line", mode="before")
    @classmethod
    def _line(cls, v: object) -> object:
        return re.sub(r"[^\dLl]", "", str(v)).upper() if isinstance(v, str | int) else v

    @field_validator("rewrite", "why", mode="before")
    @classmethod
    def _text(cls, v: object) -> object:
        return v.strip() if isinstance(v, str) else v


class RewritesOutput(BaseModel):
    model_config = ConfigDict(extra="ignore")
    rewrites: list[RewriteItem] = Field(min_length=1)


def rewrites_model(asked: set[str]) -> type[RewritesOutput]:
    class Checked(RewritesOutput):
        @model_validator(mode="after")
        def _asked(self) -> Checked:
            unknown = [r.line for r in self.rewrites if r.line not in asked]
            if unknown:
                raise ValueError(f"lines not asked for: {', '.join(unknown)}; use {', '.join(sorted(asked))}")
            return self

    return Checked


# --------------------------------------------------------------------------- rules

_YEARS = re.compile(
    r"(?:19|20)\d{2}(?:\s*[./年-]\s*\d{1,2}(?!\d)\s*月?)?(?:\s*[-~–—至到]\s*(?:(?:19|20)\d{2}(?:\s*[./年-]\s*\d{1,2}(?!\d)\s*月?)?|至今|now|present|current))?",
    re.IGNORECASE,
)
_DIGIT = re.compile(r"\d")
WEAK_OPENERS = re.compile(
    r"^\s*(?:[-*•·]\s*)?(?:負責|協助|參與|幫忙|處理|從事|執行|支援|配合|"
    r"responsible for|helped|assisted|worked on|participated|involved in|duties included|tasked with|"
    r"in charge of|supported)",
    re.IGNORECASE,
)
_HAN = re.compile(r"[\u3400-\u9fff]")
_LATIN = re.compile(r"[A-Za-z][A-Za-z0-9+#.-]*")
# ideal length per section in units (a Han character is 1, a Latin word 2)
_LENGTH = {
    "summary": (40, 300),
    "experience": (120, 1600),
    "skills": (10, 300),
    "education": (8, 250),
}


def is_quantified(line: str) -> bool:
    """A number other than a year or a date range (30%, 12 人, 3 倍, NT$2M)."""
    return bool(_DIGIT.search(_YEARS.sub("", line)))


def units(text: str) -> int:
    return len(_HAN.findall(text)) + 2 * len(_LATIN.findall(text))


def _band(share: float, steps: tuple[float, float, float, float]) -> int:
    """5 at or above steps[0], 4 at steps[1], 3 at steps[2], 2 above steps[3], else 1."""
    for score, bound in zip((5, 4, 3), steps[:3], strict=True):
        if share >= bound:
            return score
    return 2 if share > steps[3] else 1


def _content_lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if len(line.strip()) >= 4]


def _role_terms(role: str) -> set[str]:
    words = {w.lower() for w in _LATIN.findall(role) if len(w) > 1}
    grams = {role[i : i + 2] for i in range(len(role) - 1) if _HAN.match(role[i]) and _HAN.match(role[i + 1])}
    return words | grams


def relevance_of(text: str, role: str | None) -> int | None:
    if not role:
        return None
    terms = _role_terms(role)
    if not terms:
        return None
    low = text.lower()
    share = sum(1 for t in terms if t in low) / len(terms)
    return _band(share, (0.75, 0.5, 0.3, 0.0))


def rule_score(kind: str, text: str, *, role: str | None, contact: ContactSummary) -> SectionScore:
    if kind == "contact":
        reach = (contact.emails > 0) + (contact.phones > 0 or contact.line_ids > 0)
        completeness = {2: 5, 1: 3, 0: 1}[reach]
        if contact.links and completeness < 5:
            completeness += 1
        return SectionScore(section=kind, completeness=completeness)
    lines = _content_lines(text)
    quantified = wording = None
    if kind in ("experience", "summary") and lines:
        quantified = _band(sum(map(is_quantified, lines)) / len(lines), (0.6, 0.4, 0.25, 0.0))
        weak = sum(bool(WEAK_OPENERS.match(line)) for line in lines) / len(lines)
        wording = _band(1 - weak, (1.0, 0.8, 0.6, 0.4))
    low, high = _LENGTH.get(kind, (10, 1000))
    n = units(text)
    length = 5 if low <= n <= high else 3 if low / 2 <= n <= high * 2 else 2 if n else 1
    return SectionScore(
        section=kind,
        quantified=quantified,
        relevance=relevance_of(text, role) if kind != "education" else None,
        wording=wording,
        length=length,
    )


def weakest_lines(structure: ResumeStructure, *, limit: int = 3) -> list[int]:
    """Experience and summary lines most in need of a rewrite: a weak opener first, then no number,
    longer lines before shorter ones (they carry more to fix)."""
    candidates: list[tuple[int, int, int, int]] = []
    for kind in REWRITE_KINDS:
        for i in structure.sections.get(kind, []):
            line = structure.lines[i].strip()
            if len(line) < 8:
                continue
            weak = bool(WEAK_OPENERS.match(line))
            bare = not is_quantified(line)
            if weak or bare:
                candidates.append((-int(weak), -int(bare), -len(line), i))
    return [i for *_, i in sorted(candidates)[:limit]]


def rewritable_lines(structure: ResumeStructure) -> set[int]:
    return {i for k in REWRITE_KINDS for i in structure.sections.get(k, []) if structure.lines[i].strip()}


def rewrite_problem(original: str, rewrite: str, *, resume: str, role: str | None) -> str | None:
    """Why a rewrite cannot be shown, or None: it invents a figure (the user's achievements are theirs to
    count; unknown figures stay ``X``), names a tool or company the resume does not, or changes nothing."""
    if rewrite.strip() == original.strip():
        return "the same as the original"
    if _deep.is_placeholder(rewrite):
        return "a template phrase"
    invented = sorted(_deep.numbers(rewrite) - _deep.numbers(original))
    if invented:
        return f"invents figures: {', '.join(invented)}"
    known = {w.lower() for w in _LATIN.findall(f"{resume}\n{role or ''}")}
    names = sorted(n for n in _deep.named_tokens(rewrite) if n not in known and n != "x")
    if names:
        return f"names what the resume does not: {', '.join(names)}"
    return None
