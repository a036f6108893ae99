"""The review as a report: overall score, one section per resume section, rewrites, the comparison."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from careerwise.events import ReportEvent, ReportSection
from careerwise.flows import deep_steps
from careerwise.knowledge.index import Hit
from careerwise.resume.contact import ContactSummary
from careerwise.resume.prompts import MISSING_ADVICE, NO_NUMBERS
from careerwise.resume.rewrites import Rewrite
from careerwise.resume.scoring import CRITERIA_LABELS, NO_NUMBERS_CEILING, SectionScore
from careerwise.resume.structure import KINDS, ResumeStructure, label

COMPARISON_HEADING = ("與上一版比較", "Compared with your last version")
REWRITES_HEADING = ("改寫建議", "Suggested rewrites")
OVERALL_HEADING = ("總評", "Overall")


@dataclass(frozen=True)
class PreviousReview:
    """The owner's latest earlier review, for the comparison section."""

    version: int
    scores: dict[str, int]
    overall: float
    same_text: bool = False


def _criteria_line(score: SectionScore, zh: bool) -> str:
    parts = [f"{CRITERIA_LABELS[c][0 if zh else 1]} {v}" for c, v in score.criteria().items()]
    return ("、" if zh else ", ").join(parts)


def _contact_body(contact: ContactSummary, zh: bool) -> str:
    def mark(n: int) -> str:
        return "✓" if n else "✗"

    if zh:
        items = f"Email {mark(contact.emails)}、電話 {mark(contact.phones)}、LINE {mark(contact.line_ids)}、個人連結 {mark(contact.links)}"
        advice = (
            "招募者需要至少一個 Email 和一支電話才聯絡得到你。"
            if contact.emails == 0 or contact.phones == 0
            else ""
        )
        return f"{items}（內容已遮蔽，未送給語言模型）。{advice}".strip()
    items = (
        f"email {mark(contact.emails)}, phone {mark(contact.phones)}, LINE {mark(contact.line_ids)}, "
        f"profile link {mark(contact.links)}"
    )
    advice = (
        " A recruiter needs at least an email and a phone number."
        if not (contact.emails and contact.phones)
        else ""
    )
    return f"{items} (masked; never sent to the model).{advice}"


def _comparison(
    previous: PreviousReview, scores: Mapping[str, SectionScore], overall: float, zh: bool
) -> str:
    lines: list[str] = []
    if previous.same_text:
        lines.append(
            f"這份履歷的內容和第 {previous.version} 版相同。"
            if zh
            else f"This resume has the same text as version {previous.version}."
        )
    for kind in (*KINDS,):
        new = scores.get(kind)
        old = previous.scores.get(kind)
        name = label(kind, zh)
        if new is None and old is None:
            continue
        if new is None:
            lines.append(
                f"- {name}：上一版有，這一版沒有" if zh else f"- {name}: in the last version, not in this one"
            )
        elif old is None:
            lines.append(f"- {name}：新增（{new.score}/5）" if zh else f"- {name}: new ({new.score}/5)")
        else:
            delta = new.score - old
            change = ("持平" if zh else "no change") if delta == 0 else f"{delta:+d}"
            lines.append(
                f"- {name}：{old} → {new.score}（{change}）"
                if zh
                else f"- {name}: {old} → {new.score} ({change})"
            )
    delta_overall = round(overall - previous.overall, 1)
    lines.append(
        f"- 整體：{previous.overall} → {overall}（{delta_overall:+.1f}）"
        if zh
        else f"- Overall: {previous.overall} → {overall} ({delta_overall:+.1f})"
    )
    return "\n".join(lines)


def _rewrites_body(rewrites: Sequence[Rewrite], zh: bool) -> str:
    blocks = []
    for r in rewrites:
        if r.rewrite is None:
            blocks.append(
                f"- 原句：{r.original}\n  （需要改寫：以動詞開頭並補上規模與結果）"
                if zh
                else f"- Original: {r.original}\n  (needs a rewrite: start with a verb, add scale and result)"
            )
        elif zh:
            blocks.append(f"- 原句：{r.original}\n  改寫：{r.rewrite}\n  原因：{r.why or '—'}")
        else:
            blocks.append(f"- Original: {r.original}\n  Rewrite: {r.rewrite}\n  Why: {r.why or '—'}")
    if any(r.rewrite and "[X]" in r.rewrite for r in rewrites):
        blocks.append(
            "[X] 是你的實際數字：請自行填入，沒有就刪掉那一段。"
            if zh
            else "[X] stands for your real figure: fill it in, or drop that part."
        )
    return "\n".join(blocks)


def build_report(
    *,
    structure: ResumeStructure,
    scores: Mapping[str, SectionScore],
    scoring_source: str,
    overall: float,
    rewrites: Sequence[Rewrite],
    hits: Sequence[Hit],
    contact: ContactSummary,
    target_role: str | None,
    previous: PreviousReview | None,
    zh: bool,
    unquantified: bool = False,
) -> ReportEvent:
    sources = deep_steps.sources_of(hits)
    by_rules = scoring_source != "llm"
    head: list[str] = []
    if zh:
        head.append(f"整體分數：{overall} / 5" + ("（規則估算）" if by_rules else ""))
        head.append(f"目標職位：{target_role}" if target_role else "目標職位：未提供（相關性依履歷本身判斷）")
    else:
        head.append(f"Overall score: {overall} / 5" + (" (estimated by rules)" if by_rules else ""))
        head.append(f"Target role: {target_role}" if target_role else "Target role: not given")
    for kind in KINDS:
        s = scores.get(kind)
        if s is not None:
            head.append(f"- {label(kind, zh)}：{s.score}/5" if zh else f"- {label(kind, zh)}: {s.score}/5")
    if unquantified:
        head.append(NO_NUMBERS[0 if zh else 1].format(cap=NO_NUMBERS_CEILING))
    missing = [k for k in structure.missing() if k != "contact"]
    if missing:
        names = [label(k, zh) for k in missing]
        head.append(f"缺少的段落：{'、'.join(names)}" if zh else f"Missing sections: {', '.join(names)}")
        head.extend(f"- {MISSING_ADVICE[k][0 if zh else 1]}" for k in missing)
    sections = [ReportSection(heading=OVERALL_HEADING[0 if zh else 1], body="\n".join(head), sources=sources)]
    for kind in KINDS:
        s = scores.get(kind)
        if s is None:
            continue
        body = _criteria_line(s, zh)
        if kind == "contact":
            body = f"{body}\n{_contact_body(contact, zh)}"
        elif s.comment:
            body = f"{body}\n{s.comment}"
        sections.append(
            ReportSection(
                heading=f"{label(kind, zh)} {s.score}/5",
                body=body,
                sources=[] if kind == "contact" else sources,
            )
        )
    if rewrites:
        sections.append(
            ReportSection(
                heading=REWRITES_HEADING[0 if zh else 1], body=_rewrites_body(rewrites, zh), sources=sources
            )
        )
    if previous is not None:
        sections.append(
            ReportSection(
                heading=COMPARISON_HEADING[0 if zh else 1],
                body=_comparison(previous, scores, overall, zh),
            )
        )
    return ReportEvent(title="履歷健檢報告" if zh else "Resume review", path="resume", sections=sections)
