"""The full design's merge step: its prompt, the guard on its statements, and the report.

The merge sees only the agents' items and answers statements, each citing item ids
(:class:`MergeOutput`). :func:`check_statements` keeps a statement only when it cites known items (a
facet's section: at least one of that facet's), asserts no number or name its cited items, their
passages and the user's messages lack, and shares wording with what it cites; every drop is kept with
its reason. :func:`build_report` writes the four sections (a facet without an agent says so, a section
whose statements were all dropped shows the findings) and guards them (``report_guards``) before the
report exists, so section events and the report carry the same text.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from careerwise.events import ReportEvent, ReportSection, Source
from careerwise.flows import deep_steps, report_guards
from careerwise.flows.base import FlowContext
from careerwise.flows.facets import ACTIONS_HEADING, FACETS, MISSING, AgentResult, Item

log = logging.getLogger(__name__)

MERGE_MAX_TOKENS = 900
MERGE_ROLE = "總編輯"


class Statement(BaseModel):
    model_config = ConfigDict(extra="ignore")
    text: str
    cites: list[str] = Field(default_factory=list)

    @field_validator("text", mode="before")
    @classmethod
    def _text(cls, v: object) -> object:
        if isinstance(v, str):
            return "" if deep_steps.is_placeholder(v) else v.strip()
        return v

    @field_validator("cites", mode="before")
    @classmethod
    def _cites(cls, v: object) -> object:
        if isinstance(v, str):
            v = re.split(r"[,\s、，]+", v)
        if isinstance(v, list):
            return [re.sub(r"[\[\]【】()（）\s]", "", str(c)).upper() for c in v if str(c).strip()]
        return v


class MergeOutput(BaseModel):
    model_config = ConfigDict(extra="ignore")
    market: list[Statement] = Field(default_factory=list)
    growth: list[Statement] = Field(default_factory=list)
    practice: list[Statement] = Field(default_factory=list)
    actions: list[Statement] = Field(default_factory=list)

    @model_validator(mode="after")
    def _not_empty(self) -> MergeOutput:
        if not any(s.text for s in (*self.market, *self.growth, *self.practice, *self.actions)):
            raise ValueError("the report has no statements")
        return self


MERGE_ZH = f"""你是{MERGE_ROLE}，負責把三位分析師的回報整合成一份職涯建議報告，用繁體中文（台灣用語）。
⛔ 禁止新增外部知識：只能使用下面回報裡的內容，不可加入回報沒有的事實、數字、公司或工具名稱。
每一句陳述都必須在 cites 列出它根據的編號（例如 "A1"、"B2"）；找不到根據的句子不要寫。
回傳嚴格的 JSON，只輸出 JSON：
{{"market": [{{"text": "…", "cites": ["A1"]}}], "growth": [{{"text": "…", "cites": ["B1"]}}], "practice": [{{"text": "…", "cites": ["C1"]}}], "actions": [{{"text": "…", "cites": ["A4", "B5"]}}]}}
market 只寫 A 的內容（每句至少引用一個 A 編號）、growth 只寫 B、practice 只寫 C，各 2 到 3 句；actions 是 2 到 4 個綜合的下一步行動，引用洞察。
某位分析師沒有回報時，對應的欄位回傳空陣列。"""
MERGE_EN = f"""You are the editor-in-chief ({MERGE_ROLE}): combine the three analysts' reports into one career-advice report, in English.
⛔ No outside knowledge: use only what the reports below say; add no facts, figures, companies or tool names they do not contain.
Every statement must list in "cites" the ids it rests on (e.g. "A1", "B2"); do not write a statement you cannot cite.
Reply with strict JSON only:
{{"market": [{{"text": "…", "cites": ["A1"]}}], "growth": [{{"text": "…", "cites": ["B1"]}}], "practice": [{{"text": "…", "cites": ["C1"]}}], "actions": [{{"text": "…", "cites": ["A4", "B5"]}}]}}
market only from A (each statement cites at least one A id), growth only from B, practice only from C, 2-3 statements each; actions: 2-4 combined next steps citing the insights.
When an analyst has no report, return an empty list for that key."""


def merge_input(ctx: FlowContext, results: list[AgentResult], items: dict[str, Item]) -> str:
    zh = ctx.zh
    lines = [
        f"使用者問題：\n{ctx.message}\n\n分析師回報："
        if zh
        else f"The user's question:\n{ctx.message}\n\nReports:"
    ]
    for r in results:
        name = r.facet.pick(r.facet.role, zh)
        if r.output is None:
            lines.append(
                f"\n[{r.facet.letter}] {name}：此面向暫無資料"
                if zh
                else f"\n[{r.facet.letter}] {name}: no report"
            )
            continue
        risk = f"風險：{r.output.risk_level}" if zh else f"risk: {r.output.risk_level}"
        lines.append(
            f"\n[{r.facet.letter}] {name}（{risk}）" if zh else f"\n[{r.facet.letter}] {name} ({risk})"
        )
        for item in items.values():
            if item.result is r:
                kind = ("發現" if item.kind == "finding" else "洞察") if zh else item.kind
                lines.append(f"{item.id}（{kind}）{item.text}" if zh else f"{item.id} ({kind}) {item.text}")
    return "\n".join(lines)


@dataclass
class Checked:
    kept: dict[str, list[tuple[str, list[Item]]]]
    dropped: list[tuple[str, str]]


def check_statements(merge: MergeOutput, items: dict[str, Item], message: str) -> Checked:
    """Keep the statements that point at findings and assert nothing those findings (their passages, the
    user's message) do not contain; the others are dropped with the reason. A facet's section keeps only
    statements that cite at least one of that facet's items (the others repeat another section)."""
    kept: dict[str, list[tuple[str, list[Item]]]] = {}
    dropped: list[tuple[str, str]] = []
    for key in ("market", "growth", "practice", "actions"):
        kept[key] = []
        for st in getattr(merge, key):
            if not st.text:
                continue
            cited = [items[c] for c in dict.fromkeys(st.cites) if c in items]
            if not cited:
                why = "cites nothing" if not st.cites else f"cites unknown ids {st.cites}"
                dropped.append((st.text, why))
                continue
            if key != "actions" and all(it.result.facet.key != key for it in cited):
                dropped.append((st.text, f"cites nothing from the {key} facet"))  # said in its own section
                continue
            chunks = {h.chunk.id: h.chunk.text for it in cited for h in it.result.hits}
            problem = deep_steps.unsupported(st.text, [it.text for it in cited], [message, *chunks.values()])
            if problem is not None:
                dropped.append((st.text, problem))
                continue
            kept[key].append((st.text, cited))
    return Checked(kept, dropped)


def _bullets(texts: list[str]) -> str:
    return "\n".join(f"- {t}" for t in texts)


def _sources(results: list[AgentResult]) -> list[Source]:
    return deep_steps.sources_of(h for r in results for h in r.hits)


def _cited_results(statements: list[tuple[str, list[Item]]]) -> list[AgentResult]:
    seen: dict[str, AgentResult] = {}
    for _, cited in statements:
        for it in cited:
            seen.setdefault(it.result.facet.key, it.result)
    return [seen[f.key] for f in FACETS if f.key in seen]


def build_report(
    ctx: FlowContext, results: list[AgentResult], checked: Checked | None, *, off_domain_hits: int = 0
) -> tuple[ReportEvent, list[str]]:
    """The four sections; a facet without an agent's output says so. Returns the report and notes on
    sections filled from the findings directly (no merge, or every merge statement dropped), and on what
    the report guards did. The sections are guarded (report_guards) before the report exists, so the
    section events and the report carry the same guarded text; ``off_domain_hits``: the facet hits the
    audience guard dropped before the agents ran."""
    zh = ctx.zh
    sections: list[ReportSection] = []
    missing: list[str] = []
    notes: list[str] = []
    for r in results:
        heading = r.facet.pick(r.facet.heading, zh)
        if r.output is None:
            missing.append(f"{r.facet.key}: {r.missing_cause}")
            sections.append(ReportSection(heading=heading, body=MISSING[0] if zh else MISSING[1]))
            continue
        statements = checked.kept[r.facet.key] if checked else []
        if statements:
            body = _bullets([t for t, _ in statements])
            sources = _sources(_cited_results(statements))
        else:
            if checked is not None:
                notes.append(f"{r.facet.key}: no merge statement kept, the findings are shown")
            body, sources = _bullets(r.output.findings), _sources([r])
        sections.append(
            ReportSection(heading=heading, body=body, risk_level=r.output.risk_level, sources=sources)
        )
    actions = checked.kept["actions"] if checked else []
    ok = [r for r in results if r.output is not None]
    if actions:
        body, sources = _bullets([t for t, _ in actions]), _sources(_cited_results(actions))
    else:
        if checked is not None:
            notes.append("actions: no merge statement kept, the insights are shown")
        body = _bullets([i for r in ok if r.output for i in r.output.insights])
        sources = _sources(ok)
    sections.append(
        ReportSection(heading=ACTIONS_HEADING[0] if zh else ACTIONS_HEADING[1], body=body, sources=sources)
    )
    guarded = report_guards.guard_report(
        sections,
        user_messages=report_guards.user_messages(ctx),
        # the agents' items first: what the merge cites is where a compared figure is named from
        passages=[
            *(t for r in ok if r.output for t in (*r.output.findings, *r.output.insights)),
            *(h.chunk.text for r in results for h in r.hits),
        ],
        zh=zh,
        earlier={report_guards.OFF_DOMAIN_HITS: off_domain_hits},
    )
    for guard, text in guarded.actions:
        log.info("parallel: report guard %s: %s", guard, text)
    report = ReportEvent(
        title="職涯建議報告" if zh else "Career advice report",
        path="parallel",
        sections=guarded.sections,
        missing_facets=missing,
        dropped_statements=len(checked.dropped) if checked else None,
        guards=guarded.counts,
    )
    return report, notes
