"""A resume's structure: which lines are contact, summary, experience, skills and education.

Found without the model first, with the same result type either way:

* :func:`by_headings` — headings start a section: on a line of their own (「工作經歷」, 【學歷】,
  ``SKILLS``, ``## Education``, ``Work Experience:``) or sharing the line with its content
  (``Skills: Python, SQL``, 「技能：Excel」, 【技能】Java, ``PROFILE — …``, a table's ``學歷 | …`` row). The
  lines above the first heading are the contact block (and a summary when they run long).
* :func:`by_content` — for a resume without (enough) headings: each line's cues (a school or degree,
  a date range, a list of short items, a certificate, a sentence before any job) name its section, and
  a line without cues belongs to the section above it.
* :class:`BlockLabels` — only when neither finds two sections besides the contact block, the language
  model labels the resume's numbered blocks with a section each, as JSON constrained by a schema (an
  array of exactly as many section names as there are blocks): it never points at or copies lines, so
  there is nothing for a small model to get out of range or to alter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

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

    def kind_of(self, line: int) -> str | None:
        """The section line ``line`` (0-based) belongs to; None for a heading, a blank or a target-role
        line, which belong to none."""
        return next((kind for kind, rows in self.sections.items() if line in rows), None)


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
        "個人摘要",
        "summary",
        "professional summary",
        "career summary",
        "profile",
        "professional profile",
        "personal profile",
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
        "工作資歷",
        "職務經歷",
        "experience",
        "work experience",
        "professional experience",
        "relevant experience",
        "employment",
        "employment history",
        "work history",
        "career history",
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
        "專長技能",
        "電腦技能",
        "證照",
        "證照與技能",
        "語言能力",
        "語言",
        "工具",
        "skills",
        "technical skills",
        "key skills",
        "core skills",
        "skills and tools",
        "core competencies",
        "competencies",
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
        "education and training",
    ),
}
_KEYWORD_KIND = {
    variant: kind
    for kind, words in _HEADINGS.items()
    for word in words
    for variant in {word, word.replace(" and ", " & ")}
}
_DECORATION = re.compile(r"^[\s#*■□●○◆◇▍▌|>\-=_~【\[（(「]+|[\s#*:：|\-=_~】\]）)」]+$")
MAX_HEADING_CHARS = 24
# a heading sharing its line with the content: the word, then a colon, a bar, a closing bracket or a dash
_INLINE = re.compile(
    r"^[\s#*■□●○◆◇▍▌>•·【\[（(「]*(?P<word>"
    + "|".join(re.escape(w) for w in sorted(_KEYWORD_KIND, key=len, reverse=True))
    + r")\s*(?:[:：|｜】\]）)」]|\s[—–-]+)\s*(?P<rest>\S.*)$",
    re.IGNORECASE,
)
# a line naming the role the user applies for is not part of any section (service.target_role_in reads it)
_TARGET_ROLE = re.compile(
    r"^\s*(?:目標職位|目標職缺|應徵職位|應徵職缺|投遞職位|想應徵的職位|target\s+(?:role|position|job)|"
    r"position\s+applied(?:\s+for)?|applying\s+for)\s*[:：]",
    re.IGNORECASE,
)


def heading_kind(line: str) -> SectionKind | None:
    """The section a line opens, if it is a heading on its own: short, and only a known heading word
    once the decoration (【】, ##, ■, a trailing colon) is stripped."""
    stripped = line.strip()
    if not stripped or len(stripped) > MAX_HEADING_CHARS:
        return None
    word = _DECORATION.sub("", stripped).strip().lower()
    word = re.sub(r"\s+", " ", word)
    return _KEYWORD_KIND.get(word) or _KEYWORD_KIND.get(word.replace("&", "and"))


def inline_heading(line: str) -> tuple[SectionKind, str] | None:
    """(section, content) when a heading shares the line with its content: ``Skills: Python, SQL``,
    「技能：Excel」, 【技能】Java, ``PROFILE — …``, ``學歷 | 國立…`` (a DOCX table's row)."""
    m = _INLINE.match(line)
    if m is None:
        return None
    word = re.sub(r"\s+", " ", m.group("word").lower())
    kind = _KEYWORD_KIND.get(word)
    return (kind, m.group("rest").strip()) if kind is not None else None


def by_headings(text: str) -> ResumeStructure:
    lines = text.split("\n")
    structure = ResumeStructure(lines=lines, source="headings")
    current: str | None = None
    top: list[int] = []
    for i, line in enumerate(lines):
        if _TARGET_ROLE.match(line):
            continue
        kind = heading_kind(line)
        if kind is not None:
            current = kind
            continue
        inline = inline_heading(line)
        if inline is not None:
            current = inline[0]
            structure.sections.setdefault(current, []).append(i)
        elif current is None:
            top.append(i)
        else:
            structure.sections.setdefault(current, []).append(i)
    # above the first heading: the name and contact lines; long prose there is a summary
    body = [i for i in top if lines[i].strip()]
    for n, i in enumerate(body):
        block = "summary" if n >= 1 and len(lines[i]) > 60 and not _CONTACT.search(lines[i]) else "contact"
        structure.sections.setdefault(block, []).append(i)
    for rows in structure.sections.values():
        rows.sort()
    return structure


# --------------------------------------------------------------------------- content cues

_CONTACT = re.compile(
    r"\[(?:email|phone|line-id|address|contact)\]|@|https?://|www\.|linkedin|github", re.IGNORECASE
)
_SCHOOL = re.compile(
    r"大學|學院|研究所|學系|碩士|學士|博士|高中|高職|專科|"
    r"\b(?:university|college|institute of|school of|academy|bachelor|master|ph\.?\s?d|mba|pgce|diploma|"
    r"b\.?\s?(?:a|s|sc|eng|fa)\b\.?|m\.?\s?(?:a|s|sc|eng)\b\.?|bsc|msc|beng|meng|bfa)",
    re.IGNORECASE,
)
_YEAR = r"(?:19|20)\d{2}(?:\s*[./年-]\s*\d{1,2}(?!\d)\s*月?)?"
_DATE_RANGE = re.compile(
    rf"{_YEAR}\s*(?:[-~–—至到]|to)\s*(?:{_YEAR}|至今|迄今|現在|now|present|current|today)", re.IGNORECASE
)
_CERTIFICATE = re.compile(
    r"證照|證書|技術士|檢定|執照|多益|toeic|ielts|toefl|jlpt|certified|certificat|licen[cs]e", re.IGNORECASE
)
_LIST_SEPARATOR = re.compile(r"\s*(?:[、,;；/|｜]|，(?=\S{1,12}(?:，|$)))\s*")
_SENTENCE_END = re.compile(r"[。.!！]\s*$")
_HAN_CHAR = re.compile(r"[\u3400-\u9fff]")


def _is_list(line: str) -> bool:
    """A list of short items (``Python, SQL, Excel``; 「Word、Excel、英文」): at least three items, none
    longer than a few words, at most a third of them with a number (so not a sentence of results)."""
    items = [i for i in _LIST_SEPARATOR.split(line.strip(" -•*·")) if i.strip()]
    if len(items) < 3:
        return False
    short = all(len(i.split()) <= 4 and len(_HAN_CHAR.findall(i)) <= 10 for i in items)
    numbered = sum(bool(re.search(r"\d", i)) for i in items)
    return short and numbered * 3 <= len(items)


def _is_prose(line: str) -> bool:
    text = line.strip()
    size = len(_HAN_CHAR.findall(text)) + len(text.split())
    return size >= 12 and bool(_SENTENCE_END.search(text))


def is_job_header(line: str) -> bool:
    """A line naming a job or a school with its dates (``ABC Tech, Analyst, 2020 - 2024``): short of a
    sentence, with a date range."""
    return bool(_DATE_RANGE.search(line)) and not _is_prose(line) and len(line.split()) <= 10


def line_cue(line: str) -> SectionKind | None:
    """The section a line's own content points to, if any (without knowing its neighbours)."""
    if _CONTACT.search(line):
        return "contact"
    if _SCHOOL.search(line) and not _is_prose(line):
        return "education"
    if _DATE_RANGE.search(line):
        return "experience"
    if _CERTIFICATE.search(line) or (_is_list(line) and not _is_prose(line)):
        return "skills"
    return None


def by_content(text: str) -> ResumeStructure:
    """Sections from each line's cues, for a resume without headings: the first line (the name) and
    contact lines are the contact block; a sentence before the first job is the summary; a line without
    cues belongs to the section above it."""
    lines = text.split("\n")
    structure = ResumeStructure(lines=lines, source="headings")
    current: SectionKind | None = None
    seen_job = False
    first = True
    for i, line in enumerate(lines):
        if not line.strip() or _TARGET_ROLE.match(line):
            continue
        heading = heading_kind(line) or (inline_heading(line) or (None,))[0]
        if heading is not None and heading_kind(line) is not None:
            current, first = heading, False  # a lone heading's lines follow it; the heading is no content
            seen_job = seen_job or heading == "experience"
            continue
        cue = heading or line_cue(line)
        if first:
            first = False
            cue = cue if heading is not None else "contact"
        elif cue is None and not seen_job and _is_prose(line):
            cue = "summary"
        elif cue is None and current in (None, "contact"):
            cue = "summary" if not seen_job else "experience"
        if cue == "contact" and current not in (None, "contact"):
            cue = current  # a profile link further down stays where it is
        kind = cue or current
        if kind is None:
            continue
        seen_job = seen_job or kind == "experience"
        current = kind
        structure.sections.setdefault(kind, []).append(i)
    return structure


def _content_kinds(structure: ResumeStructure) -> int:
    return sum(1 for k in structure.present() if k != "contact")


def detect_sections(text: str) -> ResumeStructure:
    """The sections found without the model: by headings when they name at least two sections besides
    the contact block, else by content cues, whichever finds more."""
    headed = by_headings(text)
    if _content_kinds(headed) >= 2:
        return headed
    cued = by_content(text)
    return cued if _content_kinds(cued) > _content_kinds(headed) else headed


def confident(structure: ResumeStructure) -> bool:
    """Whether the structure found without the model is enough to review on: two sections besides the
    contact block (else the model labels the blocks)."""
    return _content_kinds(structure) >= 2


def looks_like_resume(text: str) -> bool:
    """Whether a chat message is itself a resume: at least 60 characters with two section headings (on
    their own line or inline, ``Skills: …``), or the three section words the router's
    ``resume.pasted`` rule looks for. A short resume counts: its review says what is missing."""
    if len(text.strip()) < 60:
        return False
    lines = text.split("\n")
    kinds = {heading_kind(line) for line in lines} | {(inline_heading(line) or (None,))[0] for line in lines}
    if len(kinds - {None, "contact"}) >= 2:
        return True
    low = text.lower()
    groups = (("學歷", "教育", "education"), ("經歷", "經驗", "experience"), ("技能", "skills", "專長"))
    if len(text) >= 120 and all(any(w in low for w in g) for g in groups):
        return True
    # no headings: a job with its dates and two more sections by their content (a school, a skill list)
    cued = by_content(text)
    return (
        "experience" in cued.present() and _content_kinds(cued) >= 3 and len(cued.sections["experience"]) >= 2
    )


def missing_for_review(text: str) -> list[str]:
    """The sections a message that is not (yet) a resume lacks, for the how-to's first line."""
    found = {heading_kind(line) for line in text.split("\n")}
    found |= {(inline_heading(line) or (None,))[0] for line in text.split("\n")}
    return [k for k in KINDS if k != "contact" and k not in found]


# --------------------------------------------------------------------------- the model's labels

MAX_BLOCKS = 40


def blocks(lines: list[str]) -> list[list[int]]:
    """The resume in blocks the model labels: runs of lines between blank lines; a resume without blank
    lines is labelled line by line. At most :data:`MAX_BLOCKS` (the rest joins the last)."""
    runs: list[list[int]] = [[]]
    for i, line in enumerate(lines):
        if line.strip():
            runs[-1].append(i)
        elif runs[-1]:
            runs.append([])
    runs = [r for r in runs if r]
    if len(runs) <= 2:
        runs = [[i] for i, line in enumerate(lines) if line.strip()]
    if len(runs) > MAX_BLOCKS:
        runs = [*runs[: MAX_BLOCKS - 1], [i for r in runs[MAX_BLOCKS - 1 :] for i in r]]
    return runs


class BlockLabels(BaseModel):
    """The model's answer to the structure step: one section name per numbered block, in order."""

    model_config = ConfigDict(extra="ignore")
    labels: list[SectionKind] = Field(min_length=1)

    @field_validator("labels", mode="before")
    @classmethod
    def _labels(cls, v: object) -> object:
        if isinstance(v, list):
            return [_KEYWORD_KIND.get(str(i).strip().lower(), str(i).strip().lower()) for i in v]
        return v


def labels_model(count: int) -> type[BlockLabels]:
    """``BlockLabels`` that also insists on one label per block (a remote server that ignores the
    schema gets the reason back once)."""

    class Checked(BlockLabels):
        @model_validator(mode="after")
        def _count(self) -> Checked:
            if len(self.labels) != count:
                raise ValueError(f"{len(self.labels)} labels for {count} blocks; give exactly {count}")
            return self

    return Checked


def labels_schema(count: int) -> dict[str, Any]:
    """The JSON schema of the structure step's reply: exactly ``count`` section names."""
    return {
        "type": "object",
        "properties": {
            "labels": {"type": "array", "items": {"enum": list(KINDS)}, "minItems": count, "maxItems": count}
        },
        "required": ["labels"],
        "additionalProperties": False,
    }


def numbered_blocks(lines: list[str], runs: list[list[int]]) -> str:
    return "\n\n".join(f"[{n}]\n" + "\n".join(lines[i] for i in run) for n, run in enumerate(runs, 1))


def from_labels(text: str, runs: list[list[int]], labels: BlockLabels) -> ResumeStructure:
    """The structure the labels give; ``ValueError`` when their count is not the blocks'."""
    if len(labels.labels) != len(runs):
        raise ValueError(f"{len(labels.labels)} labels for {len(runs)} blocks; give exactly {len(runs)}")
    lines = text.split("\n")
    structure = ResumeStructure(lines=lines, source="llm")
    for kind, run in zip(labels.labels, runs, strict=True):
        rows = [i for i in run if heading_kind(lines[i]) is None]
        structure.sections.setdefault(kind, []).extend(rows)
    for name in structure.sections:
        structure.sections[name] = sorted(set(structure.sections[name]))
    return structure


def numbered(lines: Iterable[str]) -> str:
    """The resume with every line's 1-based number (kept for the rule picks' traces)."""
    return "\n".join(f"{n}: {line}" for n, line in enumerate(lines, 1))
