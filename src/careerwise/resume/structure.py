"""A resume's structure: which lines are contact, summary, experience, skills and education.

Two ways to find it, with the same result type:

* :class:`LayoutOutput` — what the language model answers: line ranges per section, as strict JSON
  (``{"sections": [{"kind": "experience", "start": 5, "end": 14}, …]}``). It points at the user's own
  numbered lines instead of copying them, so it cannot invent or alter text, costs few tokens, and is
  checked mechanically (known kinds, ranges inside the resume, no overlaps).
* :func:`by_headings` — the deterministic fallback: headings such as 「工作經歷」, 【學歷】, ``SKILLS`` or
  ``## Education`` start a section; the lines above the first heading are the contact block (and a
  summary when they run long).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SectionKind = Literal["contact", "summary", "experience", "skills", "education"]
KINDS: tuple[SectionKind, ...] = ("contact", "summary", "experience", "skills", "education")
LABELS: dict[str, tuple[str, str]] = {
    "contact": ("聯絡資訊", "Contact details"),
    "summary": ("自我介紹", "Summary"),
    "experience": ("經歷", "Experience"),
    "skills": ("技能", "Skills"),
    "education": ("學歷", "Education"),
}


def label(kind: str, zh: bool) -> str:
    pair = LABELS.get(kind, (kind, kind))
    return pair[0] if zh else pair[1]


@dataclass
class ResumeStructure:
    lines: list[str]  # the whole (masked) resume, line by line
    sections: dict[str, list[int]] = field(default_factory=dict)  # kind -> 0-based line numbers
    source: Literal["llm", "headings"] = "headings"

    def text(self, kind: str) -> str:
        return "\n".join(self.lines[i] for i in self.sections.get(kind, []) if self.lines[i].strip())

    def present(self) -> list[str]:
        return [k for k in KINDS if self.text(k).strip()]

    def missing(self) -> list[str]:
        return [k for k in KINDS if not self.text(k).strip()]


# --------------------------------------------------------------------------- headings

_HEADINGS: dict[SectionKind, tuple[str, ...]] = {
    "contact": (
        "聯絡資訊",
        "聯絡方式",
        "個人資料",
        "基本資料",
        "個人資訊",
        "contact",
        "contact information",
        "contact details",
        "personal information",
        "personal details",
    ),
    "summary": (
        "自我介紹",
        "個人簡介",
        "簡介",
        "摘要",
        "關於我",
        "自傳",
        "職涯目標",
        "求職目標",
        "個人特質",
        "summary",
        "professional summary",
        "profile",
        "about me",
        "about",
        "objective",
        "career objective",
    ),
    "experience": (
        "工作經歷",
        "工作經驗",
        "經歷",
        "經驗",
        "實習經歷",
        "實習經驗",
        "專案經歷",
        "專案經驗",
        "專案",
        "作品",
        "作品集",
        "社團經歷",
        "社團經驗",
        "工作經歷與成就",
        "experience",
        "work experience",
        "professional experience",
        "employment",
        "employment history",
        "work history",
        "projects",
        "internships",
        "internship",
        "leadership",
    ),
    "skills": (
        "技能",
        "專業技能",
        "專長",
        "技能專長",
        "證照",
        "證照與技能",
        "語言能力",
        "語言",
        "工具",
        "skills",
        "technical skills",
        "core skills",
        "skills and tools",
        "certifications",
        "certificates",
        "languages",
        "tools",
    ),
    "education": (
        "學歷",
        "教育背景",
        "教育",
        "最高學歷",
        "education",
        "academic background",
        "education background",
    ),
}
_KEYWORD_KIND = {word: kind for kind, words in _HEADINGS.items() for word in words}
_DECORATION = re.compile(r"^[\s#*■□●○◆◇▍▌|>\-=_~【\[（(「]+|[\s#*:：|\-=_~】\]）)」]+$")
MAX_HEADING_CHARS = 24


def heading_kind(line: str) -> SectionKind | None:
    """The section a line opens, if it is a heading: short, and only a known heading word once the
    decoration (【】, ##, ■, a trailing colon) is stripped."""
    stripped = line.strip()
    if not stripped or len(stripped) > MAX_HEADING_CHARS:
        return None
    word = _DECORATION.sub("", stripped).strip().lower()
    word = re.sub(r"\s+", " ", word.replace("&", "and"))
    return _KEYWORD_KIND.get(word)


def by_headings(text: str) -> ResumeStructure:
    lines = text.split("\n")
    structure = ResumeStructure(lines=lines, source="headings")
    current: str | None = None
    top: list[int] = []
    for i, line in enumerate(lines):
        kind = heading_kind(line)
        if kind is not None:
            current = kind
            continue
        if current is None:
            top.append(i)
        else:
            structure.sections.setdefault(current, []).append(i)
    # above the first heading: the name and contact lines; long prose there is a summary
    body = [i for i in top if lines[i].strip()]
    for n, i in enumerate(body):
        block = "summary" if n >= 1 and len(lines[i]) > 60 else "contact"
        structure.sections.setdefault(block, []).append(i)
    for rows in structure.sections.values():
        rows.sort()
    return structure


def looks_like_resume(text: str) -> bool:
    """Whether a chat message is itself a resume: long enough, with at least two section headings (or
    the three section words the router's ``resume.pasted`` rule looks for)."""
    if len(text) < 120:
        return False
    kinds = {heading_kind(line) for line in text.split("\n")} - {None}
    if len(kinds) >= 2:
        return True
    low = text.lower()
    groups = (("學歷", "教育", "education"), ("經歷", "經驗", "experience"), ("技能", "skills", "專長"))
    return all(any(w in low for w in g) for g in groups)


# --------------------------------------------------------------------------- the LLM's layout


class Span(BaseModel):
    model_config = ConfigDict(extra="ignore")
    kind: SectionKind
    start: int = Field(ge=1)
    end: int = Field(ge=1)

    @field_validator("kind", mode="before")
    @classmethod
    def _kind(cls, v: object) -> object:
        if isinstance(v, str):
            word = v.strip().lower()
            return _KEYWORD_KIND.get(word, word)
        return v

    @model_validator(mode="after")
    def _ordered(self) -> Span:
        if self.end < self.start:
            raise ValueError(f"end ({self.end}) is before start ({self.start})")
        return self


class LayoutOutput(BaseModel):
    """The model's answer to the structure step. ``lines`` is set by the caller (context) so the ranges
    can be checked against the resume's length."""

    model_config = ConfigDict(extra="ignore")
    sections: list[Span] = Field(min_length=1)

    @model_validator(mode="after")
    def _no_overlap(self) -> LayoutOutput:
        spans = sorted(self.sections, key=lambda s: s.start)
        for a, b in itertools.pairwise(spans):
            if b.start <= a.end:
                raise ValueError(f"{a.kind} ({a.start}-{a.end}) overlaps {b.kind} ({b.start}-{b.end})")
        return self

    def check(self, line_count: int) -> None:
        """``ValueError`` when a range points past the resume's last line."""
        for s in self.sections:
            if s.end > line_count:
                raise ValueError(f"{s.kind} ends at line {s.end}, but the resume has {line_count} lines")


def layout_model(line_count: int) -> type[LayoutOutput]:
    """``LayoutOutput`` that also refuses ranges past the resume's last line (the reason goes back to the
    model once)."""

    class Checked(LayoutOutput):
        @model_validator(mode="after")
        def _inside(self) -> Checked:
            self.check(line_count)
            return self

    return Checked


def from_layout(text: str, layout: LayoutOutput) -> ResumeStructure:
    lines = text.split("\n")
    structure = ResumeStructure(lines=lines, source="llm")
    for span in layout.sections:
        rows = [i for i in range(span.start - 1, span.end) if heading_kind(lines[i]) is None]
        structure.sections.setdefault(span.kind, []).extend(rows)
    for kind in structure.sections:
        structure.sections[kind] = sorted(set(structure.sections[kind]))
    return structure


def numbered(lines: Iterable[str]) -> str:
    """The resume as the model sees it: every line with its 1-based number."""
    return "\n".join(f"{n}: {line}" for n, line in enumerate(lines, 1))
