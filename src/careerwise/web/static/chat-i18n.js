// Every string the chat page shows, in one dictionary: Traditional Chinese (the default) and English.
// t("key", {name: value}) fills {name} placeholders; elements with data-i18n* attributes are filled by apply().

const STRINGS = {
  "zh-Hant-TW": {
    "title": "Summer · CareerWise 職涯教練",
    "brand.sub": "職涯教練",
    "lang.switch": "English",
    "menu": "對話列表",
    "nav.bookings": "預約諮詢",
    "auth.login": "登入",
    "auth.signup": "註冊",
    "auth.logout": "登出",
    "auth.email": "電子郵件",
    "auth.password": "密碼",
    "auth.name": "顯示名稱（可不填）",
    "auth.submit.login": "登入",
    "auth.submit.signup": "建立帳號",
    "auth.to.signup": "還沒有帳號？註冊",
    "auth.to.login": "已經有帳號？登入",
    "auth.close": "關閉",
    "auth.anonymous": "訪客",
    "auth.failed": "無法完成：{message}",
    "conv.new": "＋ 新對話",
    "conv.empty": "還沒有對話",
    "conv.anon.note": "訪客的對話只留在這個分頁；登入後會保存對話紀錄。",
    "conv.delete": "刪除",
    "conv.delete.confirm": "確定刪除？",
    "conv.untitled": "（未命名）",
    "welcome.title": "嗨，我是 Summer",
    "welcome.body": "問我轉職、面試、薪水談判或履歷的問題。簡單的問題會逐字回答；需要深入分析的問題，我會整理成一份報告。",
    "input.placeholder": "問 Summer 任何職涯問題，例如：怎麼談薪水？",
    "input.label": "你的問題",
    "send": "送出",
    "stop": "停止",
    "upload": "上傳履歷",
    "upload.sending": "正在上傳履歷：{name}",
    "you": "你",
    "summer": "Summer",
    "search": "查詢知識庫：{query}（top_k {k}）",
    "search.nok": "查詢知識庫：{query}",
    "search.found": "找到 {n} 段資料",
    "search.failed": "知識庫查詢失敗",
    "thinking": "Summer 正在思考⋯",
    "progress.facet_search": "搜尋知識庫的各個面向",
    "progress.agent_started": "開始分析：{detail}",
    "progress.agent_finished": "分析完成：{detail}",
    // the agents' steps by facet: the page names the facet in its own language, never by its key
    "progress.agent_started.market": "開始分析：市場分析",
    "progress.agent_finished.market.ok": "分析完成：市場分析（{n} 項發現）",
    "progress.agent_finished.market.failed": "分析未完成：市場分析",
    "progress.agent_finished.market.skipped": "略過：市場分析（知識庫沒有相關資料）",
    "progress.agent_started.growth": "開始分析：成長建議",
    "progress.agent_finished.growth.ok": "分析完成：成長建議（{n} 項發現）",
    "progress.agent_finished.growth.failed": "分析未完成：成長建議",
    "progress.agent_finished.growth.skipped": "略過：成長建議（知識庫沒有相關資料）",
    "progress.agent_started.practice": "開始分析：實戰準備",
    "progress.agent_finished.practice.ok": "分析完成：實戰準備（{n} 項發現）",
    "progress.agent_finished.practice.failed": "分析未完成：實戰準備",
    "progress.agent_finished.practice.skipped": "略過：實戰準備（知識庫沒有相關資料）",
    "progress.merge": "整合報告",
    "progress.chain_step": "步驟：{detail}",
    "progress.reflection": "審閱草稿",
    "progress.fact_check": "核對數字與名稱：{detail}",
    "progress.resume": "實戰教練參考你儲存的履歷",
    "progress.waiting": "仍在思考（{seconds} 秒）",
    "progress.guards": "檢查報告內容",
    "sources": "參考來源",
    "citations": "引用",
    "risk.low": "風險：低",
    "risk.medium": "風險：中",
    "risk.high": "風險：高",
    "missing": "資料不足的面向：{list}",
    "stopped": "已停止",
    "cancelled": "這個回答已停止，只保存了停止前的內容。",
    "network": "連線中斷：{message}",
    "http.error": "無法送出（HTTP {status}）",
    "feedback.up": "▲ 有幫助",
    "feedback.down": "▼ 沒幫助",
    "feedback.thanks": "謝謝回饋",
    "feedback.failed": "回饋沒有送出：{message}",
    "source.loading": "載入中⋯",
    "source.failed": "無法載入來源：{message}",
    "source.title": "知識庫來源",
    "busy.retry": "上一個回答還在結束中，稍候重試⋯",
  },
  "en": {
    "title": "Summer · CareerWise career coach",
    "brand.sub": "career coach",
    "lang.switch": "中文",
    "menu": "Conversations",
    "nav.bookings": "Book a session",
    "auth.login": "Log in",
    "auth.signup": "Sign up",
    "auth.logout": "Log out",
    "auth.email": "Email",
    "auth.password": "Password",
    "auth.name": "Display name (optional)",
    "auth.submit.login": "Log in",
    "auth.submit.signup": "Create account",
    "auth.to.signup": "No account yet? Sign up",
    "auth.to.login": "Have an account? Log in",
    "auth.close": "Close",
    "auth.anonymous": "Guest",
    "auth.failed": "Could not finish: {message}",
    "conv.new": "+ New chat",
    "conv.empty": "No conversations yet",
    "conv.anon.note": "As a guest your chats stay in this tab only; log in to keep your history.",
    "conv.delete": "Delete",
    "conv.delete.confirm": "Delete?",
    "conv.untitled": "(untitled)",
    "welcome.title": "Hi, I'm Summer",
    "welcome.body": "Ask me about changing jobs, interviews, salary negotiation or your resume. Simple questions are answered as I write; questions that need analysis get a structured report.",
    "input.placeholder": "Ask Summer a career question, e.g. how do I negotiate salary?",
    "input.label": "Your question",
    "send": "Send",
    "stop": "Stop",
    "upload": "Upload resume",
    "upload.sending": "Uploading resume: {name}",
    "you": "You",
    "summer": "Summer",
    "search": "Searching the knowledge base: {query} (top_k {k})",
    "search.nok": "Searching the knowledge base: {query}",
    "search.found": "{n} passages found",
    "search.failed": "The knowledge-base search failed",
    "thinking": "Summer is thinking…",
    "progress.facet_search": "Searching the knowledge base facet by facet",
    "progress.agent_started": "Analysis started: {detail}",
    "progress.agent_finished": "Analysis finished: {detail}",
    "progress.agent_started.market": "Analysis started: market analysis",
    "progress.agent_finished.market.ok": "Analysis finished: market analysis ({n} findings)",
    "progress.agent_finished.market.failed": "Analysis failed: market analysis",
    "progress.agent_finished.market.skipped": "Skipped: market analysis (nothing in the knowledge base)",
    "progress.agent_started.growth": "Analysis started: growth advice",
    "progress.agent_finished.growth.ok": "Analysis finished: growth advice ({n} findings)",
    "progress.agent_finished.growth.failed": "Analysis failed: growth advice",
    "progress.agent_finished.growth.skipped": "Skipped: growth advice (nothing in the knowledge base)",
    "progress.agent_started.practice": "Analysis started: practical preparation",
    "progress.agent_finished.practice.ok": "Analysis finished: practical preparation ({n} findings)",
    "progress.agent_finished.practice.failed": "Analysis failed: practical preparation",
    "progress.agent_finished.practice.skipped": "Skipped: practical preparation (nothing in the knowledge base)",
    "progress.merge": "Merging the report",
    "progress.chain_step": "Step: {detail}",
    "progress.reflection": "Reviewing the draft",
    "progress.fact_check": "Checking figures and names: {detail}",
    "progress.resume": "The practice coach reads your stored resume",
    "progress.waiting": "Still thinking ({seconds} s)",
    "progress.guards": "Checking the report",
    "sources": "Sources",
    "citations": "Citations",
    "risk.low": "Risk: low",
    "risk.medium": "Risk: medium",
    "risk.high": "Risk: high",
    "missing": "Facets without enough material: {list}",
    "stopped": "Stopped",
    "cancelled": "This answer was stopped; only what came before the stop was kept.",
    "network": "Connection lost: {message}",
    "http.error": "Could not send (HTTP {status})",
    "feedback.up": "▲ Helpful",
    "feedback.down": "▼ Not helpful",
    "feedback.thanks": "Thanks for the feedback",
    "feedback.failed": "Feedback not sent: {message}",
    "source.loading": "Loading…",
    "source.failed": "Could not load the source: {message}",
    "source.title": "Knowledge-base source",
    "busy.retry": "The previous answer is still closing; retrying shortly…",
  },
};

export const LANGS = Object.keys(STRINGS);
const STORAGE_KEY = "cw.lang";
let current = LANGS.includes(localStorage.getItem(STORAGE_KEY)) ? localStorage.getItem(STORAGE_KEY) : LANGS[0];

export function lang() {
  return current;
}

export function t(key, vars = {}) {
  const text = STRINGS[current][key] ?? STRINGS[LANGS[0]][key] ?? key;
  return text.replace(/\{(\w+)\}/g, (_, name) => (name in vars ? String(vars[name]) : `{${name}}`));
}

export function toggle() {
  current = current === LANGS[0] ? LANGS[1] : LANGS[0];
  localStorage.setItem(STORAGE_KEY, current);
  apply(document);
}

// Fills the page: data-i18n (text, with data-i18n-vars as JSON), data-i18n-placeholder, data-i18n-label
// (aria-label and title). Runs again on every language switch, for the messages already shown too.
export function apply(root) {
  document.documentElement.lang = current;
  document.title = t("title");
  for (const el of root.querySelectorAll("[data-i18n]")) {
    el.textContent = t(el.dataset.i18n, el.dataset.i18nVars ? JSON.parse(el.dataset.i18nVars) : {});
  }
  for (const el of root.querySelectorAll("[data-i18n-placeholder]")) el.placeholder = t(el.dataset.i18nPlaceholder);
  for (const el of root.querySelectorAll("[data-i18n-label]")) {
    el.setAttribute("aria-label", t(el.dataset.i18nLabel));
    el.title = t(el.dataset.i18nLabel);
  }
}
