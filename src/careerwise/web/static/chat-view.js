// How messages look. Model output is untrusted: while it streams it is only ever set as text
// (textContent). The one place HTML goes into the page is `setHtml`, and what it receives is the
// server's rendering (GET /api/messages/{id}: Markdown rendered with raw HTML off, then sanitized by an
// allow-list); the Content-Security-Policy stops whatever might still get through from running.

import { t } from "./chat-i18n.js";

// An element with a class and text; `label` makes the text follow the language switch.
export function el(tag, cls, text, label) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (label) localize(node, label.key, label.vars);
  else if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

// The agents' progress details name a facet by its key ("market", "growth: failed (timeout)",
// "practice: skipped (no_knowledge)"): shown as the facet's name in the page's language, never the key.
const FACET_STEP = /^(market|growth|practice)(?::\s*(ok|failed|skipped)\b(?:\s*\((\d+)?[^)]*\))?)?$/;

export function facetStep(stage, detail) {
  if (stage !== "agent_started" && stage !== "agent_finished") return null;
  const m = FACET_STEP.exec(detail || "");
  if (!m) return null;
  if (stage === "agent_started") return { key: `progress.agent_started.${m[1]}` };
  if (!m[2]) return null;
  return { key: `progress.agent_finished.${m[1]}.${m[2]}`, vars: { n: m[3] || "" } };
}

export function localize(node, key, vars) {
  node.dataset.i18n = key;
  if (vars) node.dataset.i18nVars = JSON.stringify(vars);
  else delete node.dataset.i18nVars;
  node.textContent = t(key, vars || {});
}

function setHtml(node, html) {
  node.innerHTML = html; // server-rendered and sanitized; see the note at the top
}

function sourceKey(s) {
  return `${s.id}\u0000${s.section || ""}`;
}

function sourceLabel(s) {
  return s.section ? `${s.title} › ${s.section}` : s.title;
}

export function userMessage(text) {
  const box = el("article", "msg user");
  box.append(el("div", "who", null, { key: "you" }), el("div", "text", text));
  return box;
}

// One assistant answer: search lines, the thinking indicator, the text or the report, sources,
// notices and the feedback buttons. `hooks.openSource(source)` and `hooks.rate(id, rating)` come from
// the page.
export class Answer {
  constructor(hooks) {
    this.hooks = hooks;
    this.root = el("article", "msg assistant");
    this.searches = el("div", "searches");
    this.thinking = el("div", "thinking");
    this.thinking.hidden = true;
    this.thinking.setAttribute("role", "status");
    this.progress = el("ul", "progress");
    const head = el("div", "thinking-head");
    head.append(el("span", "spinner"), el("span", "thinking-text", null, { key: "thinking" }));
    this.thinking.append(head, this.progress);
    this.body = el("div", "answer streaming");
    this.report = el("div", "report");
    this.sourcesBox = el("div", "sources");
    this.notices = el("div", "notices");
    this.actions = el("div", "actions");
    this.root.append(
      el("div", "who", null, { key: "summer" }),
      this.searches,
      this.thinking,
      this.body,
      this.report,
      this.sourcesBox,
      this.notices,
      this.actions,
    );
    this.text = "";
    this.sources = [];
  }

  appendText(text) {
    this.text += text;
    this.body.textContent = this.text;
  }

  search(query, topK) {
    const line = el("div", "search");
    if (Number.isInteger(topK)) localize(line, "search", { query, k: topK });
    else localize(line, "search.nok", { query });
    this.searches.append(line);
    return line;
  }

  searchDone(ok, returned, sources) {
    const line = el("div", ok ? "search-result" : "search-result failed");
    if (ok) localize(line, "search.found", { n: returned });
    else localize(line, "search.failed");
    this.searches.append(line);
    this.addSources(sources || []);
  }

  addSources(sources) {
    for (const s of sources) {
      if (!this.sources.some((x) => sourceKey(x) === sourceKey(s))) this.sources.push(s);
    }
    this.sourcesBox.replaceChildren();
    if (!this.sources.length) return;
    this.sourcesBox.append(el("span", "label", null, { key: "sources" }), this.sourceButtons(this.sources));
  }

  sourceButtons(sources) {
    const list = el("ul", "source-list");
    for (const s of sources) {
      const button = el("button", "source", sourceLabel(s));
      button.type = "button";
      button.addEventListener("click", () => this.hooks.openSource(s));
      const item = el("li");
      item.append(button);
      list.append(item);
    }
    return list;
  }

  think() {
    this.thinking.hidden = false;
    this.root.classList.add("is-thinking");
  }

  // One line per step. The heartbeat ("waiting", every few seconds while one LLM call runs) updates a
  // single "still thinking (40 s)" line in place instead of adding lines; the next real step removes it.
  progressStep(stage, detail) {
    if (stage === "waiting") {
      const seconds = /(\d+)\s*s$/.exec(detail || "");
      if (!seconds) return; // nothing to show; the spinner already says Summer is thinking
      if (!this.waiting) {
        this.waiting = el("li", "step waiting");
        this.progress.append(this.waiting);
      }
      localize(this.waiting, "progress.waiting", { seconds: seconds[1] });
      return;
    }
    if (this.waiting) {
      this.waiting.remove();
      this.waiting = null;
    }
    const label = facetStep(stage, detail) || { key: `progress.${stage}`, vars: { detail: detail || "" } };
    this.progress.append(el("li", "step", null, label));
  }

  stopThinking() {
    if (this.waiting) {
      this.waiting.remove();
      this.waiting = null;
    }
    this.thinking.hidden = true;
    this.root.classList.remove("is-thinking");
  }

  // One section of a deep report as it is ready (a "section" event): placed at its index among the
  // sections shown so far, replacing one already shown at that index, so a repeated event never
  // duplicates it. The "report" event that follows replaces them all in one synchronous step.
  showSection(section) {
    if (!this.sectionBoxes) {
      this.sectionBoxes = new Map();
      this.report.replaceChildren();
    }
    const box = this.sectionBox(section, false);
    box.dataset.index = String(section.index);
    const old = this.sectionBoxes.get(section.index);
    if (old) old.replaceWith(box);
    else {
      const after = [...this.sectionBoxes.keys()].filter((i) => i > section.index).sort((x, y) => x - y)[0];
      if (after === undefined) this.report.append(box);
      else this.report.insertBefore(box, this.sectionBoxes.get(after));
    }
    this.sectionBoxes.set(section.index, box);
  }

  sectionBox(section, rendered) {
    const box = el("section", "report-section");
    const head = el("header", "section-head");
    head.append(el("h3", null, section.heading));
    if (section.risk_level) {
      head.append(el("span", `badge risk-${section.risk_level}`, null, { key: `risk.${section.risk_level}` }));
    }
    const body = el("div", rendered ? "section-body rendered" : "section-body streaming");
    if (rendered) setHtml(body, section.html);
    else body.textContent = section.body;
    box.append(head, body);
    if (section.sources && section.sources.length) {
      const cites = el("div", "citations");
      cites.append(el("span", "label", null, { key: "citations" }), this.sourceButtons(section.sources));
      box.append(cites);
    }
    return box;
  }

  // The report: from the event while the turn runs (bodies as text), from the server's view after it
  // (bodies as sanitized HTML). It replaces the sections shown so far.
  showReport(report, { rendered = false } = {}) {
    const nodes = [];
    if (report.title) nodes.push(el("h2", "report-title", report.title));
    for (const section of report.sections) nodes.push(this.sectionBox(section, rendered));
    if (report.missing_facets && report.missing_facets.length) {
      nodes.push(el("p", "missing", null, { key: "missing", vars: { list: report.missing_facets.join("、") } }));
    }
    this.sectionBoxes = null;
    this.report.replaceChildren(...nodes);
  }

  notice(kind, message) {
    this.notices.append(el("div", `notice ${kind}`, message));
  }

  noticeKey(kind, key, vars) {
    this.notices.append(el("div", `notice ${kind}`, null, { key, vars }));
  }

  // The finished message from GET /api/messages/{id}: the server's HTML replaces the streamed text.
  finish(view) {
    this.messageId = view.id;
    this.root.dataset.messageId = view.id;
    this.root.dataset.status = view.status;
    this.stopThinking();
    if (view.report) {
      this.showReport(view.report, { rendered: true });
      this.body.replaceChildren();
      this.body.hidden = true;
    } else {
      this.body.className = "answer rendered";
      setHtml(this.body, view.html || "");
      this.body.hidden = !view.html;
    }
    if (view.sources.length) this.addSources(view.sources);
    if (view.status === "ok") this.feedback(view.rating || null);
  }

  // A stored message shown from history.
  static fromView(view, hooks) {
    const answer = new Answer(hooks);
    for (const s of view.searches) answer.search(s.query, s.top_k);
    for (const n of view.notices) answer.notice(n.kind, n.message);
    if (view.status === "cancelled") answer.noticeKey("cancelled", "cancelled");
    answer.finish(view);
    return answer;
  }

  feedback(rating) {
    this.actions.replaceChildren();
    const buttons = {};
    for (const value of ["up", "down"]) {
      // words, not emoji: a machine without an emoji font would show empty boxes
      const button = el("button", `rate rate-${value}`, null, { key: `feedback.${value}` });
      button.type = "button";
      button.setAttribute("aria-pressed", String(rating === value));
      button.addEventListener("click", async () => {
        const ok = await this.hooks.rate(this.messageId, value, this);
        if (!ok) return;
        for (const [v, b] of Object.entries(buttons)) b.setAttribute("aria-pressed", String(v === value));
      });
      buttons[value] = button;
      this.actions.append(button);
    }
  }
}
