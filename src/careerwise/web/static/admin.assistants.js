// Assistants: the list, one form to create a new one or edit an existing one (name, persona, knowledge
// domains, enabled), and a way into the settings page for any of them. Every change is audited.

import { api, clear, el, errorLine, when } from "/static/admin.util.js";
import { selectAssistant } from "/static/admin.settings.js";

function domainsPicker(all, chosen) {
  // "all" is the empty list on the server; shown as its own box that the others switch off
  const boxes = all.map((d) =>
    el("label", { class: "inline" }, el("input", { type: "checkbox", name: "domain", value: d, checked: d === "all" ? chosen.includes("all") : chosen.includes(d) }), " ", d),
  );
  const wrap = el("fieldset", { class: "domains", "data-test": "domains" }, el("legend", {}, "knowledge domains"), boxes);
  wrap.addEventListener("change", (e) => {
    const inputs = [...wrap.querySelectorAll("input")];
    if (e.target.value === "all" && e.target.checked) for (const i of inputs) i.checked = i.value === "all";
    else if (e.target.checked) inputs.find((i) => i.value === "all").checked = false;
  });
  return wrap;
}

function chosenDomains(wrap) {
  const picked = [...wrap.querySelectorAll("input:checked")].map((i) => i.value);
  return picked.length === 0 || picked.includes("all") ? ["all"] : picked;
}

function profileForm(domains, current, done) {
  const editing = current !== null;
  const a = current || { id: "", name: "", description: "", system_prompt: "", knowledge_domains: ["all"], enabled: true };
  const id = el("input", { name: "id", value: a.id, required: true, pattern: "[a-z][a-z0-9_\\-]{1,31}", placeholder: "e.g. coach-li", readonly: editing, size: 16 });
  const name = el("input", { name: "name", value: a.name, required: true, maxlength: 200, size: 18 });
  const description = el("input", { name: "description", value: a.description, maxlength: 2000, size: 40 });
  const prompt = el("textarea", { name: "system_prompt", rows: 5, cols: 80, maxlength: 20000, placeholder: "empty = the built-in prompts (Summer's); {today} is replaced by the date" });
  prompt.value = a.system_prompt;
  const enabled = el("input", { type: "checkbox", name: "enabled", checked: a.enabled });
  const picker = domainsPicker(domains, a.knowledge_domains);
  const message = el("p", { class: "field-error", role: "alert", "data-test": "assistant-error" });
  const form = el(
    "form",
    { id: "assistant-form", class: "profile", novalidate: true },  // our own check, with our message
    el("h3", {}, editing ? `Edit ${a.name} (${a.id})` : "New assistant"),
    el("div", { class: "filters" }, el("label", {}, "id ", id), el("label", {}, "name ", name), el("label", {}, "description ", description), el("label", {}, "enabled ", enabled)),
    picker,
    el("label", { class: "block" }, "persona / system prompt", prompt),
    el("div", {}, el("button", { type: "submit", "data-test": "save-assistant" }, editing ? "Save changes" : "Create assistant"), " ", editing ? el("button", { type: "button", class: "secondary", onclick: () => done(null) }, "Cancel") : null),
    message,
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    message.textContent = "";
    // the browser's own check first (with our words for the id's rule), then the server's
    const invalid = [id, name, description, prompt].filter((i) => !i.checkValidity());
    if (invalid.length) {
      message.textContent = invalid.map((i) => (i === id ? "id: 2-32 lower-case letters, digits, '-' or '_', starting with a letter" : `${i.name}: ${i.validationMessage}`)).join("; ");
      return;
    }
    const body = { name: name.value, description: description.value, system_prompt: prompt.value, knowledge_domains: chosenDomains(picker), enabled: enabled.checked };
    try {
      if (editing) await api("/api/admin/assistants/" + encodeURIComponent(a.id), { method: "PATCH", body });
      else await api("/api/admin/assistants", { method: "POST", body: { id: id.value, ...body } });
      done(a.id || id.value);
    } catch (err) {
      message.textContent = err.message;
    }
  });
  return form;
}

async function load(view, editId) {
  let data;
  try {
    data = await api("/api/admin/assistants");
  } catch (err) {
    clear(view, errorLine(err));
    return;
  }
  const formBox = el("div", { id: "assistant-form-box" });
  const reload = (id) => load(view, id === undefined ? null : id);
  const rows = data.assistants.map((a) => {
    const edit = el("button", { type: "button", class: "secondary", "data-test": "edit" }, "Edit");
    edit.addEventListener("click", () => clear(formBox, profileForm(data.knowledge_domains, a, () => reload(null))));
    const toggle = el("button", { type: "button", class: a.enabled ? "danger" : "", disabled: a.default, title: a.default ? "the default assistant answers unnamed turns" : "" }, a.enabled ? "Disable" : "Enable");
    toggle.addEventListener("click", async () => {
      try {
        await api("/api/admin/assistants/" + encodeURIComponent(a.id), { method: "PATCH", body: { enabled: !a.enabled } });
        reload(null);
      } catch (err) {
        formBox.prepend(errorLine(err));
      }
    });
    const settings = el("button", { type: "button", class: "secondary", "data-test": "settings" }, "Settings");
    settings.addEventListener("click", () => {
      selectAssistant(a.id);
      location.hash = "#settings";
    });
    return el(
      "tr",
      { "data-assistant": a.id, class: a.enabled ? "" : "revoked" },
      el("td", { class: "mono" }, a.id),
      el("td", { class: "strong" }, a.name, a.default ? el("span", { class: "note" }, " · default") : null),
      el("td", {}, a.description),
      el("td", { class: "note" }, a.system_prompt ? a.system_prompt.slice(0, 80) + (a.system_prompt.length > 80 ? "…" : "") : "(built-in)"),
      el("td", { class: "mono" }, a.knowledge_domains.join(", ")),
      el("td", { "data-test": "state" }, a.enabled ? "enabled" : "disabled"),
      el("td", { class: "num" }, a.turns),
      el("td", { class: "num" }, a.overrides),
      el("td", { class: "note" }, a.updated_by ? `${a.updated_by}, ${when(a.updated_at)}` : ""),
      el("td", {}, edit, " ", toggle, " ", settings),
    );
  });
  clear(
    view,
    el("h2", {}, "Assistants"),
    el("p", { class: "note" }, "Each assistant has its own persona, part of the knowledge base and settings. A chat request names one with \"assistant\" (default: summer). Changes apply from the next turn and are kept in the assistant's audit log (Settings page)."),
    el(
      "table",
      { id: "assistants" },
      el("thead", {}, el("tr", {}, ["id", "name", "description", "persona", "knowledge", "state", "turns", "overrides", "last change", ""].map((h) => el("th", {}, h)))),
      el("tbody", {}, rows),
    ),
    formBox,
  );
  const editing = editId ? data.assistants.find((a) => a.id === editId) : null;
  clear(formBox, profileForm(data.knowledge_domains, editing || null, () => reload(null)));
}

export function showAssistants(view) {
  return load(view, null);
}
