// Assistants' settings (edit, reset, audit log) and the API keys of the OpenAI-compatible endpoint.

import { api, clear, el, errorLine, json, when } from "/static/admin.util.js";

let assistant = "summer";

// the assistants page opens this page on one assistant's settings
export function selectAssistant(id) {
  assistant = id;
}

function inputFor(s) {
  if (s.type === "boolean") {
    return el("input", { type: "checkbox", name: s.key, checked: s.value === true });
  }
  if (s.choices) {
    return el("select", { name: s.key }, s.choices.map((c) => el("option", { value: c, selected: c === s.value }, c)));
  }
  if (s.type === "string") {
    return el("input", { type: "text", name: s.key, value: s.value, size: 18, placeholder: "(the provider's own)" });
  }
  const attrs = { type: "number", name: s.key, value: s.value, required: true, size: 6 };
  if (s.minimum !== undefined) attrs.min = s.minimum;
  if (s.maximum !== undefined) attrs.max = s.maximum;
  attrs.step = s.type === "integer" ? 1 : "any";
  return el("input", attrs);
}

function valueOf(input, s) {
  if (s.type === "boolean") return input.checked;
  if (s.type === "string") return input.value.trim();
  return s.type === "integer" ? Number.parseInt(input.value, 10) : Number(input.value);
}

async function loadSettings(box, audit) {
  let data;
  try {
    data = await api(`/api/admin/assistants/${encodeURIComponent(assistant)}/settings`);
  } catch (err) {
    clear(box, errorLine(err));
    return;
  }
  const rows = data.settings.map((s) => {
    const input = inputFor(s);
    const message = el("span", { class: "field-error", role: "alert", "data-test": "setting-error" });
    const save = el("button", { type: "button", "data-test": "save" }, "Save");
    const reset = el("button", { type: "button", disabled: s.source !== "database" }, "Reset");
    save.addEventListener("click", async () => {
      message.textContent = "";
      // the browser's own check first (bounds, integer steps), then the server's
      if (input.checkValidity && s.type !== "boolean" && !input.checkValidity()) {
        message.textContent = input.validationMessage;
        return;
      }
      try {
        await api(`/api/admin/assistants/${encodeURIComponent(assistant)}/settings/${s.key}`, { method: "PUT", body: { value: valueOf(input, s) } });
        await loadSettings(box, audit);
      } catch (err) {
        message.textContent = err.message;
      }
    });
    reset.addEventListener("click", async () => {
      try {
        await api(`/api/admin/assistants/${encodeURIComponent(assistant)}/settings/${s.key}`, { method: "DELETE" });
        await loadSettings(box, audit);
      } catch (err) {
        message.textContent = err.message;
      }
    });
    return el(
      "tr",
      { "data-key": s.key },
      el("td", { class: "mono" }, s.key),
      el("td", {}, input),
      el("td", {}, save, " ", reset),
      el("td", { class: "source-" + s.source }, s.source),
      el("td", { class: "note" }, s.description, s.minimum !== undefined ? ` [${s.minimum}…${s.maximum ?? ""}]` : ""),
      el("td", {}, message),
    );
  });
  clear(
    box,
    el(
      "table",
      { id: "settings-table" },
      el("thead", {}, el("tr", {}, ["setting", "value", "", "source", "", ""].map((h) => el("th", {}, h)))),
      el("tbody", {}, rows),
    ),
  );
  await loadAudit(audit);
}

async function loadAudit(box) {
  try {
    const log = await api(`/api/admin/assistants/${encodeURIComponent(assistant)}/audit?limit=50`);
    clear(
      box,
      el("p", {}, `${log.total} change(s)`),
      el(
        "table",
        { id: "audit" },
        el("thead", {}, el("tr", {}, ["when", "who", "setting", "from", "to"].map((h) => el("th", {}, h)))),
        el(
          "tbody",
          {},
          log.items.map((a) =>
            el("tr", { "data-test": "audit-row" }, el("td", {}, when(a.changed_at)), el("td", {}, a.changed_by), el("td", { class: "mono" }, a.key), el("td", { class: "mono" }, a.old_value === null ? "(default)" : json(a.old_value)), el("td", { class: "mono" }, a.new_value === null ? "(reset)" : json(a.new_value))),
          ),
        ),
      ),
    );
  } catch (err) {
    clear(box, errorLine(err));
  }
}

export async function showSettings(view) {
  const picker = el("select", { id: "assistant" });
  const box = el("div", { id: "settings-out" });
  const audit = el("div", { id: "audit-out" });
  clear(
    view,
    el("h2", {}, "Assistant settings"),
    el("p", { class: "note" }, "A change applies from the next turn on, in every process, without a restart. Source: default < environment < database."),
    el("label", {}, "assistant ", picker),
    box,
    el("h3", {}, "Audit log"),
    audit,
  );
  try {
    const list = await api("/api/admin/assistants");
    for (const a of list.assistants) picker.append(el("option", { value: a.id, selected: a.id === assistant }, `${a.name} (${a.id})${a.enabled ? "" : " · disabled"}`));
  } catch (err) {
    clear(box, errorLine(err));
    return;
  }
  picker.addEventListener("change", () => {
    assistant = picker.value;
    loadSettings(box, audit);
  });
  await loadSettings(box, audit);
}

// --- API keys -----------------------------------------------------------------------------------

async function loadKeys(box) {
  try {
    const data = await api("/api/admin/apikeys");
    const rows = data.keys.map((k) => {
      const revoke = el("button", { type: "button", class: "danger", disabled: !!k.revoked_at }, "Revoke");
      revoke.addEventListener("click", async () => {
        if (!confirm(`Revoke the key “${k.name}” (${k.prefix}…)? Clients using it stop working at once.`)) return;
        try {
          await api("/api/admin/apikeys/" + encodeURIComponent(k.id), { method: "DELETE" });
          await loadKeys(box);
        } catch (err) {
          box.prepend(errorLine(err));
        }
      });
      return el("tr", { class: k.revoked_at ? "revoked" : "", "data-key-id": k.id }, el("td", {}, k.name), el("td", { class: "mono" }, k.prefix + "…"), el("td", {}, when(k.created_at)), el("td", {}, when(k.last_used_at)), el("td", {}, k.revoked_at ? "revoked " + when(k.revoked_at) : "active"), el("td", {}, revoke));
    });
    clear(
      box,
      el(
        "table",
        { id: "keys" },
        el("thead", {}, el("tr", {}, ["name", "key", "created", "last used", "state", ""].map((h) => el("th", {}, h)))),
        el("tbody", {}, rows),
      ),
    );
  } catch (err) {
    clear(box, errorLine(err));
  }
}

export function showKeys(view) {
  const box = el("div", { id: "keys-out" });
  const shown = el("div", { id: "new-key" });
  const name = el("input", { name: "name", required: true, maxlength: 120, placeholder: "who or what uses it" });
  const form = el("form", { class: "filters" }, el("label", {}, "name ", name), el("button", { type: "submit" }, "Create key"));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const r = await api("/api/admin/apikeys", { method: "POST", body: { name: name.value } });
      clear(shown, el("p", { class: "token-box" }, "Copy this key now: it is not stored and will not be shown again. ", el("code", { "data-test": "token" }, r.token)));
      name.value = "";
      await loadKeys(box);
    } catch (err) {
      clear(shown, errorLine(err));
    }
  });
  clear(view, el("h2", {}, "API keys"), el("p", { class: "note" }, "Keys for the OpenAI-compatible endpoint (/v1/chat/completions)."), form, shown, box);
  loadKeys(box);
}
