// Charts drawn as plain SVG from the /api/admin/stats figures: no library, no CDN.

import { api, clear, el, errorLine, ms, pct, query, svg } from "/static/admin.util.js";

const PALETTE = 6; // colour classes c0..c5 in admin.css

// horizontal bars: rows = [{label, value, text}]; max = the value of a full bar
function bars(rows, { max, title }) {
  const rowH = 26, labelW = 190, width = 560, barW = width - labelW - 120;
  const top = Math.max(max ?? 0, ...rows.map((r) => r.value), 1e-9);
  const height = Math.max(rowH * rows.length, rowH) + 6;
  return svg(
    "svg",
    { class: "chart", viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-label": title },
    rows.length ? null : svg("text", { x: 4, y: 18, class: "axis" }, "no data in this range"),
    rows.map((r, i) => {
      const y = i * rowH + 3;
      const w = Math.max(r.value > 0 ? 2 : 0, (r.value / top) * barW);
      return svg(
        "g",
        { class: "bar c" + (r.colour ?? i) % PALETTE, "data-test": "bar", "data-label": r.label },
        svg("text", { x: 4, y: y + 15, class: "label" }, r.label),
        svg("rect", { x: labelW, y, width: w, height: rowH - 8, rx: 2 }),
        svg("text", { x: labelW + w + 6, y: y + 15, class: "value" }, r.text),
      );
    }),
  );
}

// stacked columns per day: days = [{date, counts: {reason: n}}]
function stackedDays(days, reasons, title) {
  const width = 820, height = 220, left = 36, bottom = 40, chartH = height - bottom - 10;
  const colW = (width - left - 10) / Math.max(days.length, 1);
  const top = Math.max(1, ...days.map((d) => reasons.reduce((s, r) => s + (d.counts[r] || 0), 0)));
  const y = (v) => 10 + chartH - (v / top) * chartH;
  const everyNth = Math.ceil(days.length / 10);
  return svg(
    "svg",
    { class: "chart", viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-label": title },
    [0, top].map((v) => [
      svg("line", { x1: left, x2: width - 10, y1: y(v), y2: y(v), class: "tick" }),
      svg("text", { x: left - 4, y: y(v) + 4, class: "axis", "text-anchor": "end" }, v),
    ]),
    days.map((d, i) => {
      let acc = 0;
      const x = left + i * colW + 1;
      const parts = reasons.map((r, j) => {
        const n = d.counts[r] || 0;
        if (!n) return null;
        const rect = svg("rect", { x, y: y(acc + n), width: Math.max(1, colW - 2), height: y(acc) - y(acc + n), class: "c" + (j % PALETTE) }, svg("title", {}, `${d.date} ${r}: ${n}`));
        acc += n;
        return rect;
      });
      return svg(
        "g",
        { "data-test": "day", "data-date": d.date, "data-total": acc },
        parts,
        i % everyNth === 0 ? svg("text", { x: x + colW / 2, y: height - bottom + 16, class: "axis", "text-anchor": "middle" }, d.date.slice(5)) : null,
      );
    }),
    reasons.map((r, j) =>
      svg("g", { class: "legend" }, svg("rect", { x: left + j * 200, y: height - 14, width: 10, height: 10, class: "c" + (j % PALETTE) }), svg("text", { x: left + j * 200 + 14, y: height - 5, class: "axis" }, r)),
    ),
  );
}

function card(title, ...body) {
  return el("section", { class: "card", "data-chart": title }, el("h3", {}, title), ...body);
}

async function draw(out, params) {
  let s;
  try {
    s = await api("/api/admin/stats" + query(params));
  } catch (err) {
    clear(out, errorLine(err));
    return;
  }
  const latencyRows = [];
  s.latency.forEach((p, i) => {
    for (const [kind, figures] of [["first text", p.first_text_ms], ["total", p.total_ms]]) {
      for (const q of ["p50", "p90", "p99"]) {
        if (figures[q] === null) continue;
        latencyRows.push({ label: `path ${p.path} · ${kind} ${q}`, value: figures[q], text: ms(figures[q]), colour: i });
      }
    }
  });
  const fb = s.feedback;
  clear(
    out,
    el("p", { "data-test": "stats-summary" }, `${s.turns} turns from ${s.range.date_from} to ${s.range.date_to} (UTC days)`),
    el(
      "div",
      { class: "cards" },
      card(
        "Messages per routing layer",
        bars(s.routing_layers.map((r) => ({ label: r.layer, value: r.share, text: `${pct(r.share)} (${r.count})` })), { max: 1, title: "routing layers" }),
      ),
      card("Latency percentiles per path", bars(latencyRows, { title: "latency" })),
      card(
        "Tool-call rate",
        bars([{ label: "turns with a tool call", value: s.tool_calls.rate, text: `${pct(s.tool_calls.rate)} (${s.tool_calls.turns_with_tool_call} of ${s.turns}; ${s.tool_calls.calls} calls)` }], { max: 1, title: "tool-call rate" }),
      ),
      card(
        "top_k override rate",
        bars([{ label: "effective ≠ requested", value: s.top_k.override_rate, text: `${pct(s.top_k.override_rate)} (${s.top_k.overridden} of ${s.top_k.calls})` }], { max: 1, title: "top_k override rate" }),
        el("p", { class: "note" }, `${s.top_k.not_given_by_model} call(s) where the model gave no top_k (the default applied).`),
      ),
      card("Degradations per day", stackedDays(s.degradations.days, s.degradations.reasons, "degradations per day"), el("p", { class: "note" }, `${s.degradations.total} in the range`)),
      card(
        "Feedback",
        bars(
          [
            { label: "up (thumbs up)", value: fb.up, text: String(fb.up), colour: 2 },
            { label: "down (thumbs down)", value: fb.down, text: String(fb.down), colour: 3 },
          ],
          { title: "feedback" },
        ),
        el("p", { class: "note" }, fb.total ? `${pct(fb.up_share)} positive` : "No feedback in this range."),
      ),
    ),
  );
}

export function showCharts(view) {
  if (!view.firstChild) {
    const form = el(
      "form",
      { class: "filters", id: "chart-range" },
      el("label", {}, "from", el("input", { type: "date", name: "date_from" })),
      el("label", {}, "to", el("input", { type: "date", name: "date_to" })),
      el("button", { type: "submit" }, "Show"),
      el("span", { class: "note" }, "Empty: the last 30 days."),
    );
    const out = el("div", { id: "charts-out" });
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      draw(out, { date_from: form.elements.date_from.value, date_to: form.elements.date_to.value });
    });
    clear(view, el("h2", {}, "Charts"), form, out);
  }
  const form = view.querySelector("#chart-range");
  draw(view.querySelector("#charts-out"), { date_from: form.elements.date_from.value, date_to: form.elements.date_to.value });
}
