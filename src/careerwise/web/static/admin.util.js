// Helpers shared by the dashboard's views. Every piece of model or user text goes in as a text node
// (textContent), never as HTML: the page works under script-src 'self' / style-src 'self'.

const SVG_NS = "http://www.w3.org/2000/svg";

// el("td", {class: "num", "data-test": "x"}, "text", child, ...)
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  setAttrs(node, attrs);
  append(node, children);
  return node;
}

export function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  setAttrs(node, attrs);
  append(node, children);
  return node;
}

function setAttrs(node, attrs) {
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
}

function append(node, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function clear(node, ...children) {
  node.replaceChildren();
  append(node, children);
  return node;
}

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// JSON in, JSON out; an error body {error: {code, message}} becomes an ApiError with that message
export async function api(path, { method = "GET", body } = {}) {
  const init = { method, headers: { Accept: "application/json" }, credentials: "same-origin" };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const r = await fetch(path, init);
  const data = await r.json().catch(() => null);
  if (!r.ok) {
    const err = (data && data.error) || {};
    throw new ApiError(r.status, err.code || "http_" + r.status, err.message || r.statusText);
  }
  return data;
}

export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== "" && v !== null && v !== undefined) q.set(k, v);
  const s = q.toString();
  return s ? "?" + s : "";
}

export function ms(v) {
  if (v === null || v === undefined) return "–";
  return v >= 1000 ? (v / 1000).toFixed(2) + " s" : Math.round(v) + " ms";
}

export function when(iso) {
  if (!iso) return "–";
  const d = new Date(iso);
  return d.toLocaleString("sv-SE", { hour12: false }).replace("T", " ");
}

export function json(v) {
  return JSON.stringify(v);
}

export function pct(v) {
  return (100 * (v || 0)).toFixed(1) + "%";
}

export function errorLine(err) {
  return el("p", { class: "error", role: "alert" }, err instanceof Error ? err.message : String(err));
}

export function table(headers, rows, attrs = {}) {
  return el(
    "table",
    attrs,
    el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, h)))),
    el("tbody", {}, rows),
  );
}

// a definition list from [label, value] pairs (values as text)
export function facts(pairs) {
  return el(
    "dl",
    { class: "facts" },
    pairs.map(([k, v]) => [el("dt", {}, k), el("dd", {}, v === null || v === undefined ? "–" : String(v))]),
  );
}
