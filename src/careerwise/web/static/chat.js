// The minimal chat page: POST /api/chat and read the Server-Sent Events as they arrive.
// Model output is untrusted: it is only ever inserted as text (textContent), never as HTML.
"use strict";
const log = document.getElementById("log");
const form = document.getElementById("ask");
const input = document.getElementById("message");
const stopBtn = document.getElementById("stop");
const history = [];
let conversationId = null;
let controller = null;

function add(cls, text) {
  const el = document.createElement("div");
  el.className = cls;
  el.textContent = text || "";
  log.appendChild(el);
  log.scrollTop = log.scrollHeight;
  return el;
}

function parseFrames(buffer, onEvent) {
  let idx;
  while ((idx = buffer.indexOf("\n\n")) >= 0) {
    const frame = buffer.slice(0, idx);
    buffer = buffer.slice(idx + 2);
    let name = "message", data = "";
    for (const line of frame.split("\n")) {
      if (line.startsWith("event: ")) name = line.slice(7);
      else if (line.startsWith("data: ")) data += line.slice(6);
    }
    if (data) onEvent(name, JSON.parse(data));
  }
  return buffer;
}

async function ask(message) {
  add("msg user", message);
  const box = add("msg assistant", "");
  const answer = document.createElement("span");
  box.appendChild(answer);
  const status = add("status", "");
  const sources = [];
  let text = "";
  controller = new AbortController();
  stopBtn.hidden = false;
  try {
    const body = { message, history: history.slice(-20) };
    if (conversationId) { body.history = []; body.conversation_id = conversationId; }
    const res = await fetch("/api/chat", {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body), signal: controller.signal,
    });
    if (!res.ok) {
      const err = await res.json().catch(() => ({}));
      status.className = "notice";
      status.textContent = (err.error && err.error.message) || `HTTP ${res.status}`;
      return;
    }
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer = parseFrames(buffer + decoder.decode(value, { stream: true }), (name, data) => {
        if (name === "delta") { text += data.text; answer.textContent = text; log.scrollTop = log.scrollHeight; }
        else if (name === "tool_call") {
          const q = data.effective_arguments.query || "";
          const k = data.effective_arguments.top_k;
          status.textContent = `查詢知識庫：${q}` + (k ? `（top_k ${k}）` : "");
        } else if (name === "tool_result") {
          status.textContent = data.ok ? `找到 ${data.returned} 段資料` : "知識庫查詢失敗";
          for (const s of data.sources) if (!sources.some((x) => x.id === s.id)) sources.push(s);
        } else if (name === "degraded") { add("notice", data.message); }
        else if (name === "error") { status.className = "notice"; status.textContent = data.message; }
        else if (name === "done") { conversationId = data.conversation_id; if (!status.className.includes("notice")) status.textContent = ""; }
      });
    }
    if (sources.length) {
      const el = document.createElement("div");
      el.className = "sources";
      el.textContent = "參考來源：" + sources.map((s) => s.title).join("、");
      box.appendChild(el);
    }
    history.push({ role: "user", content: message }, { role: "assistant", content: text });
  } catch (e) {
    status.className = "notice";
    status.textContent = e.name === "AbortError" ? "已停止" : "連線中斷：" + e.message;
  } finally {
    stopBtn.hidden = true;
    controller = null;
  }
}

form.addEventListener("submit", (ev) => {
  ev.preventDefault();
  const message = input.value.trim();
  if (!message || controller) return;
  input.value = "";
  ask(message);
});
input.addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); form.requestSubmit(); }
});
stopBtn.addEventListener("click", () => controller && controller.abort());
