// RocketMQ dashboard: plain DOM (no framework, no build step). Every value from the cluster is put in the
// page as text (textContent / text nodes), never parsed as HTML.
"use strict";

const main = document.getElementById("main");
const statusBar = document.getElementById("status");
const tokenInput = document.getElementById("token");
let timers = [];

tokenInput.value = sessionStorage.getItem("adminToken") || "";
tokenInput.addEventListener("change", () => sessionStorage.setItem("adminToken", tokenInput.value));

function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "value") el.value = v;
    else if (k === "checked") el.checked = !!v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of kids.flat(3)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

function setStatus(text, bad) {
  statusBar.replaceChildren(text ? h("span", { class: bad ? "err" : "ok" }, text) : "");
}

async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && tokenInput.value) headers["X-Admin-Token"] = tokenInput.value;
  const resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = await resp.json().catch(() => ({ error: "HTTP " + resp.status }));
  if (!resp.ok) throw new Error(data.error || "HTTP " + resp.status);
  return data;
}

function q(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") u.set(k, v);
  return u.toString();
}

function pad(n, w) { return String(n).padStart(w || 2, "0"); }
function fmtTime(ms) {
  if (!ms || ms <= 0) return "-";
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}
function fmtNum(n, digits) { return Number(n || 0).toFixed(digits || 0); }
function fmtLag(ms) { return ms > 0 ? (ms / 1000).toFixed(1) + " s" : "0"; }
function localInput(ms) {
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

function spark(values, cls) {
  const w = 120, ht = 24;
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("class", "spark " + (cls || ""));
  svg.setAttribute("width", w); svg.setAttribute("height", ht); svg.setAttribute("viewBox", `0 0 ${w} ${ht}`);
  const vals = (values || []).map(Number);
  if (vals.length > 1) {
    const max = Math.max(...vals, 1e-9);
    const pts = vals.map((v, i) => `${(i * (w - 2) / (vals.length - 1) + 1).toFixed(1)},${(ht - 2 - v / max * (ht - 4)).toFixed(1)}`);
    const pl = document.createElementNS(ns, "polyline");
    pl.setAttribute("points", pts.join(" "));
    svg.append(pl);
  }
  const title = document.createElementNS(ns, "title");
  title.textContent = vals.length ? "last " + vals[vals.length - 1] : "no samples yet";
  svg.append(title);
  return svg;
}

function table(headers, rows, onClick) {
  return h("table", {},
    h("thead", {}, h("tr", {}, headers.map(([label, num]) => h("th", { class: num ? "num" : null }, label)))),
    h("tbody", {}, rows.map((r) => h("tr", { class: onClick ? "clickable" : null, onclick: onClick ? () => onClick(r.data) : null },
      r.cells.map((c, i) => h("td", { class: headers[i][1] ? "num" : null }, c))))));
}

function every(ms, fn) { timers.push(setInterval(fn, ms)); }

async function guarded(fn) {
  try { await fn(); } catch (e) { setStatus(e.message, true); }
}

// -- cluster ------------------------------------------------------------------------------------------------

async function pageCluster() {
  const box = h("div", {});
  main.replaceChildren(h("h2", {}, "Cluster"), box);
  async function refresh() {
    const [c, m] = await Promise.all([api("GET", "/api/cluster"), api("GET", "/api/metrics")]);
    const rows = c.brokers.map((b) => {
      const s = m.brokers[`${b.brokerName}/${b.brokerId}`] || {};
      const dl = b.dledger ? `${b.dledger.group} ${b.dledger.role} term ${b.dledger.term} leader ${b.dledger.leader} lag ${b.dledger.commitLag}` : "";
      return { data: b, cells: [b.cluster, b.brokerName, b.brokerId, b.role, b.addr, b.version || b.error || "",
        fmtNum(b.inTps, 2), spark(s.inTps), fmtNum(b.outTps, 2), spark(s.outTps, "out"), fmtNum(b.diskRatio, 4),
        b.commitLogBehind ?? "", b.dispatchBehind ?? "", dl] };
    });
    box.replaceChildren(table([["Cluster"], ["Broker"], ["BID", 1], ["Role"], ["Address"], ["Version"], ["In TPS", 1], ["In"],
      ["Out TPS", 1], ["Out"], ["Disk", 1], ["Flush behind", 1], ["Dispatch behind", 1], ["DLedger"]], rows));
  }
  await refresh();
  every(5000, () => guarded(refresh));
}

// -- topics -------------------------------------------------------------------------------------------------

async function pageTopics() {
  const list = h("div", {});
  const kind = h("select", { id: "topic-kind" }, ["all", "normal", "retry", "dlq", "system"].map((k) => h("option", { value: k }, k)));
  kind.value = "normal";
  const filter = h("input", { id: "topic-filter", placeholder: "filter" });
  const fTopic = h("input", { id: "new-topic", name: "topic", required: true });
  const fRead = h("input", { name: "read", type: "number", value: "4", min: "1", max: "1024" });
  const fWrite = h("input", { name: "write", type: "number", value: "4", min: "1", max: "1024" });
  const fPerm = h("select", { name: "perm" }, [["6", "RW"], ["4", "R"], ["2", "W"]].map(([v, l]) => h("option", { value: v }, l)));
  const fOrder = h("input", { name: "order", type: "checkbox" });
  const form = h("form", { id: "create-topic", onsubmit: (ev) => { ev.preventDefault(); guarded(async () => {
    const r = await api("POST", "/api/topics", { topic: fTopic.value, readQueueNums: +fRead.value, writeQueueNums: +fWrite.value,
      perm: +fPerm.value, order: fOrder.checked });
    setStatus(`topic ${r.topic} created on ${r.brokers.length} broker(s)`);
    await refresh();
  }); } },
  h("label", {}, "topic", fTopic), h("label", {}, "read queues", fRead), h("label", {}, "write queues", fWrite),
  h("label", {}, "perm", fPerm), h("label", {}, "order", fOrder), h("button", { type: "submit" }, "Create / update"));
  let shown = 300;
  let data = [];
  function render() {
    const f = filter.value.toLowerCase();
    const rows = data.filter((t) => !f || t.topic.toLowerCase().includes(f));
    list.replaceChildren(h("p", { class: "muted" }, `${rows.length} topics`),
      table([["Topic"], ["Kind"], ["Read", 1], ["Write", 1], ["Perm", 1], ["Order"], ["Brokers"]],
        rows.slice(0, shown).map((t) => ({ data: t, cells: [t.topic, t.kind, t.readQueueNums, t.writeQueueNums, t.perm,
          t.order ? "yes" : "", t.brokers.join(", ")] })), (t) => { location.hash = "#/topics/" + encodeURIComponent(t.topic); }),
      rows.length > shown ? h("button", { class: "secondary", onclick: () => { shown += 300; render(); } }, "Show more") : "");
  }
  async function refresh() {
    data = (await api("GET", "/api/topics?" + q({ kind: kind.value }))).topics;
    render();
  }
  kind.addEventListener("change", () => guarded(refresh));
  filter.addEventListener("input", render);
  main.replaceChildren(h("h2", {}, "Topics"), h("div", { class: "card" }, h("h3", {}, "Create or update a topic"), form),
    h("div", { class: "bar" }, h("label", {}, "kind", kind), h("label", {}, "name", filter)), list);
  await refresh();
}

async function pageTopic(topic) {
  const d = await api("GET", "/api/topics/" + encodeURIComponent(topic));
  const body = h("input", { name: "body", placeholder: "message body", required: true });
  const tags = h("input", { name: "tags", placeholder: "tags" });
  const keys = h("input", { name: "keys", placeholder: "keys" });
  const sent = h("div", {});
  const send = h("form", { id: "send-message", onsubmit: (ev) => { ev.preventDefault(); guarded(async () => {
    const r = await api("POST", `/api/topics/${encodeURIComponent(topic)}/send`, { body: body.value, tags: tags.value, keys: keys.value });
    sent.replaceChildren(h("span", { class: "ok" }, `${r.sendStatus} ${r.msgId} → ${r.brokerName}:${r.queueId}@${r.queueOffset}`));
  }); } }, h("label", {}, "body", body), h("label", {}, "tags", tags), h("label", {}, "keys", keys),
  h("button", { type: "submit" }, "Send test message"));
  const del = h("button", { class: "secondary", id: "delete-topic", onclick: () => guarded(async () => {
    if (!confirm(`Delete topic ${topic}?`)) return;
    await api("DELETE", "/api/topics/" + encodeURIComponent(topic));
    setStatus(`topic ${topic} deleted`);
    location.hash = "#/topics";
  }) }, "Delete topic");
  const qd = Object.fromEntries((d.route.queueDatas || []).map((x) => [x.brokerName, x]));
  main.replaceChildren(h("h2", {}, "Topic ", h("code", {}, topic)),
    h("h3", {}, "Queues"),
    table([["Broker"], ["Queue", 1], ["Min offset", 1], ["Max offset", 1], ["Last update"]],
      d.status.map((s) => ({ data: s, cells: [s.brokerName, s.queueId, s.minOffset, s.maxOffset, fmtTime(s.lastUpdateTimestamp)] }))),
    h("h3", {}, "Route"),
    table([["Broker"], ["Addresses"], ["Read", 1], ["Write", 1], ["Perm", 1]],
      (d.route.brokerDatas || []).map((b) => ({ data: b, cells: [b.brokerName, Object.entries(b.brokerAddrs).map(([k, v]) => `${k}=${v}`).join(" "),
        qd[b.brokerName]?.readQueueNums ?? "", qd[b.brokerName]?.writeQueueNums ?? "", qd[b.brokerName]?.perm ?? ""] }))),
    h("h3", {}, "Consumer groups"),
    h("ul", {}, d.groups.map((g) => h("li", {}, h("a", { href: "#/groups/" + encodeURIComponent(g) }, g)))),
    h("div", { class: "card" }, send, sent), del);
}

// -- consumer groups ----------------------------------------------------------------------------------------

async function pageGroups() {
  const filter = h("input", { id: "group-filter", placeholder: "filter" });
  const showSystem = h("input", { id: "group-system", type: "checkbox" });
  const list = h("div", {});
  let offset = 0;
  const limit = 50;
  async function refresh() {
    const [g, m] = await Promise.all([api("GET", "/api/groups?" + q({ q: filter.value, offset, limit, system: showSystem.checked ? 1 : 0 })), api("GET", "/api/metrics")]);
    list.replaceChildren(h("p", { class: "muted" }, `${g.total} groups, ${offset + 1}–${Math.min(offset + limit, g.total)}`),
      table([["Group"], ["Clients", 1], ["Type"], ["Model"], ["TPS", 1], ["Lag (msgs)", 1], ["Lag (time)", 1], ["Lag trend"]],
        g.groups.map((r) => ({ data: r, cells: [r.group, r.clients ?? "", r.consumeType || "", r.messageModel || "",
          fmtNum(r.consumeTps, 1), r.diff, fmtLag(r.lagMillis), spark(m.groups[r.group])] })),
        (r) => { location.hash = "#/groups/" + encodeURIComponent(r.group); }),
      h("div", { class: "bar" },
        offset > 0 ? h("button", { class: "secondary", onclick: () => { offset -= limit; guarded(refresh); } }, "Previous") : "",
        offset + limit < g.total ? h("button", { class: "secondary", onclick: () => { offset += limit; guarded(refresh); } }, "Next") : ""));
  }
  filter.addEventListener("change", () => { offset = 0; guarded(refresh); });
  showSystem.addEventListener("change", () => { offset = 0; guarded(refresh); });
  main.replaceChildren(h("h2", {}, "Consumer groups"),
    h("div", { class: "bar" }, h("label", {}, "name", filter), h("label", {}, "system groups", showSystem)), list);
  await refresh();
  every(5000, () => guarded(refresh));
}

async function pageGroup(group) {
  const enc = encodeURIComponent(group);
  const prog = h("div", { id: "progress" });
  const conn = h("div", {});
  const topicSel = h("select", { name: "topic", id: "reset-topic" });
  const when = h("input", { name: "time", id: "reset-time", type: "datetime-local", step: "1", value: localInput(Date.now() - 3600e3) });
  const result = h("div", {});
  async function refresh() {
    const p = await api("GET", `/api/groups/${enc}/progress`);
    prog.replaceChildren(h("p", {}, "Total lag: ", h("b", { id: "diff-total" }, String(p.diffTotal)), ` messages, ${fmtNum(p.consumeTps, 1)} TPS`),
      table([["Topic"], ["Broker"], ["Queue", 1], ["Broker offset", 1], ["Consumer offset", 1], ["Lag", 1], ["Last consumed"]],
        p.topics.map((t) => ({ data: t, cells: [t.topic, t.brokerName, t.queueId, t.brokerOffset, t.consumerOffset, t.diff, fmtTime(t.lastTimestamp)] }))));
    const topics = [...new Set(p.topics.map((t) => t.topic))];
    if (topicSel.options.length !== topics.length) topicSel.replaceChildren(...topics.map((t) => h("option", { value: t }, t)));
  }
  async function reset(skip) {
    const body = skip ? { topic: topicSel.value } : { topic: topicSel.value, timestamp: String(new Date(when.value).getTime()), force: true };
    const r = await api("POST", `/api/groups/${enc}/${skip ? "skip-accumulated" : "reset-offset"}`, body);
    result.replaceChildren(h("span", { class: "ok" }, `offsets reset on ${r.offsets.length} queue(s)`));
    await refresh();
  }
  const c = await api("GET", `/api/groups/${enc}/connection`);
  conn.replaceChildren(c.online ? h("div", {},
    h("p", {}, `${c.consumeType} ${c.messageModel} ${c.consumeFromWhere}`),
    table([["Client id"], ["Address"], ["Language"], ["Version", 1]], c.connections.map((x) => ({ data: x, cells: [x.clientId, x.clientAddr, x.language, x.version] }))),
    table([["Subscribed topic"], ["Expression"], ["Type"]], c.subscriptions.map((s) => ({ data: s, cells: [s.topic, s.subString, s.expressionType] }))))
    : h("p", { class: "muted" }, "no consumer online"));
  main.replaceChildren(h("h2", {}, "Consumer group ", h("code", {}, group)), prog,
    h("div", { class: "card" }, h("h3", {}, "Reset offset"),
      h("form", { id: "reset-form", onsubmit: (ev) => { ev.preventDefault(); guarded(() => reset(false)); } },
        h("label", {}, "topic", topicSel), h("label", {}, "to time", when), h("button", { type: "submit" }, "Reset offset"),
        h("button", { type: "button", class: "secondary", id: "skip", onclick: () => guarded(() => reset(true)) }, "Skip accumulated")),
      result),
    h("h3", {}, "Connections and subscriptions"), conn);
  await refresh();
  every(5000, () => guarded(refresh));
}

// -- messages -----------------------------------------------------------------------------------------------

function hexView(b64) {
  const bin = atob(b64);
  const lines = [];
  for (let i = 0; i < bin.length && i < 65536; i += 16) {
    const chunk = bin.slice(i, i + 16);
    const hex = [...chunk].map((c) => pad(c.charCodeAt(0).toString(16))).join(" ");
    lines.push(`${pad(i.toString(16), 8)}  ${hex.padEnd(48)}  ${[...chunk].map((c) => (c >= " " && c <= "~" ? c : ".")).join("")}`);
  }
  return lines.join("\n");
}

async function showMessage(box, msgId, topic) {
  const m = await api("GET", `/api/messages/${encodeURIComponent(msgId)}?` + q({ topic }));
  const bodyPre = h("pre", { id: "msg-body" });
  const view = h("select", { id: "body-view" }, ["text", "hex", "json"].map((v) => h("option", { value: v }, v)));
  function renderBody() {
    if (view.value === "hex") bodyPre.textContent = hexView(m.bodyBase64);
    else if (view.value === "json") {
      try { bodyPre.textContent = JSON.stringify(JSON.parse(m.bodyText), null, 2); } catch (e) { bodyPre.textContent = "not JSON: " + e.message; }
    } else bodyPre.textContent = m.bodyText ?? "(binary body: use hex or download)";
  }
  view.addEventListener("change", renderBody);
  renderBody();
  const trace = h("div", { id: "msg-trace" }, h("span", { class: "muted" }, "loading…"));
  api("GET", `/api/messages/${encodeURIComponent(m.msgId)}/trace`).then((t) => {
    if (!t.available) trace.replaceChildren(h("span", { class: "muted" }, "message trace is not available in this build"));
    else if (!t.traces.length) trace.replaceChildren(h("span", { class: "muted" }, "no trace records (is tracing on in the clients?)"));
    else trace.replaceChildren(table([["Type"], ["Group"], ["Client"], ["Time"], ["Cost ms", 1], ["Status"]],
      t.traces.map((x) => ({ data: x, cells: [x.msg_type, x.group_name, x.client_host, fmtTime(x.timestamp), x.cost_time, x.status] }))));
  }).catch((e) => trace.replaceChildren(h("span", { class: "err" }, e.message)));
  const group = h("input", { id: "resend-group", placeholder: "consumer group" });
  const client = h("input", { id: "resend-client", placeholder: "client id (optional)" });
  const out = h("div", {});
  const fields = ["msgId", "offsetMsgId", "topic", "tags", "keys", "queueId", "queueOffset", "commitLogOffset", "bornHost", "storeHost", "reconsumeTimes", "bodySize"];
  box.replaceChildren(h("div", { class: "card", id: "message-detail" }, h("h3", {}, "Message ", h("code", {}, m.msgId)),
    table([["Field"], ["Value"]], [...fields.map((f) => ({ data: f, cells: [f, String(m[f])] })),
      { data: "b", cells: ["bornTimestamp", fmtTime(m.bornTimestamp)] }, { data: "s", cells: ["storeTimestamp", fmtTime(m.storeTimestamp)] }]),
    h("h3", {}, "Properties"), table([["Key"], ["Value"]], Object.entries(m.properties).map(([k, v]) => ({ data: k, cells: [k, v] }))),
    h("h3", {}, "Body"), h("div", { class: "bar" }, h("label", {}, "view", view),
      h("a", { href: `/api/messages/${encodeURIComponent(m.offsetMsgId)}/body`, download: "" }, "download")), bodyPre,
    h("h3", {}, "Trace"), trace,
    h("form", { id: "resend-form", onsubmit: (ev) => { ev.preventDefault(); guarded(async () => {
      const r = await api("POST", "/api/messages/resend", { group: group.value, clientId: client.value, msgIds: [m.offsetMsgId], topic: m.topic });
      out.replaceChildren(...r.results.map((x) => h("div", { class: x.ok ? "ok" : "err" }, `${x.msgId}: ${x.ok ? x.result : x.error}`)));
    }); } }, h("label", {}, "resend to group", group), h("label", {}, "client", client), h("button", { type: "submit" }, "Resend")), out));
}

async function pageMessages() {
  const mode = h("select", { id: "search-mode" }, [["key", "by key"], ["id", "by message id"], ["time", "by time range"]].map(([v, l]) => h("option", { value: v }, l)));
  const topic = h("input", { id: "search-topic", placeholder: "topic" });
  const key = h("input", { id: "search-key", placeholder: "key" });
  const msgId = h("input", { id: "search-id", placeholder: "message id", size: 34 });
  const begin = h("input", { id: "search-begin", type: "datetime-local", value: localInput(Date.now() - 3600e3) });
  const end = h("input", { id: "search-end", type: "datetime-local", value: localInput(Date.now() + 60e3) });
  const results = h("div", { id: "results" });
  const detail = h("div", {});
  let cursor = null;
  const fields = { key: [h("label", {}, "key", key)], id: [h("label", {}, "message id", msgId)], time: [h("label", {}, "begin", begin), h("label", {}, "end", end)] };
  const extra = h("span", { class: "bar" });
  function switchMode() { extra.replaceChildren(...fields[mode.value]); }
  mode.addEventListener("change", switchMode);
  switchMode();
  async function search(more) {
    const params = { topic: topic.value, limit: 32 };
    if (mode.value === "key") params.key = key.value;
    else if (mode.value === "id") params.msgId = msgId.value;
    else { params.begin = new Date(begin.value).getTime(); params.end = new Date(end.value).getTime(); }
    if (more) params.cursor = cursor;
    const r = await api("GET", "/api/messages?" + q(params));
    cursor = r.next;
    const t = table([["Message id"], ["Tags"], ["Keys"], ["Queue", 1], ["Offset", 1], ["Stored"]],
      r.messages.map((m) => ({ data: m, cells: [m.msgId, m.tags, m.keys, m.queueId, m.queueOffset, fmtTime(m.storeTimestamp)] })),
      (m) => guarded(() => showMessage(detail, m.offsetMsgId, m.topic)));
    if (more) results.append(t); else results.replaceChildren(t);
    const old = document.getElementById("next-page");
    if (old) old.remove();
    if (cursor) results.after(h("button", { id: "next-page", class: "secondary", onclick: () => guarded(() => search(true)) }, "Next page"));
    setStatus(`${r.messages.length} message(s)`);
  }
  main.replaceChildren(h("h2", {}, "Messages"),
    h("form", { id: "search-form", onsubmit: (ev) => { ev.preventDefault(); guarded(() => search(false)); } },
      h("label", {}, "search", mode), h("label", {}, "topic", topic), extra, h("button", { type: "submit" }, "Search")),
    results, detail);
}

// -- DLQ ------------------------------------------------------------------------------------------------------

async function pageDlq() {
  const group = h("input", { id: "dlq-group", placeholder: "consumer group" });
  const list = h("div", {});
  const out = h("div", { id: "dlq-results" });
  let msgs = [];
  async function load() {
    const r = await api("GET", `/api/dlq/${encodeURIComponent(group.value)}?` + q({ limit: 200 }));
    msgs = r.messages;
    list.replaceChildren(h("p", { class: "muted" }, `${msgs.length} message(s) in the DLQ`),
      table([[""], ["Message id"], ["Original topic"], ["Tags"], ["Keys"], ["Stored"]],
        msgs.map((m) => ({ data: m, cells: [h("input", { type: "checkbox", class: "dlq-pick", value: m.offsetMsgId }), m.msgId, m.originTopic, m.tags, m.keys, fmtTime(m.storeTimestamp)] }))),
      h("button", { id: "dlq-resend", onclick: () => guarded(resend) }, "Resend selected"));
  }
  async function resend() {
    const ids = [...document.querySelectorAll(".dlq-pick:checked")].map((c) => c.value);
    const r = await api("POST", "/api/messages/resend", { group: group.value, msgIds: ids });
    out.replaceChildren(...r.results.map((x) => h("div", { class: x.ok ? "ok" : "err" }, `${x.msgId}: ${x.ok ? "resent as " + x.newMsgId : x.error}`)));
  }
  main.replaceChildren(h("h2", {}, "Dead-letter queue"),
    h("form", { onsubmit: (ev) => { ev.preventDefault(); guarded(load); } }, h("label", {}, "group", group), h("button", { type: "submit" }, "List")),
    list, out);
}

// -- routing ----------------------------------------------------------------------------------------------

async function route() {
  timers.forEach(clearInterval);
  timers = [];
  setStatus("");
  const parts = (location.hash.replace(/^#\/?/, "") || "cluster").split("/").map(decodeURIComponent);
  for (const a of document.querySelectorAll("header nav a")) a.classList.toggle("active", a.dataset.page === parts[0]);
  const pages = { cluster: pageCluster, topics: parts[1] ? () => pageTopic(parts[1]) : pageTopics,
    groups: parts[1] ? () => pageGroup(parts[1]) : pageGroups, messages: pageMessages, dlq: pageDlq };
  await guarded(pages[parts[0]] || pageCluster);
}

window.addEventListener("hashchange", route);
route();
