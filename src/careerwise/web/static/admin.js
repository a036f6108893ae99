// The admin dashboard: the gate (admins only), the health strip, the views and the hash router.
// Turns and one turn's timeline live here; charts, knowledge base, assistants, settings and keys in admin.*.js.

import { api, clear, el, errorLine, facts, json, ms, query, svg, table, when } from "/static/admin.util.js";
import { showCharts } from "/static/admin.charts.js";
import { showKnowledge } from "/static/admin.kb.js";
import { showAssistants } from "/static/admin.assistants.js";
import { hoursWarning, showBookings } from "/static/admin.bookings.js";
import { showKeys, showSettings } from "/static/admin.settings.js";

const $ = (id) => document.getElementById(id);
const PAGE = 25;

async function gate() {
  let me = null;
  try {
    me = await api("/api/auth/me");
  } catch (err) {
    if (err.status !== 401) throw err;
  }
  if (me && me.role === "admin") {
    $("who").textContent = me.email;
    $("app").hidden = false;
    return true;
  }
  const why = me
    ? `This account (${me.email}) is not an administrator.`
    : "You are not logged in.";
  clear(
    $("denied"),
    el("h2", {}, "Administrators only"),
    el("p", { "data-test": "denied" }, why, " ", el("a", { href: "/" }, "Log in on the chat page"), " with an administrator account, then come back."),
  );
  $("denied").hidden = false;
  return false;
}

// --- health strip -------------------------------------------------------------------------------

export async function refreshHealth() {
  const box = $("health");
  try {
    const st = await api("/api/admin/status");
    const kb = st.knowledge;
    const failed = kb.state !== "ready";
    box.className = "health " + (failed ? "bad" : "good");
    box.dataset.state = kb.state;
    const f = st.retrieval_failures;
    // booking hours: a warning when nothing can be booked, a note while the shipped defaults apply
    const hours = await hoursWarning().catch((err) => el("span", { class: "warn-text" }, " · Consultation hours unavailable: " + err.message));
    clear(
      box,
      el("strong", { "data-test": "knowledge-state" }, `Knowledge base: ${kb.state}`),
      failed && kb.error ? el("span", { "data-test": "knowledge-error" }, " — " + kb.error) : null,
      el("span", {}, ` · ${kb.chunks} chunks · ${kb.backend} · version ${kb.version}`),
      el("span", {}, ` · LLM ${st.llm.provider} / ${st.llm.model}`),
      profileLine(st.llm),
      el(
        "span",
        { "data-test": "retrieval-failures" },
        ` · last 24 h: ${st.last_24h.turns} turns, ${st.last_24h.knowledge_degraded_turns} without the knowledge base` +
          ` · retrieval failures (this process): search ${f.search_failed}, unavailable ${f.unavailable}, readiness ${f.readiness}`,
      ),
      hours,
    );
  } catch (err) {
    box.className = "health bad";
    clear(box, "Status unavailable: " + err.message);
  }
  box.hidden = false;
}

// the provider profile (llm/profile.py): the deep design it picks, its speeds, how many requests at once
function profileLine(llm) {
  const p = llm.profile;
  if (!p) return null;
  const speed = (tps, what) => (tps ? `${what} ${Math.round(tps)} tok/s` : `${what} speed unknown`);
  const cuts = p.stream_cuts ? ` · ${p.stream_cuts} streams cut off` : "";
  return el(
    "span",
    { "data-test": "llm-profile" },
    ` · deep design ${llm.deep_design} · ${speed(p.gen_tokens_per_s, "writes")}, ${speed(p.prompt_tokens_per_s, "reads")}` +
      ` (${p.source}) · ${p.concurrency} at a time${cuts}`,
  );
}

// --- turns --------------------------------------------------------------------------------------

const FILTERS = ["intent", "tier", "path", "channel", "status", "degraded", "error", "date_from", "date_to"];
let offset = 0;

function filterForm() {
  const sel = (name, options) =>
    el("label", {}, name, el("select", { name }, el("option", { value: "" }, "any"), options.map((o) => el("option", { value: o }, o))));
  const input = (name, attrs = {}) => el("label", {}, name, el("input", { name, ...attrs }));
  const form = el(
    "form",
    { id: "turn-filters", class: "filters" },
    sel("intent", ["greeting", "career", "resume", "booking", "offtopic"]),
    sel("tier", ["simple", "medium", "complex"]),
    input("path", { size: 8, placeholder: "A, B, …" }),
    input("channel", { size: 8, placeholder: "web, line…" }),
    sel("status", ["ok", "error", "cancelled", "running"]),
    sel("degraded", ["true", "false"]),
    sel("error", ["true", "false"]),
    input("date_from", { type: "date" }),
    input("date_to", { type: "date" }),
    el("button", { type: "submit" }, "Filter"),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    offset = 0;
    loadTurns();
  });
  return form;
}

function toolSummary(calls) {
  return calls.map((c) => {
    const eff = c.effective_arguments || {};
    const req = c.requested_arguments || {};
    const k = eff.top_k !== undefined ? ` top_k ${eff.top_k}` : "";
    const asked = req.top_k !== undefined && req.top_k !== eff.top_k ? ` (asked ${req.top_k})` : "";
    return el("div", {}, `${c.name}${k}${asked}`);
  });
}

async function loadTurns() {
  const form = $("turn-filters");
  const params = { limit: PAGE, offset };
  for (const name of FILTERS) params[name] = form.elements[name].value;
  const out = $("turns-out");
  try {
    const page = await api("/api/admin/turns" + query(params));
    const rows = page.items.map((t) =>
      el(
        "tr",
        { class: "clickable" + (t.error_code ? " err" : t.degraded ? " warn" : ""), "data-trace": t.id, tabindex: 0 },
        el("td", {}, when(t.started_at)),
        el("td", { class: "question" }, t.question),
        el("td", {}, [t.intent, t.tier].filter(Boolean).join(" / ") || "–"),
        el("td", {}, t.layer || "–"),
        el("td", {}, t.path || "–"),
        el("td", {}, t.status + (t.error_code ? ` (${t.error_code})` : "")),
        el("td", { class: "num" }, ms(t.first_text_ms)),
        el("td", { class: "num" }, ms(t.duration_ms)),
        el("td", {}, toolSummary(t.tool_calls)),
        el("td", {}, t.degradations.join(", ")),
      ),
    );
    for (const r of rows) {
      const open = () => (location.hash = "#turn/" + r.dataset.trace);
      r.addEventListener("click", open);
      r.addEventListener("keydown", (e) => e.key === "Enter" && open());
    }
    const prev = el("button", { type: "button", disabled: offset === 0 }, "← newer");
    const next = el("button", { type: "button", disabled: offset + PAGE >= page.total }, "older →");
    prev.addEventListener("click", () => { offset = Math.max(0, offset - PAGE); loadTurns(); });
    next.addEventListener("click", () => { offset += PAGE; loadTurns(); });
    clear(
      out,
      el("p", { "data-test": "turn-count" }, `${page.total} turns` + (page.total ? ` · ${offset + 1}–${offset + page.items.length}` : "")),
      table(["time", "question", "intent / tier", "layer", "path", "status", "first text", "total", "tools", "degraded"], rows, { id: "turns-table" }),
      el("div", { class: "pager" }, prev, next),
    );
  } catch (err) {
    clear(out, errorLine(err));
  }
}

function showTurns(view) {
  if (!view.firstChild) clear(view, el("h2", {}, "Turns"), filterForm(), el("div", { id: "turns-out" }));
  loadTurns();
}

// --- one turn's timeline ------------------------------------------------------------------------

const KIND_ORDER = { route: 0, llm: 1, tool: 2, degraded: 3, error: 4 };

function timelineSvg(spans, totalMs) {
  const rowH = 24, labelW = 260, width = 960, chartW = width - labelW - 90;
  const end = Math.max(totalMs || 0, ...spans.map((s) => s.start_ms + s.duration_ms), 1);
  const x = (t) => labelW + (t / end) * chartW;
  const height = rowH * spans.length + 30;
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => f * end);
  return svg(
    "svg",
    { class: "timeline", viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-label": "turn timeline" },
    ticks.map((t) => [
      svg("line", { x1: x(t), x2: x(t), y1: 0, y2: height - 18, class: "tick" }),
      svg("text", { x: x(t), y: height - 4, class: "axis", "text-anchor": "middle" }, ms(t)),
    ]),
    spans.map((s, i) => {
      const y = i * rowH + 4;
      const w = Math.max(2, x(s.start_ms + s.duration_ms) - x(s.start_ms));
      return svg(
        "g",
        { class: `span kind-${s.kind}${s.status === "error" ? " failed" : ""}`, "data-test": "span" },
        svg("text", { x: 4, y: y + 14, class: "label" }, `${s.kind} · ${s.name}`.slice(0, 40)),
        svg("rect", { x: x(s.start_ms), y, width: w, height: rowH - 8, rx: 2 }, svg("title", {}, `${s.name}: starts ${ms(s.start_ms)}, takes ${ms(s.duration_ms)}`)),
        svg("text", { x: x(s.start_ms) + w + 4, y: y + 14, class: "value" }, `${ms(s.start_ms)} +${ms(s.duration_ms)}`),
      );
    }),
  );
}

function toolCallsTable(calls) {
  const rows = calls.map((c) => {
    const r = c.result || {};
    const eff = c.effective_arguments || {};
    const req = c.requested_arguments || {};
    return el(
      "tr",
      { "data-test": "tool-call", "data-call": c.call_id },
      el("td", {}, c.name),
      el("td", { class: "mono", "data-test": "requested" }, json(req)),
      el("td", { class: "mono", "data-test": "effective" }, json(eff)),
      el("td", { class: "num", "data-test": "requested-top_k" }, req.top_k ?? "–"),
      el("td", { class: "num strong", "data-test": "effective-top_k" }, eff.top_k ?? "–"),
      el("td", { "data-test": "reason" }, c.reason),
      el("td", { class: "num", "data-test": "returned" }, r.returned ?? "–"),
      el("td", {}, r.ok === undefined ? "no result" : r.ok ? "ok" : "failed: " + (r.error || "")),
      el("td", { class: "num" }, ms(r.duration_ms)),
    );
  });
  return table(["tool", "requested", "effective (as streamed)", "top_k asked", "top_k used", "reason", "returned", "outcome", "time"], rows, { id: "tool-calls" });
}

function llmTable(calls) {
  const rows = calls.map((c) => {
    const a = c.attributes || {};
    return el(
      "tr",
      { class: c.status === "error" ? "err" : "" },
      el("td", {}, a.purpose ?? "–"),
      el("td", {}, a.model ?? "–"),
      el("td", { class: "num" }, ms(c.start_ms)),
      el("td", { class: "num" }, ms(a.ttft_ms)),
      el("td", { class: "num" }, ms(c.duration_ms)),
      el("td", { class: "num" }, a.prompt_tokens ?? "–"),
      el("td", { class: "num" }, a.completion_tokens ?? "–"),
      el("td", {}, a.finish_reason ?? a.error ?? "–"),
    );
  });
  return table(["purpose", "model", "starts", "first token", "total", "tokens in", "tokens out", "finish"], rows);
}

// layer 2 stage by stage (lexical, then embedding when the first stage was not sure): why the layer
// decided or passed the message on, with every intent's score and the bars it was held to
function stagesTable(stages) {
  const num = (v) => (typeof v === "number" ? v.toFixed(3) : "–");
  const rows = stages.map((s) => {
    const [best, second] = s.top || [];
    return el(
      "tr",
      { "data-stage": s.stage },
      el("td", {}, s.stage),
      el("td", {}, s.model ?? "–"),
      el("td", {}, best ? `${best[0]} ${num(best[1])}` : "–"),
      el("td", {}, second ? `${second[0]} ${num(second[1])}` : "–"),
      el("td", {}, `${num(s.margin)} / ${num(s.required_margin)}`),
      el("td", {}, num(s.threshold)),
      el("td", { class: s.accepted ? "" : "warn" }, s.accepted ? "sure" : "not sure"),
      el("td", { class: "mono" }, Object.entries(s.scores || {}).map(([k, v]) => `${k} ${num(v)}`).join(", ")),
    );
  });
  return table(
    ["layer-2 stage", "model", "best", "runner-up", "margin / required", "threshold", "verdict", "scores"],
    rows,
    { "data-test": "route-stages" },
  );
}

async function showTurn(view, traceId) {
  clear(view, el("p", {}, "Loading…"));
  let t;
  try {
    t = await api("/api/admin/turns/" + encodeURIComponent(traceId));
  } catch (err) {
    clear(view, el("a", { href: "#turns" }, "← turns"), errorLine(err));
    return;
  }
  const tr = t.trace;
  const spans = [...t.spans].sort((a, b) => a.start_ms - b.start_ms || KIND_ORDER[a.kind] - KIND_ORDER[b.kind]);
  const route = t.route || {};
  clear(
    view,
    el("a", { href: "#turns" }, "← turns"),
    el("h2", {}, "Turn ", el("span", { class: "mono" }, tr.id)),
    facts([
      ["started", when(tr.started_at)],
      ["assistant / channel", `${tr.assistant_id} / ${tr.channel}`],
      ["intent / tier / flow", [tr.intent, tr.tier, tr.flow].map((v) => v ?? "–").join(" / ")],
      ["path / status", `${tr.path ?? "–"} / ${tr.status}${tr.error_code ? " (" + tr.error_code + ")" : ""}`],
      ["first text / total", `${ms(tr.first_text_ms)} / ${ms(tr.duration_ms)}`],
      ["model", tr.model],
      ["tokens", `${tr.usage.prompt_tokens ?? "–"} in, ${tr.usage.completion_tokens ?? "–"} out, ${tr.usage.llm_calls ?? "–"} LLM calls`],
    ]),
    el("h3", {}, "Question"),
    el("p", { class: "quote", "data-test": "question" }, t.question),
    el("h3", {}, "Timeline"),
    spans.length ? timelineSvg(spans, tr.duration_ms) : el("p", {}, "No spans were stored for this turn."),
    el("h3", {}, "Tool calls (as the user's stream showed them)"),
    t.tool_calls.length ? toolCallsTable(t.tool_calls) : el("p", {}, "No tool calls."),
    el("h3", {}, "Routing"),
    facts([
      ["layer", route.layer],
      ["rule", route.rule_id],
      ["reasons", (route.reasons || []).join("; ")],
      ["top", (route.top || []).map(([k, v]) => `${k} ${v.toFixed(3)}`).join(", ")],
      ["margin / required", `${route.margin ?? "–"} / ${route.required_margin ?? "–"}`],
      // a label answer has no confidence (docs/routing.md, "Layer 3")
      ["LLM said", route.llm_intent ? route.llm_intent + (route.llm_confidence == null ? "" : ` (${route.llm_confidence})`) : null],
      ["fallback", route.fallback],
      ["tier reasons", (route.tier_reasons || []).join("; ")],
      ["took", ms(route.duration_ms)],
    ]),
    route.stages && route.stages.length ? stagesTable(route.stages) : null,
    el("h3", {}, "LLM calls"),
    t.llm_calls.length ? llmTable(t.llm_calls) : el("p", {}, "No LLM calls recorded."),
    el("h3", {}, "Degradations and errors"),
    t.degradations.length || t.errors.length
      ? el(
          "ul",
          { "data-test": "problems" },
          t.degradations.map((d) => el("li", { class: "warn" }, `${ms(d.t_ms)} degraded: ${d.reason} — ${d.message}`)),
          t.errors.map((e) => el("li", { class: "err" }, `${ms(e.t_ms)} error: ${e.code} — ${e.message}`)),
        )
      : el("p", {}, "None."),
    el("h3", {}, "Feedback"),
    t.feedback.length
      ? el("ul", {}, t.feedback.map((f) => el("li", {}, `${f.rating === "up" ? "thumbs up" : "thumbs down"} · ${when(f.created_at)}${f.comment ? " — " + f.comment : ""}`)))
      : el("p", {}, "None."),
    el("h3", {}, "Answer"),
    el("p", { class: "quote answer" }, t.answer || "(empty)"),
  );
}

// --- router -------------------------------------------------------------------------------------

const VIEWS = {
  turns: showTurns,
  charts: showCharts,
  knowledge: showKnowledge,
  bookings: showBookings,
  assistants: showAssistants,
  settings: showSettings,
  keys: showKeys,
};

function route() {
  const hash = location.hash.replace(/^#/, "") || "turns";
  const [name, arg] = hash.split("/");
  for (const section of document.querySelectorAll("main#app > section")) section.hidden = true;
  for (const a of document.querySelectorAll("#tabs a")) a.classList.toggle("active", a.getAttribute("href") === "#" + name || (name === "turn" && a.getAttribute("href") === "#turns"));
  if (name === "turn" && arg) {
    const view = $("view-turn");
    view.hidden = false;
    showTurn(view, arg);
  } else {
    const show = VIEWS[name] || showTurns;
    const view = $("view-" + (VIEWS[name] ? name : "turns"));
    view.hidden = false;
    show(view, refreshHealth);
  }
  refreshHealth();
}

async function main() {
  if (!(await gate())) return;
  window.addEventListener("hashchange", route);
  route();
}

main().catch((err) => {
  document.body.append(errorLine(err));
});
