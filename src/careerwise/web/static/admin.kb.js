// The knowledge base: documents, upload with a progress bar, re-index, delete, and the retrieval test.

import { api, clear, el, errorLine, json, when } from "/static/admin.util.js";

let refreshHealth = () => {};

// Upload with XMLHttpRequest: its upload events give the bytes sent (first half of the bar); the
// response is an SSE stream of ingest progress (second half), read as it grows.
function upload(files, bar, status) {
  return new Promise((resolve, reject) => {
    const form = new FormData();
    for (const f of files) form.append("files", f, f.name);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/api/admin/knowledge/documents");
    let seen = 0;
    let result = null;
    xhr.upload.addEventListener("progress", (e) => {
      if (e.lengthComputable) bar.value = (50 * e.loaded) / e.total;
      status.textContent = "uploading…";
    });
    const consume = () => {
      const body = xhr.responseText;
      let cut;
      while ((cut = body.indexOf("\n\n", seen)) !== -1) {
        const frame = body.slice(seen, cut);
        seen = cut + 2;
        const name = (frame.match(/^event: (.*)$/m) || [])[1];
        const data = JSON.parse((frame.match(/^data: (.*)$/m) || [])[1] || "{}");
        if (name === "progress") {
          bar.value = 50 + (50 * data.done) / Math.max(1, data.total);
          status.textContent = data.stage === "ingest" ? `ingested ${data.done} of ${data.total}: ${data.item}` : data.stage === "reindex" ? "re-indexing…" : `saved ${data.total} file(s)`;
        } else if (name === "done") {
          result = data;
        } else if (name === "error") {
          result = { error: data.message };
        }
      }
    };
    xhr.addEventListener("progress", () => {
      if (xhr.status === 200) consume();
    });
    xhr.addEventListener("load", () => {
      if (xhr.status !== 200) {
        let msg = xhr.statusText;
        try {
          msg = JSON.parse(xhr.responseText).error.message;
        } catch (_) {
          /* not JSON: keep the status text */
        }
        reject(new Error(msg));
        return;
      }
      consume();
      if (result && result.error) reject(new Error(result.error));
      else if (result) resolve(result);
      else reject(new Error("the upload ended without a report"));
    });
    xhr.addEventListener("error", () => reject(new Error("the upload failed (network)")));
    xhr.send(form);
  });
}

async function loadDocuments(box) {
  try {
    const kb = await api("/api/admin/knowledge");
    const rows = kb.documents.map((d) => {
      const del = el("button", { type: "button", class: "danger", "data-test": "delete" }, "Delete");
      del.addEventListener("click", async () => {
        if (!confirm(`Delete “${d.title}” and its ${d.chunks} chunks?`)) return;
        try {
          await api("/api/admin/knowledge/documents/" + encodeURIComponent(d.id), { method: "DELETE" });
          await loadDocuments(box);
          refreshHealth();
        } catch (err) {
          box.prepend(errorLine(err));
        }
      });
      return el(
        "tr",
        { "data-doc": d.id },
        el("td", {}, d.title),
        el("td", { class: "mono" }, d.id),
        el("td", {}, d.domain),
        el("td", {}, d.lang),
        el("td", { class: "num" }, d.chunks),
        el("td", {}, when(d.updated_at)),
        el("td", {}, del),
      );
    });
    const st = kb.status;
    clear(
      box,
      el("p", { "data-test": "kb-status" }, `${kb.documents.length} documents · index ${st.state}, ${st.chunks} chunks, ${st.backend}, version ${st.version}`, st.error ? " — " + st.error : ""),
      el(
        "div",
        { class: "scroll" },
        el(
          "table",
          { id: "documents" },
          el("thead", {}, el("tr", {}, ["title", "id", "domain", "lang", "chunks", "updated", ""].map((h) => el("th", {}, h)))),
          el("tbody", {}, rows),
        ),
      ),
    );
  } catch (err) {
    clear(box, errorLine(err));
  }
}

function uploadForm(docs) {
  const input = el("input", { type: "file", name: "files", multiple: true, accept: ".md,.markdown,.txt,.html,.htm,.pdf" });
  const bar = el("progress", { max: 100, value: 0, id: "upload-progress" });
  const status = el("span", { "data-test": "upload-status" });
  const report = el("div", { id: "upload-report" });
  const form = el("form", { class: "filters" }, el("label", {}, "Add documents (Markdown, text, HTML, PDF)", input), el("button", { type: "submit" }, "Upload"), bar, status);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (!input.files.length) return;
    bar.value = 0;
    clear(report);
    try {
      const res = await upload(input.files, bar, status);
      const r = res.report;
      bar.value = 100;
      status.textContent = "done";
      clear(
        report,
        el("p", { "data-test": "upload-result" }, `added ${r.added.length}, updated ${r.updated.length}, unchanged ${r.unchanged.length}, failed ${Object.keys(r.failed).length}; ${r.chunks_written} chunks written`),
        Object.entries(r.failed).map(([f, why]) => el("p", { class: "error" }, `${f}: ${why}`)),
      );
      input.value = "";
      await loadDocuments(docs);
      refreshHealth();
    } catch (err) {
      status.textContent = "failed";
      clear(report, errorLine(err));
    }
  });
  return el("div", {}, form, report);
}

function reindexButton(docs, out) {
  const b = el("button", { type: "button", id: "reindex" }, "Re-index");
  b.addEventListener("click", async () => {
    b.disabled = true;
    clear(out, "re-indexing…");
    try {
      const r = await api("/api/admin/knowledge/reindex", { method: "POST" });
      clear(out, `index ${r.knowledge.state}: ${r.knowledge.chunks} chunks, version ${r.knowledge.version}`);
    } catch (err) {
      clear(out, errorLine(err));
    } finally {
      b.disabled = false;
      await loadDocuments(docs);
      refreshHealth();
    }
  });
  return b;
}

function retrievalForm() {
  const out = el("div", { id: "retrieval-out" });
  const form = el(
    "form",
    { class: "filters", id: "retrieval-test" },
    el("label", {}, "query", el("input", { name: "query", size: 40, required: true, maxlength: 300, placeholder: "薪水談判 技巧" })),
    el("label", {}, "top_k the model asks for", el("input", { name: "top_k", type: "number", min: 1, max: 50, size: 4, placeholder: "none" })),
    el("button", { type: "submit" }, "Search"),
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const body = { query: form.elements.query.value };
    if (form.elements.top_k.value) body.top_k = Number(form.elements.top_k.value);
    clear(out, "searching…");
    try {
      const r = await api("/api/admin/knowledge/search", { method: "POST", body });
      const call = r.tool_call;
      clear(
        out,
        el(
          "dl",
          { class: "facts", id: "topk-record" },
          el("dt", {}, "requested"),
          el("dd", { class: "mono", "data-test": "requested" }, json(call.requested_arguments)),
          el("dt", {}, "effective"),
          el("dd", { class: "mono strong", "data-test": "effective" }, json(call.effective_arguments)),
          el("dt", {}, "reason"),
          el("dd", { "data-test": "reason" }, call.reason),
          el("dt", {}, "returned"),
          el("dd", { "data-test": "returned" }, `${r.tool_result.returned} chunk(s) in ${r.tool_result.duration_ms} ms`),
        ),
        el(
          "table",
          { id: "ranked" },
          el("thead", {}, el("tr", {}, ["#", "score", "title", "section", "document"].map((h) => el("th", {}, h)))),
          el(
            "tbody",
            {},
            r.chunks.map((c) => el("tr", { "data-test": "chunk" }, el("td", { class: "num" }, c.rank), el("td", { class: "num" }, c.score), el("td", {}, c.title), el("td", {}, c.section || ""), el("td", { class: "mono" }, c.id))),
          ),
        ),
        el("details", {}, el("summary", {}, "What the model reads"), el("pre", { class: "model-input" }, r.model_input)),
      );
    } catch (err) {
      clear(out, errorLine(err));
    }
  });
  return el("div", {}, form, out);
}

export function showKnowledge(view, health) {
  if (health) refreshHealth = health;
  if (!view.firstChild) {
    const docs = el("div", { id: "documents-out" });
    const reindexOut = el("span", { "data-test": "reindex-status" });
    clear(
      view,
      el("h2", {}, "Knowledge base"),
      uploadForm(docs),
      el("p", {}, reindexButton(docs, reindexOut), " ", reindexOut),
      el("h3", {}, "Retrieval test"),
      el("p", { class: "note" }, "Runs the searchKnowledge tool exactly as a turn would, with Summer's current settings: the record shows what the model asked for, what the tool used and why."),
      retrievalForm(),
      el("details", { open: true, id: "documents-section" }, el("summary", {}, el("h3", {}, "Documents")), docs),
    );
  }
  loadDocuments(view.querySelector("#documents-out"));
}
