// The booking page: free slots, book, list, reschedule, cancel. Plain JS, no libraries; every text
// goes in through textContent. Anonymous bookings are remembered by their tokens in localStorage.
"use strict";

const TOKENS_KEY = "careerwise.bookingTokens";
const state = { from: null, chosen: null, moving: null, pendingKey: null };
const $ = (id) => document.getElementById(id);

function tokens() {
  try { return JSON.parse(localStorage.getItem(TOKENS_KEY) || "[]"); } catch { return []; }
}
function remember(token) {
  const all = tokens();
  if (!all.includes(token)) { all.push(token); localStorage.setItem(TOKENS_KEY, JSON.stringify(all.slice(-20))); }
}
function headers(extra) {
  const h = Object.assign({ "Content-Type": "application/json" }, extra || {});
  const t = tokens();
  if (t.length) h["X-Booking-Token"] = t.join(",");
  return h;
}
function say(text, isError) {
  const box = $("message");
  box.textContent = text;
  box.className = isError ? "msg error" : "msg";
  box.hidden = false;
}
async function call(method, url, body, extra) {
  const res = await fetch(url, { method, headers: headers(extra), body: body ? JSON.stringify(body) : undefined, credentials: "same-origin" });
  let data = null;
  try { data = await res.json(); } catch { data = null; }
  if (!res.ok) {
    const err = (data && data.error) || { message: res.status + " " + res.statusText };
    const e = new Error(err.message);
    e.details = err.details;
    e.status = res.status;
    throw e;
  }
  return data;
}
function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (cls) node.className = cls;
  return node;
}
function isoDay(d) { return d.toISOString().slice(0, 10); }

async function loadSlots() {
  const box = $("slots");
  box.replaceChildren(el("p", "載入中… Loading…", "tz"));
  const params = new URLSearchParams({ days: "7" });
  if (state.from) params.set("from", state.from);
  try {
    const data = await call("GET", "/api/slots?" + params);
    state.from = data.start_day;
    box.replaceChildren();
    if (!data.slots.length) box.append(noSlots(data));
    for (const s of data.slots) {
      const b = el("button", s.label, "slot");
      b.type = "button";
      b.title = s.label_en;
      b.setAttribute("aria-pressed", String(state.chosen && state.chosen.start === s.start));
      b.addEventListener("click", () => choose(s));
      box.append(b);
    }
  } catch (e) { say(e.message, true); }
}

// never a dead end: with no free slot this week, say what comes next (a later week's slot to jump to,
// or the day the next slots open) and how to reach the coach, from what /api/slots answered
function noSlots(data) {
  const box = el("div", undefined, "none");
  box.id = "none";
  const next = data.next_free_slot, opening = data.next_opening;
  if (!data.has_hours) {
    box.append(el("p", "教練目前沒有開放諮詢預約時段 · The coach has no consultation hours open right now"));
  } else {
    box.append(el("p", "這一週沒有可預約的時段 · No free slots this week"));
    if (next) {
      box.append(el("p", "之後最近的可預約時段：" + next.label + " · Next free slot: " + next.label_en, "next"));
      const jump = el("button", "跳到那一週 · Go to that week");
      jump.type = "button";
      jump.id = "jump";
      jump.addEventListener("click", () => { state.from = next.start_local.slice(0, 10); loadSlots(); });
      box.append(jump);
    } else if (opening) {
      box.append(el("p", "下一個有空檔的日子是 " + opening.label + "（台北時間），從 " + opening.opens_label
        + " 起開放預約 · The next day with a free slot is " + opening.label_en
        + " (Taipei time); it opens for booking on " + opening.opens_label_en, "next"));
    } else {
      box.append(el("p", "一年內都沒有可以預約的時段 · There are no free slots in the coming year", "next"));
    }
  }
  box.append(el("p", data.contact_line
    ? "想直接聯絡教練：" + data.contact_line + " · To reach the coach directly: " + data.contact_line
    : "教練還沒有留下其他聯絡方式；職涯問題可以先在聊天頁問 Summer · The coach has not left another way to reach them yet; ask Summer career questions in the chat meanwhile", "contact tz"));
  return box;
}

function choose(slot) {
  state.chosen = slot;
  state.pendingKey = null;
  for (const b of document.querySelectorAll(".slot")) b.setAttribute("aria-pressed", String(b.textContent === slot.label));
  if (state.moving) { reschedule(state.moving, slot); return; }
  $("chosen").textContent = "已選 Selected: " + slot.label;
}

function shift(days) {
  const base = state.from ? new Date(state.from + "T00:00:00Z") : new Date();
  base.setUTCDate(base.getUTCDate() + days);
  const today = isoDay(new Date());
  state.from = isoDay(base) < today ? today : isoDay(base);
  loadSlots();
}

function showNextFree(e) {
  const next = e.details && e.details.next_free_slots;
  say(e.message + (next && next.length ? "\n其他時段 Other times: " + next.map((s) => s.label).join("、") : ""), true);
}

async function book(ev) {
  ev.preventDefault();
  if (!state.chosen) { say("請先選擇時段 · Pick a slot first", true); return; }
  // one key per attempt: a double click or a retried request books once
  state.pendingKey = state.pendingKey || (crypto.randomUUID ? crypto.randomUUID() : String(Date.now()) + Math.random());
  $("submit").disabled = true;
  try {
    const body = { slot_start: state.chosen.start, name: $("name").value, contact: $("contact").value };
    const topic = $("topic").value.trim();
    if (topic) body.topic = topic;
    const b = await call("POST", "/api/bookings", body, { "Idempotency-Key": state.pendingKey });
    remember(b.token);
    say("預約完成 Booked: " + b.label + (b.topic ? "\n主題 Topic: " + b.topic : "") + "\n預約編號 Booking " + b.id);
    state.chosen = null; state.pendingKey = null;
    $("topic").value = "";
    $("chosen").textContent = "請先選擇時段 · Pick a slot first";
    await Promise.all([loadSlots(), loadMine()]);
  } catch (e) {
    if (e.status === 409) { state.pendingKey = null; showNextFree(e); loadSlots(); } else say(e.message, true);
  } finally { $("submit").disabled = false; }
}

async function loadMine() {
  const box = $("mine");
  box.replaceChildren();
  let data;
  try { data = await call("GET", "/api/bookings?scope=all"); } catch (e) {
    if (e.status === 401) { box.append(el("p", "尚無預約 · No bookings yet", "tz")); return; }
    say(e.message, true); return;
  }
  if (!data.bookings.length) box.append(el("p", "尚無預約 · No bookings yet", "tz"));
  for (const b of data.bookings) {
    const card = el("div", undefined, "booking " + b.status);
    card.append(el("div", b.label), el("div", b.name + " · " + (b.contact_kind === "line" ? "LINE: " : "") + b.contact, "tz"));
    if (b.topic) card.append(el("div", "主題 Topic: " + b.topic, "topic"));
    const status = { active: "有效 Active", cancelled: "已取消 Cancelled", rescheduled: "已改期 Moved" }[b.status] || b.status;
    card.append(el("div", status, "tz"));
    const actions = el("div", undefined, "actions");
    const ics = el("a", "加入行事曆 .ics");
    ics.href = b.ics_url;
    actions.append(ics);
    if (b.status === "active") {
      const move = el("button", "改期 Reschedule"); move.type = "button";
      move.addEventListener("click", () => startMove(b));
      const cancel = el("button", "取消 Cancel"); cancel.type = "button";
      cancel.addEventListener("click", () => cancelBooking(b));
      actions.append(move, cancel);
    }
    card.append(actions);
    box.append(card);
  }
}

function startMove(b) {
  state.moving = b;
  $("moving").textContent = "改期中：請選新時段 · Moving " + b.label + ": pick a new slot";
  $("moving").hidden = false;
  $("free-title").scrollIntoView({ behavior: "smooth" });
}

async function reschedule(b, slot) {
  try {
    const moved = await call("POST", "/api/bookings/" + b.id + "/reschedule", { slot_start: slot.start }, { "X-Booking-Token": b.token });
    say("改期完成 Moved to: " + moved.label);
  } catch (e) { if (e.status === 409) showNextFree(e); else say(e.message, true); }
  state.moving = null; state.chosen = null;
  $("moving").hidden = true;
  await Promise.all([loadSlots(), loadMine()]);
}

async function cancelBooking(b) {
  if (!confirm("確定取消 " + b.label + "？ Cancel this booking?")) return;
  try {
    await call("POST", "/api/bookings/" + b.id + "/cancel", null, { "X-Booking-Token": b.token });
    say("已取消 Cancelled: " + b.label);
  } catch (e) { say(e.message, true); }
  await Promise.all([loadSlots(), loadMine()]);
}

$("book").addEventListener("submit", book);
$("earlier").addEventListener("click", () => shift(-7));
$("later").addEventListener("click", () => shift(7));
loadSlots();
loadMine();
