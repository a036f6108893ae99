// Consultations: the coach's bookings (upcoming and past; cancel, move, a day's .ics) and the weekly
// hours, slot settings and dated exceptions as forms. Every change goes through the same API routes
// the chat page and `careerwise slots` use; the server validates again.

import { api, clear, el, errorLine, query, table } from "/static/admin.util.js";

const DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];
const RANGE = /^([01]\d|2[0-3]):([0-5]\d)\s*[-–]\s*(([01]\d|2[0-3]):([0-5]\d)|24:00)$/;
const STATUS = { active: "active", cancelled: "cancelled", rescheduled: "moved" };

// the health strip's part: a warning when nothing can be booked, a note while defaults apply
export async function hoursWarning() {
  const av = await api("/api/admin/availability");
  if (!av.has_hours) {
    return el("span", { class: "warn-text", "data-test": "no-hours" }, " · No consultation hours are set: the chat cannot offer any booking. ", el("a", { href: "#bookings" }, "Set hours"));
  }
  if (av.hours_source === "default") {
    return el("span", { class: "warn-text", "data-test": "default-hours" }, " · Consultation hours are the shipped defaults. ", el("a", { href: "#bookings" }, "Confirm or edit"));
  }
  return null;
}

function localDay(iso, tz) {
  // the booking's day in the coach's zone, as YYYY-MM-DD (sv-SE writes ISO dates)
  return new Date(iso).toLocaleDateString("sv-SE", { timeZone: tz });
}

async function downloadDay(day, message) {
  message.textContent = "";
  const r = await fetch("/api/admin/bookings/ics" + query({ day }), { credentials: "same-origin" });
  if (!r.ok) {
    const data = await r.json().catch(() => null);
    message.textContent = (data && data.error && data.error.message) || r.statusText;
    return;
  }
  const url = URL.createObjectURL(await r.blob());
  const a = el("a", { href: url, download: `careerwise-${day}.ics` });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

async function moveForm(booking, cell, reload, av) {
  const slots = await api("/api/slots" + query({ days: Math.min(90, av.horizon_days + 1) }));
  const select = el(
    "select",
    { "data-test": "move-to", "aria-label": "new time" },
    slots.slots.map((s) => el("option", { value: s.start }, s.label_en)),
  );
  const go = el("button", { type: "button", "data-test": "move-confirm", disabled: !slots.slots.length }, "Move here");
  const message = el("span", { class: "field-error", role: "alert" });
  go.addEventListener("click", async () => {
    try {
      await api(`/api/bookings/${encodeURIComponent(booking.id)}/reschedule`, { method: "POST", body: { slot_start: select.value } });
      await reload();
    } catch (err) {
      message.textContent = err.message;
    }
  });
  clear(cell, slots.slots.length ? select : el("span", {}, "No free slot to move to."), " ", go, " ", message);
}

async function loadBookings(box, scope, av) {
  let data;
  try {
    data = await api("/api/admin/bookings" + query({ scope }));
  } catch (err) {
    clear(box, errorLine(err));
    return;
  }
  const reload = () => loadBookings(box, scope, av);
  const rows = data.bookings.map((b) => {
    const actions = el("td", { class: "actions" });
    if (b.status === "active" && scope === "upcoming" && new Date(b.slot_start) > new Date()) {
      const cancel = el("button", { type: "button", class: "danger", "data-test": "cancel" }, "Cancel");
      const move = el("button", { type: "button", class: "secondary", "data-test": "move" }, "Move");
      const message = el("span", { class: "field-error", role: "alert" });
      cancel.addEventListener("click", async () => {
        if (!confirm(`Cancel ${b.name}'s consultation on ${b.label_en}?`)) return;
        try {
          await api(`/api/bookings/${encodeURIComponent(b.id)}/cancel`, { method: "POST" });
          await reload();
        } catch (err) {
          message.textContent = err.message;
        }
      });
      move.addEventListener("click", () => moveForm(b, actions, reload, av).catch((err) => (message.textContent = err.message)));
      actions.append(cancel, " ", move, " ", message);
    }
    return el(
      "tr",
      { "data-booking": b.id, class: b.status === "active" ? "" : "inactive" },
      el("td", { "data-test": "when" }, b.label_en),
      el("td", { "data-test": "name" }, b.name),
      el("td", { "data-test": "contact" }, (b.contact_kind === "line" ? "LINE " : "") + b.contact),
      el("td", { "data-test": "topic", class: "question" }, b.topic || "–"),
      el("td", { "data-test": "status" }, STATUS[b.status] || b.status),
      el("td", {}, b.channel),
      actions,
    );
  });
  clear(
    box,
    rows.length
      ? table(["when", "name", "contact", "topic", "status", "channel", ""], rows, { id: "bookings-table" })
      : el("p", { "data-test": "no-bookings" }, scope === "past" ? "No past consultations." : "No upcoming consultations."),
  );
}

function bookingsSection(av) {
  const box = el("div", { id: "bookings-out" });
  const scope = el("select", { name: "scope", "data-test": "scope" }, el("option", { value: "upcoming" }, "upcoming"), el("option", { value: "past" }, "past"));
  const first = el("input", { type: "date", name: "day", "data-test": "ics-day", value: localDay(new Date().toISOString(), av.timezone) });
  const exportButton = el("button", { type: "button", class: "secondary", "data-test": "ics-export" }, "Export day (.ics)");
  const message = el("span", { class: "field-error", role: "alert", "data-test": "ics-error" });
  scope.addEventListener("change", () => loadBookings(box, scope.value, av));
  exportButton.addEventListener("click", () => downloadDay(first.value, message).catch((err) => (message.textContent = err.message)));
  loadBookings(box, "upcoming", av);
  return [
    el("div", { class: "filters" }, el("label", {}, "show", scope), el("label", {}, "day", first), exportButton, message),
    box,
  ];
}

// --- hours ----------------------------------------------------------------------------------------

function rangesText(ranges) {
  return ranges.map((r) => `${r.start}-${r.end}`).join(", ");
}

function parseRanges(text, day) {
  const parts = text.split(/[,，]/).map((s) => s.trim()).filter(Boolean);
  return parts.map((p) => {
    const m = RANGE.exec(p);
    if (!m) throw new Error(`${day}: "${p}" is not a range like 10:00-18:00`);
    const [start, end] = p.split(/\s*[-–]\s*/);
    if (start >= end) throw new Error(`${day}: ${p} ends before it starts`);
    return { start, end };
  });
}

function hoursForm(av, rerender) {
  const inputs = DAYS.map((d, i) =>
    el("input", { type: "text", name: `day-${i}`, "data-test": `hours-${i}`, value: rangesText(av.weekly[String(i)]), placeholder: "closed", size: 28 }),
  );
  const number = (name, value, min, max) => el("input", { type: "number", name, value, min, max, step: 1, required: true, size: 5 });
  const slot = number("slot_minutes", av.slot_minutes, 10, 240);
  const horizon = number("horizon_days", av.horizon_days, 1, 365);
  const notice = number("min_notice_minutes", av.min_notice_minutes, 0, 10080);
  const message = el("p", { class: "field-error", role: "alert", "data-test": "hours-error" });
  const form = el(
    "form",
    { id: "hours-form", class: "profile" },
    el("p", { class: "note" }, `Times are ${av.timezone}. Several ranges a day: "10:00-12:00, 14:00-18:00"; empty = closed.`),
    DAYS.map((d, i) => el("label", { class: "block" }, d, inputs[i])),
    el("div", { class: "filters" }, el("label", {}, "slot minutes", slot), el("label", {}, "book up to (days ahead)", horizon), el("label", {}, "minimum notice (minutes)", notice)),
    el("button", { type: "submit", "data-test": "hours-save" }, "Save hours"),
    message,
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    message.textContent = "";
    let days;
    try {
      days = Object.fromEntries(DAYS.map((d, i) => [String(i), parseRanges(inputs[i].value, d)]));
    } catch (err) {
      message.textContent = err.message;
      return;
    }
    for (const input of [slot, horizon, notice]) {
      if (!input.checkValidity()) {
        message.textContent = `${input.name}: ${input.validationMessage}`;
        return;
      }
    }
    try {
      await api("/api/admin/availability/weekly", { method: "PUT", body: { days } });
      const settings = { slot_minutes: +slot.value, horizon_days: +horizon.value, min_notice_minutes: +notice.value };
      if (settings.slot_minutes !== av.slot_minutes || settings.horizon_days !== av.horizon_days || settings.min_notice_minutes !== av.min_notice_minutes) {
        await api("/api/admin/availability/settings", { method: "PATCH", body: settings });
      }
      await rerender();
    } catch (err) {
      message.textContent = err.message;
    }
  });
  return form;
}

function exceptionsPart(av, rerender) {
  const rows = av.exceptions.map((x) => {
    const remove = el("button", { type: "button", class: "danger", "data-test": "remove-exception" }, "Remove");
    const failed = el("span", { class: "field-error", role: "alert" });
    remove.addEventListener("click", async () => {
      try {
        await api(`/api/admin/availability/exceptions/${x.id}`, { method: "DELETE" });
        await rerender();
      } catch (err) {
        failed.textContent = err.message;
      }
    });
    return el(
      "tr",
      { "data-exception": x.id },
      el("td", {}, x.day),
      el("td", {}, x.kind === "closed" ? "closed" : "extra hours"),
      el("td", {}, x.start ? `${x.start}-${x.end}` : "all day"),
      el("td", {}, x.note || ""),
      el("td", {}, remove, " ", failed),
    );
  });
  const day = el("input", { type: "date", name: "day", required: true, "data-test": "exception-day" });
  const kind = el("select", { name: "kind", "data-test": "exception-kind" }, el("option", { value: "closed" }, "closed"), el("option", { value: "extra" }, "extra hours"));
  const start = el("input", { type: "time", name: "start", "data-test": "exception-start" });
  const end = el("input", { type: "time", name: "end", "data-test": "exception-end" });
  const note = el("input", { type: "text", name: "note", maxlength: 200, size: 18, "data-test": "exception-note" });
  const message = el("span", { class: "field-error", role: "alert", "data-test": "exception-error" });
  const form = el(
    "form",
    { id: "exception-form", class: "filters" },
    el("label", {}, "day", day),
    el("label", {}, "kind", kind),
    el("label", {}, "from (empty: all day)", start),
    el("label", {}, "to", end),
    el("label", {}, "note", note),
    el("button", { type: "submit", "data-test": "exception-add" }, "Add"),
    message,
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    message.textContent = "";
    const body = { day: day.value, kind: kind.value, note: note.value };
    if (start.value || end.value) Object.assign(body, { start: start.value, end: end.value });
    try {
      await api("/api/admin/availability/exceptions", { method: "POST", body });
      await rerender();
    } catch (err) {
      message.textContent = err.message;
    }
  });
  return [
    rows.length ? table(["day", "kind", "hours", "note", ""], rows, { id: "exceptions-table" }) : el("p", { class: "note" }, "No exceptions."),
    form,
  ];
}

function banner(av, rerender) {
  const parts = [];
  if (av.hours_source === "default" && av.has_hours) {
    const confirmButton = el("button", { type: "button", "data-test": "confirm-hours" }, "Confirm these hours");
    const failed = el("span", { class: "field-error", role: "alert" });
    confirmButton.addEventListener("click", async () => {
      try {
        await api("/api/admin/availability/confirm", { method: "POST" });
        await rerender();
      } catch (err) {
        failed.textContent = err.message;
      }
    });
    parts.push(
      el("div", { class: "banner warn", "data-test": "hours-banner" }, el("strong", {}, "Default hours — confirm or edit. "), `These are the shipped defaults (${av.default_hours}); the chat offers them until you confirm or change them. `, confirmButton, " ", failed),
    );
  }
  if (!av.has_hours) {
    parts.push(el("div", { class: "banner bad", "data-test": "no-hours-banner" }, el("strong", {}, "No consultation hours are set. "), "The chat tells people there is nothing to book and how to reach you. Add hours below."));
  }
  if (!av.contact_line) {
    parts.push(el("div", { class: "banner warn", "data-test": "no-contact-banner" }, "No contact line is configured (CAREERWISE_BOOKING_CONTACT): when no slot is free, the chat cannot tell people how to reach you."));
  }
  return parts;
}

export async function showBookings(view, refreshHealth) {
  let av;
  try {
    av = await api("/api/admin/availability");
  } catch (err) {
    clear(view, el("h2", {}, "Bookings"), errorLine(err));
    return;
  }
  const rerender = async () => {
    await showBookings(view, refreshHealth);
    if (refreshHealth) await refreshHealth();
  };
  clear(
    view,
    el("h2", {}, "Bookings"),
    banner(av, rerender),
    bookingsSection(av),
    el("h3", {}, "Weekly hours"),
    hoursForm(av, rerender),
    el("h3", {}, "Exceptions (holidays, extra hours)"),
    exceptionsPart(av, rerender),
  );
}
