// The chat page: accounts, the conversation list, sending a question and showing its answer as the
// events arrive. Simple questions stream word by word; medium and complex ones (the route event's tier)
// lock the input behind a "Summer 正在思考⋯" indicator until the report arrives. When a turn is done
// the streamed text is swapped for the server's sanitized HTML (chat-view.js explains why).

import { api, ApiError, events, postChat, postResume } from "./chat-api.js";
import * as i18n from "./chat-i18n.js";
import { Answer, el, localize, userMessage } from "./chat-view.js";

const $ = (id) => document.getElementById(id);
const log = $("log");
const form = $("ask");
const input = $("message");
const sendBtn = $("send");
const stopBtn = $("stop");
const ANON_KEY = "cw.anon.conversations"; // sessionStorage: this tab only, by design

const state = {
  user: null,
  conversationId: null,
  controller: null,
  stoppedAt: 0,
};

const hooks = { openSource, rate };

// ---------------------------------------------------------------------------------------------- input

function lockInput(locked) {
  input.disabled = locked;
  sendBtn.disabled = locked;
  $("resume").disabled = locked;
  form.classList.toggle("locked", locked);
}

function running(on) {
  stopBtn.hidden = !on;
  sendBtn.hidden = on;
  if (!on) lockInput(false);
}

function scrollDown() {
  log.scrollTop = log.scrollHeight;
}

// --------------------------------------------------------------------------------------------- a turn

async function ensureConversation(title) {
  if (state.conversationId) return state.conversationId;
  const conv = await api("POST", "/api/conversations", { title: title.slice(0, 60) });
  state.conversationId = conv.id;
  if (!state.user) rememberAnonymous(conv);
  await refreshConversations();
  return conv.id;
}

async function ask(message) {
  $("welcome").hidden = true;
  log.append(userMessage(message));
  const answer = new Answer(hooks);
  log.append(answer.root);
  scrollDown();
  const controller = new AbortController();
  state.controller = controller;
  running(true);
  try {
    const id = await ensureConversation(message);
    const res = await sendWithRetry({ message, conversation_id: id }, controller.signal, answer);
    await follow(res, answer);
  } catch (e) {
    failed(e, answer);
  } finally {
    state.controller = null;
    running(false);
    input.focus();
  }
}

// Right after a stop the server may still be closing that turn (409 conversation_busy): retry briefly.
async function sendWithRetry(body, signal, answer) {
  for (let attempt = 0; ; attempt++) {
    const res = await postChat(body, signal);
    const recentStop = Date.now() - state.stoppedAt < 5000;
    if (res.status !== 409 || !recentStop || attempt >= 8) return res;
    if (attempt === 0) answer.noticeKey("info", "busy.retry");
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}

async function uploadResume(file) {
  $("welcome").hidden = true;
  const note = el("article", "msg user");
  note.append(el("div", "who", null, { key: "you" }), el("div", "text", null, { key: "upload.sending", vars: { name: file.name } }));
  log.append(note);
  const answer = new Answer(hooks);
  answer.think();
  log.append(answer.root);
  scrollDown();
  const controller = new AbortController();
  state.controller = controller;
  running(true);
  lockInput(true);
  try {
    const id = await ensureConversation(file.name);
    await follow(await postResume(file, id, controller.signal), answer);
  } catch (e) {
    failed(e, answer);
  } finally {
    state.controller = null;
    running(false);
  }
}

function failed(e, answer) {
  answer.stopThinking();
  if (e.name === "AbortError") {
    answer.noticeKey("cancelled", "stopped");
  } else if (e instanceof ApiError) {
    answer.notice("error", e.message);
  } else {
    answer.noticeKey("error", "network", { message: e.message });
  }
  refreshConversations();
}

// Reads one answer's events into its view.
async function follow(res, answer) {
  let done = null;
  for await (const { name, data } of events(res)) {
    switch (name) {
      case "route":
        if (data.tier === "medium" || data.tier === "complex") {
          answer.think();
          lockInput(true);
        }
        break;
      case "delta":
        answer.appendText(data.text);
        break;
      case "tool_call": {
        const args = data.effective_arguments || {};
        answer.search(String(args.query ?? ""), args.top_k);
        break;
      }
      case "tool_result":
        answer.searchDone(data.ok, data.returned, data.sources);
        break;
      case "progress":
        answer.think();
        answer.progressStep(data.stage, data.detail);
        break;
      case "section": // a deep report's section, as soon as it is ready; the report replaces them
        answer.showSection(data);
        break;
      case "report":
        answer.stopThinking();
        answer.showReport(data);
        break;
      case "degraded":
        answer.notice("degraded", data.message);
        break;
      case "error":
        answer.notice("error", data.message);
        break;
      case "done":
        done = data;
        break;
      default:
        break; // an event this page does not show (e.g. the resume upload's own "resume" record)
    }
    scrollDown();
  }
  answer.stopThinking();
  if (done === null) return;
  if (done.status === "cancelled") answer.noticeKey("cancelled", "cancelled");
  try {
    answer.finish(await api("GET", `/api/messages/${done.message_id}`));
  } catch (e) {
    answer.notice("error", e.message);
  }
  scrollDown();
  refreshConversations();
}

// ------------------------------------------------------------------------------------ conversations

function anonymous() {
  try {
    return JSON.parse(sessionStorage.getItem(ANON_KEY) || "[]");
  } catch {
    return []; // a damaged entry: start the list again
  }
}

function rememberAnonymous(conv) {
  const list = anonymous().filter((c) => c.id !== conv.id);
  list.unshift({ id: conv.id, title: conv.title });
  sessionStorage.setItem(ANON_KEY, JSON.stringify(list.slice(0, 50)));
}

function forgetAnonymous(id) {
  sessionStorage.setItem(ANON_KEY, JSON.stringify(anonymous().filter((c) => c.id !== id)));
}

let listGeneration = 0;

async function refreshConversations() {
  // a refresh still waiting for the server when the user logs out (or another refresh starts) must not
  // paint its stale list over the newer one
  const generation = ++listGeneration;
  let list = anonymous();
  if (state.user) {
    try {
      list = (await api("GET", "/api/conversations")).conversations;
    } catch (e) {
      list = [];
      console.error("could not load the conversations", e);
    }
  }
  if (generation !== listGeneration) return;
  const box = $("conversations");
  box.replaceChildren();
  if (!list.length) box.append(el("li", "empty", null, { key: "conv.empty" }));
  for (const conv of list) box.append(conversationItem(conv));
  $("anon-note").hidden = Boolean(state.user);
}

function conversationItem(conv) {
  const item = el("li", conv.id === state.conversationId ? "conv current" : "conv");
  item.dataset.id = conv.id;
  const open = el("button", "open", conv.title || i18n.t("conv.untitled"));
  open.type = "button";
  open.addEventListener("click", () => openConversation(conv.id));
  const del = el("button", "delete", "×");
  del.type = "button";
  del.dataset.i18nLabel = "conv.delete";
  del.setAttribute("aria-label", i18n.t("conv.delete"));
  del.title = i18n.t("conv.delete");
  // two clicks instead of a confirm() dialog: the page never opens a browser dialog
  del.addEventListener("click", async () => {
    if (!del.classList.contains("armed")) {
      del.classList.add("armed");
      localize(del, "conv.delete.confirm");
      return;
    }
    await deleteConversation(conv.id);
  });
  item.append(open, del);
  return item;
}

async function openConversation(id) {
  if (state.controller) return;
  closeMenu();
  let conv;
  try {
    conv = await api("GET", `/api/conversations/${id}`);
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) forgetAnonymous(id);
    await refreshConversations();
    return;
  }
  state.conversationId = conv.id;
  clearLog();
  $("welcome").hidden = conv.messages.length > 0;
  for (const m of conv.messages) {
    log.append(m.role === "user" ? userMessage(m.content) : Answer.fromView(m, hooks).root);
  }
  scrollDown();
  await refreshConversations();
}

async function deleteConversation(id) {
  try {
    await api("DELETE", `/api/conversations/${id}`);
  } catch (e) {
    if (!(e instanceof ApiError && e.status === 404)) {
      console.error("could not delete the conversation", e);
      return;
    }
  }
  forgetAnonymous(id);
  if (state.conversationId === id) newConversation();
  await refreshConversations();
}

function clearLog() {
  for (const node of [...log.children]) if (node.id !== "welcome") node.remove();
}

function newConversation() {
  if (state.controller) return;
  state.conversationId = null;
  clearLog();
  $("welcome").hidden = false;
  closeMenu();
  refreshConversations();
  input.focus();
}

// ------------------------------------------------------------------------------- sources, feedback

async function openSource(source) {
  const dialog = $("source");
  const body = $("source-body");
  body.replaceChildren(el("p", "muted", null, { key: "source.loading" }));
  dialog.showModal();
  const query = new URLSearchParams({ document_id: source.id });
  if (source.section) query.set("section", source.section);
  try {
    const { chunks } = await api("GET", `/api/knowledge/chunks?${query}`);
    body.replaceChildren(el("h3", "doc-title", chunks[0].document_title));
    if (source.section) body.append(el("h4", "doc-section", source.section));
    for (const chunk of chunks) body.append(el("p", "passage", chunk.text));
  } catch (e) {
    body.replaceChildren(el("p", "notice error", null, { key: "source.failed", vars: { message: e.message } }));
  }
}

async function rate(messageId, rating, answer) {
  try {
    await api("POST", `/api/messages/${messageId}/feedback`, { rating });
    return true;
  } catch (e) {
    answer.noticeKey("error", "feedback.failed", { message: e.message });
    return false;
  }
}

// --------------------------------------------------------------------------------------- accounts

let authMode = "login";

function showAuth(mode) {
  authMode = mode;
  const signup = mode === "signup";
  localize($("auth-title"), signup ? "auth.signup" : "auth.login");
  localize($("auth-submit"), signup ? "auth.submit.signup" : "auth.submit.login");
  localize($("auth-switch"), signup ? "auth.to.login" : "auth.to.signup");
  $("auth-name-row").hidden = !signup;
  $("auth-password").autocomplete = signup ? "new-password" : "current-password";
  $("auth-error").hidden = true;
  if (!$("auth").open) $("auth").showModal();
  $("auth-email").focus();
}

async function submitAuth(ev) {
  ev.preventDefault();
  const body = { email: $("auth-email").value, password: $("auth-password").value };
  if (authMode === "signup") body.display_name = $("auth-name").value;
  try {
    const user = await api("POST", authMode === "signup" ? "/api/auth/signup" : "/api/auth/login", body);
    $("auth").close();
    $("auth-password").value = "";
    await signedIn(user);
  } catch (e) {
    const line = $("auth-error");
    localize(line, "auth.failed", { message: e.message });
    line.hidden = false;
  }
}

async function signedIn(user) {
  state.user = user;
  $("who").textContent = user ? user.display_name || user.email : "";
  $("login-open").hidden = Boolean(user);
  $("logout").hidden = !user;
  // an anonymous conversation is not carried into an account (or back out of it)
  newConversation();
}

async function logout() {
  try {
    await api("POST", "/api/auth/logout");
  } catch (e) {
    console.error("log-out failed", e);
  }
  await signedIn(null);
}

async function whoAmI() {
  try {
    return await api("GET", "/api/auth/me");
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return null;
    throw e;
  }
}

// ----------------------------------------------------------------------------------------- layout

function closeMenu() {
  document.body.classList.remove("menu-open");
  $("menu").setAttribute("aria-expanded", "false");
  $("scrim").hidden = true;
}

function toggleMenu() {
  const open = !document.body.classList.contains("menu-open");
  document.body.classList.toggle("menu-open", open);
  $("menu").setAttribute("aria-expanded", String(open));
  $("scrim").hidden = !open;
}

// ------------------------------------------------------------------------------------------ start

function wire() {
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const message = input.value.trim();
    if (!message || state.controller) return;
    input.value = "";
    ask(message);
  });
  input.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      form.requestSubmit();
    }
  });
  stopBtn.addEventListener("click", () => {
    if (!state.controller) return;
    state.stoppedAt = Date.now();
    state.controller.abort();
  });
  $("new-chat").addEventListener("click", newConversation);
  $("menu").addEventListener("click", toggleMenu);
  $("scrim").addEventListener("click", closeMenu);
  $("lang").addEventListener("click", () => i18n.toggle());
  $("login-open").addEventListener("click", () => showAuth("login"));
  $("logout").addEventListener("click", logout);
  $("auth-form").addEventListener("submit", submitAuth);
  $("auth-switch").addEventListener("click", () => showAuth(authMode === "login" ? "signup" : "login"));
  $("auth-close").addEventListener("click", () => $("auth").close());
  $("source-close").addEventListener("click", () => $("source").close());
  $("resume").addEventListener("change", () => {
    const file = $("resume").files[0];
    $("resume").value = "";
    if (file && !state.controller) uploadResume(file);
  });
}

async function start() {
  i18n.apply(document);
  wire();
  let user = null;
  try {
    user = await whoAmI();
  } catch (e) {
    console.error("could not tell who is logged in", e);
  }
  await signedIn(user);
  document.body.dataset.ready = "true";
}

start();
