// The Toolwire admin panel: plain DOM code over the admin REST API (no build step).
"use strict";

const KEY = "toolwire-admin-key";
const LOG_PAGE = 50;
const $ = (id) => document.getElementById(id);
const state = { logOffset: 0, stats: new Map(), mostCalls: 1, events: null, refreshing: null, caller: null };

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

class Unauthorized extends Error {}

async function api(path, options = {}) {
  const headers = { ...(options.headers || {}) };
  const key = sessionStorage.getItem(KEY);
  if (key) headers.authorization = `Bearer ${key}`;
  const method = options.method || "GET";
  // The API takes changes as JSON only, bodiless ones too (no cross-origin page can send that).
  if (method !== "GET") headers["content-type"] = "application/json";
  const response = await fetch(`api/${path}`, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  if (!response.ok) {
    // Every API error is {"error": {"message", ...}}.
    const error = (await response.json().catch(() => ({}))).error;
    const message = typeof error?.message === "string" ? error.message : `HTTP ${response.status}`;
    throw response.status === 401 || response.status === 403
      ? new Unauthorized(message) : new Error(message);
  }
  return response.json();
}

function announce(text) {
  $("live").textContent = text;
}

function failed(error) {
  if (error instanceof Unauthorized) return signOut(error.message);
  announce(t("error", { message: error.message }));
}

// ---- sign in ----

async function start() {
  try {
    const me = await api("whoami");
    state.caller = me.caller;
    $("whoami").textContent = t("signed.in", { who: me.caller });
    $("signout").hidden = me.caller === "local";
    $("login").hidden = true;
    $("panel").hidden = false;
    await refreshAll();
    listen();
  } catch (error) {
    if (error instanceof Unauthorized) showLogin(sessionStorage.getItem(KEY) ? error.message : "");
    else announce(t("error", { message: error.message }));
  }
}

function showLogin(message) {
  $("panel").hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = message || "";
  $("key").focus();
}

function signOut(message) {
  sessionStorage.removeItem(KEY);
  if (state.events) state.events.abort();
  $("whoami").textContent = "";
  $("signout").hidden = true;
  showLogin(message);
}

// ---- tabs (arrow keys move between them, as in the WAI-ARIA tabs pattern) ----

function selectTab(tab) {
  for (const other of document.querySelectorAll('[role="tab"]')) {
    const selected = other === tab;
    other.setAttribute("aria-selected", String(selected));
    other.tabIndex = selected ? 0 : -1;
    $(other.getAttribute("aria-controls")).hidden = !selected;
  }
  tab.focus();
}

function onTabKey(event) {
  const tabs = [...document.querySelectorAll('[role="tab"]')];
  const at = tabs.indexOf(event.target);
  const moves = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: tabs.length - 1 };
  if (!(event.key in moves)) return;
  event.preventDefault();
  selectTab(tabs[(moves[event.key] + tabs.length) % tabs.length]);
}

// ---- tools ----

async function refreshTools() {
  const params = new URLSearchParams();
  const search = $("tool-search").value.trim();
  if (search) params.set("search", search);
  if ($("tool-state").value) params.set("enabled", $("tool-state").value);
  const [list, stats] = await Promise.all([api(`tools?${params}`), api("stats")]);
  state.stats = new Map(stats.tools.map((s) => [s.tool, s]));
  state.mostCalls = Math.max(1, ...stats.tools.map((s) => s.calls));
  $("tool-rows").replaceChildren(...list.tools.map(toolRow));
  const count = list.tools.length;
  $("tool-total").textContent = count === 1 ? t("tools.count.one") : t("tools.count", { n: count });
}

function toolRow(tool) {
  const stats = state.stats.get(tool.name);
  const label = t(tool.enabled ? "tool.disable" : "tool.enable", { name: tool.name });
  const toggle = el("button", {
    type: "button", role: "switch", class: "switch", "aria-checked": String(tool.enabled),
    "aria-label": label, title: tool.disabled_reason || label,
    onclick: () => toggleTool(tool),
  });
  const tags = tool.tags.map((t) => el("span", { class: "tag" }, t));
  if (tool.deferred) tags.push(el("span", { class: "tag" }, t("tag.deferred")));
  return el("tr", { class: tool.enabled ? "" : "off" },
    el("td", {}, el("strong", {}, tool.name),
      el("div", { class: "desc" }, tool.disabled_reason
        ? t("tool.disabled.because", { reason: tool.disabled_reason }) : tool.description)),
    el("td", { class: "small" }, tool.source),
    el("td", {}, tags),
    el("td", { class: "num" }, stats ? String(stats.calls) : "0",
      el("meter", { class: "spark", min: "0", max: String(state.mostCalls), value: String(stats ? stats.calls : 0),
        "aria-hidden": "true" })),
    el("td", { class: "num" }, stats ? String(stats.errors) : "0"),
    el("td", { class: "num" }, stats && stats.p95_ms !== null ? `${stats.p95_ms.toFixed(1)} ms` : "–"),
    el("td", {}, toggle));
}

async function toggleTool(tool) {
  try {
    if (tool.enabled) {
      const reason = await askReason(tool.name);
      if (reason === null) return;
      await api(`tools/${encodeURIComponent(tool.name)}/disable`, { method: "POST", body: { reason } });
      announce(t("tool.was.disabled", { name: tool.name }));
    } else {
      await api(`tools/${encodeURIComponent(tool.name)}/enable`, { method: "POST", body: {} });
      announce(t("tool.was.enabled", { name: tool.name }));
    }
    await refreshTools();
  } catch (error) {
    failed(error);
  }
}

function askReason(name) {
  const dialog = $("disable-dialog");
  $("disable-name").textContent = name;
  $("disable-reason").value = "";
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => {
      resolve(dialog.returnValue === "disable" ? $("disable-reason").value.trim() : null);
    }, { once: true });
  });
}

// ---- sources ----

async function refreshSources() {
  const sources = await api("sources");
  $("source-rows").replaceChildren(...sources.map((s) => el("tr", {},
    el("td", {}, s.name),
    el("td", {}, el("span", { class: `badge ${s.reachable ? "ok" : "bad"}` },
      t(s.reachable ? "source.reachable" : "source.unreachable")),
      ...(s.lazy ? [" ", el("span", { class: "badge" }, t(`source.lazy.${s.lazy}`))] : []),
      ...(s.first_use_ms != null
        ? [" ", el("span", { class: "small muted" }, t("source.first_use", { ms: s.first_use_ms }))]
        : [])),
    el("td", { class: "num" }, String(s.tools)),
    el("td", { class: "small" }, s.error || "–"),
    el("td", {},
      s.login && !s.reachable ? el("button", {
        type: "button", "aria-label": t("source.login.label", { name: s.name }),
        onclick: () => loginSource(s.name),
      }, t("source.login")) : null,
      s.login && !s.reachable ? " " : null,
      el("button", {
        type: "button", class: "quiet", "aria-label": t("source.reload.label", { name: s.name }),
        onclick: () => reloadSource(s.name),
      }, t("source.reload"))))));
}

const LOGIN_POLL_MS = 1000;

async function loginSource(name) {
  // Opened in the click itself: a window opened after an await is blocked as a pop-up.
  const tab = window.open("", "_blank");
  try {
    const started = await api(`sources/${encodeURIComponent(name)}/login`, { method: "POST", body: {} });
    if (tab) {
      tab.opener = null;  // the authorization server's page gets no handle on the panel
      tab.location.href = started.authorization_url;
    } else {
      window.open(started.authorization_url, "_blank", "noopener");
    }
    announce(t("source.login.waiting", { name }));
    let login = { status: "pending" };
    while (login.status === "pending") {
      await new Promise((resolve) => setTimeout(resolve, LOGIN_POLL_MS));
      login = await api(`logins/${encodeURIComponent(started.state)}`).catch((error) => {
        if (error instanceof Unauthorized) throw error;
        return { status: "expired" };  // the login ran past its ten minutes
      });
    }
    if (login.status === "done") announce(t("source.login.done", { name }));
    else if (login.status === "failed") announce(t("source.login.failed", { name, error: login.error }));
    else announce(t("source.login.expired", { name }));
    await Promise.all([refreshSources(), refreshTools()]);
  } catch (error) {
    if (tab) tab.close();
    failed(error);
  }
}

async function reloadSource(name) {
  try {
    announce(t("source.reloading", { name }));
    const status = await api(`sources/${encodeURIComponent(name)}/reload`, { method: "POST" });
    announce(status.error ? t("source.failed", { name, error: status.error })
      : t("source.reloaded", { name, n: status.tools }));
    await Promise.all([refreshSources(), refreshTools()]);
  } catch (error) {
    failed(error);
  }
}

// ---- keys ----

async function refreshKeys() {
  const { keys } = await api("stats/keys");
  const most = Math.max(1, ...keys.map((k) => k.tool_calls));
  $("key-rows").replaceChildren(...keys.map((k) => el("tr", {},
    el("td", {}, k.key),
    el("td", { class: "num" }, String(k.requests)),
    el("td", { class: "num" }, String(k.tool_calls)),
    el("td", { class: "num" }, String(k.refused)),
    el("td", {}, el("meter", {
      min: "0", max: String(most), value: String(k.tool_calls),
      "aria-label": t("keys.meter", { key: k.key, n: k.tool_calls }),
    })))));
}

// ---- log ----

async function refreshLog() {
  const params = new URLSearchParams({ offset: state.logOffset, limit: LOG_PAGE });
  if ($("log-tool").value.trim()) params.set("tool", $("log-tool").value.trim());
  if ($("log-outcome").value) params.set("outcome", $("log-outcome").value);
  const page = await api(`log?${params}`);
  $("log-rows").replaceChildren(...page.records.map(logRow));
  const last = Math.min(page.offset + page.records.length, page.total);
  $("log-total").textContent = page.total
    ? t("log.range", { first: page.offset + 1, last, total: page.total }) : t("log.none");
  $("log-newer").disabled = page.offset === 0;
  $("log-older").disabled = last >= page.total;
}

function outcomeClass(outcome) {
  if (outcome === "ok") return "ok";
  return ["asked", "denied", "refused"].includes(outcome) ? "warn" : "bad";
}

function logRow(record) {
  const when = new Date(record.started_at * 1000);
  const details = el("details", {},
    el("summary", {}, record.call_id),
    el("div", { class: "small muted" }, [t("log.request", { id: record.request_id || "–" }),
      record.mode || t("log.not.run"), t("log.attempts", { n: record.attempts })].join(" · ")),
    el("pre", {}, JSON.stringify(record.arguments, null, 2)),
    el("pre", {}, record.result),
    record.note ? el("p", { class: "small" }, t("log.note", { note: record.note })) : null);
  return el("tr", {},
    el("td", { class: "small" }, el("time", { datetime: when.toISOString() }, when.toLocaleTimeString())),
    el("td", {}, record.tool),
    el("td", {}, el("span", { class: `badge ${outcomeClass(record.outcome)}` }, record.outcome)),
    el("td", { class: "num" }, `${record.duration_ms.toFixed(1)} ms`),
    el("td", {}, details));
}

// ---- approvals ----

async function refreshApprovals() {
  const pending = await api("approvals");
  const open = pending.filter((a) => a.approved === null).length;
  $("approval-count").hidden = open === 0;
  $("approval-count").textContent = String(open);
  $("approval-list").replaceChildren(...(pending.length ? pending.map(approvalCard)
    : [el("li", { class: "muted" }, t("approvals.none"))]));
}

function approvalCard(approval) {
  const expires = new Date(approval.expires_at * 1000).toLocaleTimeString();
  const decided = approval.approved === null ? null
    : el("p", { class: `badge ${approval.approved ? "ok" : "bad"}` },
      t(approval.approved ? "approval.approved.by" : "approval.denied.by", { who: approval.decided_by }));
  const decide = (verdict) => async () => {
    try {
      await api(`approvals/${encodeURIComponent(approval.call_id)}/${verdict}`, { method: "POST", body: {} });
      announce(t(verdict === "approve" ? "approval.was.approved" : "approval.was.denied", { tool: approval.tool }));
      await refreshApprovals();
    } catch (error) {
      failed(error);
    }
  };
  return el("li", {},
    el("h3", {}, approval.tool),
    el("p", { class: "small muted" }, [approval.reason || t("approval.needs"),
      t("approval.expires", { time: expires }), approval.call_id].join(" · ")),
    el("pre", {}, JSON.stringify(approval.arguments, null, 2)),
    decided,
    decided ? null : el("div", { class: "actions" },
      el("button", { type: "button", class: "danger", onclick: decide("deny"),
        "aria-label": t("approval.deny.label", { tool: approval.tool }) }, t("approval.deny")),
      el("button", { type: "button", onclick: decide("approve"),
        "aria-label": t("approval.approve.label", { tool: approval.tool }) }, t("approval.approve"))));
}

// ---- pinned tool definitions awaiting review ----

async function refreshPins() {
  const waiting = (await api("pins")).filter((pin) => pin.status !== "pinned");
  $("pin-list").replaceChildren(...(waiting.length ? waiting.map(pinCard)
    : [el("li", { class: "muted" }, t("pins.none"))]));
}

function pinCard(pin) {
  const decide = (verdict) => async () => {
    try {
      await api(`pins/${encodeURIComponent(pin.name)}/${verdict}`,
        { method: "POST", body: { digest: pin.digest } });
      announce(t(verdict === "accept" ? "pin.was.accepted" : "pin.was.rejected", { tool: pin.name }));
      await refreshAll();
    } catch (error) {
      failed(error);
    }
  };
  const held = t(pin.held ? "pin.held" : "pin.served");
  return el("li", { "data-pin": pin.name },
    el("h3", {}, pin.name),
    el("p", { class: `small ${pin.held ? "badge bad" : "muted"}` },
      t("pin.status", { status: pin.status, mode: pin.mode, held })),
    el("pre", {}, pin.diff || JSON.stringify(pin.served, null, 2)),
    el("div", { class: "actions" },
      pin.status === "rejected" ? null : el("button", { type: "button", class: "danger", onclick: decide("reject"),
        "aria-label": t("pin.reject.label", { tool: pin.name }) }, t("pin.reject")),
      el("button", { type: "button", onclick: decide("accept"),
        "aria-label": t("pin.accept.label", { tool: pin.name }) }, t("pin.accept"))));
}

// ---- live updates: the API's server-sent events, read with fetch (EventSource sends no key) ----

async function refreshAll() {
  await Promise.all([refreshTools(), refreshSources(), refreshLog(), refreshApprovals(), refreshKeys(),
    refreshPins()]);
}

function soon() {
  // Many events arrive in bursts (a turn with several calls); refresh once per burst.
  clearTimeout(state.refreshing);
  state.refreshing = setTimeout(() => refreshAll().catch(failed), 300);
}

async function listen() {
  const abort = new AbortController();
  state.events = abort;
  const headers = {};
  const key = sessionStorage.getItem(KEY);
  if (key) headers.authorization = `Bearer ${key}`;
  try {
    const response = await fetch("api/events", { headers, signal: abort.signal });
    if (!response.ok) return;
    announce(t("live.on"));
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      const blocks = buffer.split(/\r?\n\r?\n/);
      buffer = blocks.pop();
      if (blocks.some((b) => /^event: (registry|tool|namespace|source|call|permission|approval|pin)/m.test(b))) soon();
    }
  } catch (error) {
    if (abort.signal.aborted) return;
  }
  announce(t("live.paused"));
  setTimeout(() => { if (state.events === abort) listen(); }, 3000);
}

// ---- wiring ----

document.addEventListener("DOMContentLoaded", () => {
  translatePage();
  $("language").addEventListener("click", () => {
    switchLanguage();
    if (state.caller) $("whoami").textContent = t("signed.in", { who: state.caller });
    if (state.events) announce(t("live.on"));
    if (!$("panel").hidden) refreshAll().catch(failed);
  });
  $("login-form").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(KEY, $("key").value.trim());
    $("key").value = "";
    start();
  });
  $("signout").addEventListener("click", () => signOut(""));
  for (const tab of document.querySelectorAll('[role="tab"]')) {
    tab.addEventListener("click", () => selectTab(tab));
    tab.addEventListener("keydown", onTabKey);
  }
  let typing;
  $("tool-search").addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => refreshTools().catch(failed), 150);
  });
  $("tool-state").addEventListener("change", () => refreshTools().catch(failed));
  $("log-filter").addEventListener("submit", (event) => {
    event.preventDefault();
    state.logOffset = 0;
    refreshLog().catch(failed);
  });
  $("log-newer").addEventListener("click", () => {
    state.logOffset = Math.max(0, state.logOffset - LOG_PAGE);
    refreshLog().catch(failed);
  });
  $("log-older").addEventListener("click", () => {
    state.logOffset += LOG_PAGE;
    refreshLog().catch(failed);
  });
  document.addEventListener("keydown", (event) => {
    const typingInField = ["INPUT", "SELECT", "TEXTAREA"].includes(document.activeElement.tagName);
    if (event.key === "/" && !typingInField && !$("panel").hidden) {
      event.preventDefault();
      selectTab($("tab-tools"));
      $("tool-search").focus();
    }
  });
  start();
});
