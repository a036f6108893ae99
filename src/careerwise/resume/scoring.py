"""Scores (1–5) per section on four criteria, from the language model and from rules, and the checks
on the model's scores.

Criteria: ``quantified`` (achievements with numbers), ``relevance`` (to the target role), ``wording``
(an action verb first, not 「負責」/"responsible for"), ``length``; the contact block is scored on
``completeness`` alone (the details themselves are masked before anyone reads them). A section's score is
the rounded mean of its criteria that apply, never above its ``ceiling``. ``quantified`` and ``length``
are counted by rules (a figure other than a year is there or not; the length is measured); the model
judges ``relevance`` and ``wording`` and writes the comment, in JSON constrained by :func:`scoring_schema`.
A resume without a single quantified achievement is penalised (:func:`penalise_no_numbers`).

The rewrites of the weakest lines (:func:`weakest_lines`) are :mod:`careerwise.resume.rewrites`.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from careerwise.flows import deep_steps
from careerwise.resume.contact import ContactSummary
from careerwise.resume.structure import ResumeStructure, inline_heading, is_job_header

CRITERIA = ("quantified", "relevance", "wording", "length", "completeness")
CRITERIA_LABELS = {
    "quantified": ("量化", "quantified"),
    "relevance": ("相關性", "relevance"),
    "wording": ("用詞", "wording"),
    "length": ("長度", "length"),
    "completeness": ("完整度", "completeness"),
}
REWRITE_KINDS = ("experience", "summary")
_CITATION = re.compile(r"〔\d+〕|\[\d+\]")


class SectionScore(BaseModel):
    model_config = ConfigDict(extra="ignore")
    section: str
    quantified: int | None = Field(default=None, ge=1, le=5)
    relevance: int | None = Field(default=None, ge=1, le=5)
    wording: int | None = Field(default=None, ge=1, le=5)
    length: int | None = Field(default=None, ge=1, le=5)
    completeness: int | None = Field(default=None, ge=1, le=5)
    comment: str = ""
    ceiling: int | None = Field(default=None, ge=1, le=5)  # a penalty's cap on the score, not a criterion

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
        if isinstance(v, str) and deep_steps.is_placeholder(_CITATION.sub("", v)):
            return ""  # the prompt's example (「…〔1〕」) copied, not a comment
        return v

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
        return max(1, min(self.ceiling or 5, int(sum(values) / len(values) + 0.5)))


MODEL_CRITERIA = {"summary": ("relevance", "wording"), "experience": ("relevance", "wording")}
SCORE_VALUES = [1, 2, 3, 4, 5]
# a comment's length cap, by the resume's language: a Han character carries about what two Latin ones
# do and costs a token or more, so a Chinese comment of the English cap would not fit the step's
# max_tokens for four or five sections (the reply would be cut before it closes)
COMMENT_CHARS = 120
COMMENT_CHARS_ZH = 60


def model_criteria(kind: str, *, role: bool = True) -> tuple[str, ...]:
    """What the model scores for a section: relevance (only against a target role: without one there is
    nothing to be relevant to) and, for the pitch and the achievements, wording; quantified and length
    are counted by rules. May be empty: the section then gets only a comment."""
    criteria = MODEL_CRITERIA.get(kind, ("relevance",))
    return criteria if role else tuple(c for c in criteria if c != "relevance")


class JudgedSection(SectionScore):
    """One section as the model judged it: its criteria (none when there is nothing for it to judge,
    e.g. skills without a target role) and the comment; the rules' counts join it (:func:`merge_scores`)."""

    @model_validator(mode="after")
    def _some_criterion(self) -> JudgedSection:
        return self


class ScoringOutput(BaseModel):
    """The model's scores: one entry per section it was shown, in the order shown."""

    model_config = ConfigDict(extra="ignore")
    sections: list[JudgedSection] = Field(min_length=1)


def scoring_schema(kinds: list[str], *, role: bool = True, zh: bool = False) -> dict[str, Any]:
    """The JSON schema of the scoring step's reply: exactly one object per section, in order, each
    naming its section, its criteria as 1–5 and a short comment. A small model sampled under it cannot
    leave a section out, name a line, or write past the comment's length."""
    items = []
    for kind in kinds:
        props: dict[str, Any] = {"section": {"const": kind}}
        props |= {c: {"enum": SCORE_VALUES} for c in model_criteria(kind, role=role)}
        props["comment"] = {"type": "string", "maxLength": COMMENT_CHARS_ZH if zh else COMMENT_CHARS}
        items.append(
            {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}
        )
    return {
        "type": "object",
        "properties": {
            "sections": {
                "type": "array",
                "prefixItems": items,
                "minItems": len(kinds),
                "maxItems": len(kinds),
            }
        },
        "required": ["sections"],
        "additionalProperties": False,
    }


def scoring_model(expected: list[str], *, role: bool = True) -> type[ScoringOutput]:
    """``ScoringOutput`` that also insists on an entry for every section shown, with the criteria the
    model is asked for (a remote server that ignores the schema gets the reason back once)."""

    class Checked(ScoringOutput):
        @model_validator(mode="after")
        def _fits(self) -> Checked:
            scored = {s.section for s in self.sections}
            missing = [k for k in expected if k not in scored]
            if missing:
                raise ValueError(f"no score for: {', '.join(missing)}")
            for entry in self.sections:
                unscored = [c for c in model_criteria(entry.section, role=role) if getattr(entry, c) is None]
                if unscored:
                    raise ValueError(f"{entry.section}: no {', '.join(unscored)}")
            return self

    return Checked


def merge_scores(model: SectionScore, rules: SectionScore) -> SectionScore:
    """The model's judgement (relevance, wording, comment) with the rules' counts (quantified, length)."""
    judged = {c: getattr(model, c) for c in ("relevance", "wording") if getattr(model, c) is not None}
    return rules.model_copy(update={**judged, "comment": model.comment})


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


def strip_heading(line: str) -> str:
    """The content of a line whose heading shares it (``Experience: Intern at …`` → ``Intern at …``)."""
    inline = inline_heading(line)
    return inline[1] if inline is not None else line


def weakest_lines(structure: ResumeStructure, *, limit: int = 3) -> list[int]:
    """The lines most in need of a rewrite, always some when the resume has any content: experience and
    summary lines (else any section's but the contact block and education); a weak opener first, then no
    number, longer lines before shorter ones (they carry more to fix)."""
    kinds = [k for k in REWRITE_KINDS if structure.sections.get(k)] or [
        k for k in structure.sections if k not in ("contact", "education")
    ]
    candidates: list[tuple[int, int, int, int]] = []
    for kind in kinds:
        for i in structure.sections.get(kind, []):
            line = structure.lines[i].strip()
            if len(line) < 8 or _DATES_ONLY.match(_YEARS.sub("", line)) or is_job_header(line):
                continue  # a job's title and dates are facts to keep, not a line to reword
            weak = bool(WEAK_OPENERS.match(strip_heading(line)))
            bare = not is_quantified(line)
            candidates.append((-int(weak), -int(bare), -len(line), i))
    return [i for *_, i in sorted(candidates)[:limit]]


_DATES_ONLY = re.compile(r"^[\W_]*$")


def has_quantified_achievement(structure: ResumeStructure) -> bool:
    """Whether any experience or summary line (any line but contact and education, without those
    sections) states a figure other than a year."""
    kinds = [k for k in REWRITE_KINDS if structure.text(k)] or [
        k for k in structure.present() if k not in ("contact", "education")
    ]
    return any(is_quantified(line) for k in kinds for line in _content_lines(structure.text(k)))


NO_NUMBERS_CEILING = 3
NO_NUMBERS_OVERALL = 3.0


def penalise_no_numbers(scores: dict[str, SectionScore]) -> None:
    """A resume without one quantified achievement: ``quantified`` is 1 and the experience and summary
    scores at most :data:`NO_NUMBERS_CEILING` whatever else the model or the rules found (the overall is
    capped by the caller at :data:`NO_NUMBERS_OVERALL`)."""
    for kind in REWRITE_KINDS:
        if kind in scores:
            scores[kind] = scores[kind].model_copy(update={"quantified": 1, "ceiling": NO_NUMBERS_CEILING})
