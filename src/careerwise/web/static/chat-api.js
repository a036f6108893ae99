// The HTTP side of the chat page: JSON calls with the API's error body, and a reader for the
// Server-Sent Events that POST /api/chat (and POST /api/resumes?stream=1) answer with.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function errorOf(res) {
  let body = null;
  try {
    body = await res.json();
  } catch {
    body = null; // not JSON (a proxy's error page): the status says enough
  }
  const err = body && body.error;
  return new ApiError(res.status, (err && err.code) || "http_error", (err && err.message) || `HTTP ${res.status}`);
}

export async function api(method, path, body) {
  const init = { method, headers: { Accept: "application/json" } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  if (!res.ok) throw await errorOf(res);
  return res.status === 204 ? null : res.json();
}

// Yields {name, data} for every frame of an event stream. A 4xx/5xx before the stream throws ApiError.
export async function* events(res) {
  if (!res.ok) throw await errorOf(res);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let idx;
    while ((idx = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, idx);
      buffer = buffer.slice(idx + 2);
      let name = "message";
      let data = "";
      for (const line of frame.split("\n")) {
        if (line.startsWith("event: ")) name = line.slice(7);
        else if (line.startsWith("data: ")) data += line.slice(6);
      }
      if (data) yield { name, data: JSON.parse(data) };
    }
  }
}

export function postChat(body, signal) {
  return fetch("/api/chat", {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
    body: JSON.stringify(body),
    signal,
  });
}

export function postResume(file, conversationId, signal) {
  const form = new FormData();
  form.append("file", file);
  form.append("conversation_id", conversationId);
  return fetch("/api/resumes?stream=1", { method: "POST", body: form, signal });
}
