// app.js: the dashboard's script, served at /ui/app.js beside the page
// (src/server/ui/index.html holds the markup and the styles). No inline
// script or handler: the page's Content-Security-Policy allows script from
// this origin only.
//
// It reads /v1 with the user's token (URL fragment #token=..., or typed in
// and kept in local storage) and follows /v1/events by long poll: any event
// redraws after a 300 ms debounce, one refresh at a time; a job's end also
// fetches that job at once into the "recently finished" list.
//
// Notes on the non-obvious:
// - Topology comes from the API as the descriptor declares it: a node's
//   zone, region, numa_domains and islands, a device's island, numa and
//   interconnect. An island sits inside a NUMA domain's box when all its
//   devices are in that domain, else at the node's level.
// - Pending reasons: a job's own `pending_reason` (a string, or an object
//   with `code`) when the API gives one; else `waiting_on` (dependencies);
//   else the job's explain, grouped by reason(). Explains are cached 15 s,
//   at most 300 fetched a refresh (the rest count as "not explained yet"),
//   the visible page's every refresh.
// - "Recently finished": the newest 200 finished jobs by id each refresh,
//   plus every job a job.finished/job.cancelled event names (fetched at
//   once, up to 20 an event batch), sorted by finished_at, 50 kept.
// - Tooltips (device and CPU) follow hover and keyboard focus; a redraw
//   keeps the focused element focused and its tooltip open.
"use strict";
const params = new URLSearchParams(location.hash.slice(1));
let token = params.get("token") || localStorage.getItem("xpool-token") || "";
const pollWait = Number(params.get("wait") || 20);
const PAGE = 25, RECENT = 50, EXPLAIN_TTL_MS = 15000, EXPLAIN_MAX = 300, EXPLAIN_PAR = 6;
const SAMPLES_MAX = 8640; /* a day of the controller's 10 s samples */
const $ = id => document.getElementById(id);
const S = {
  nodes: [], devices: [], running: [], pending: [], queues: [], usage: {},
  jobs: new Map(),      /* id -> running or pending job, for names */
  finished: new Map(),  /* id -> finished job */
  explain: new Map(),   /* id -> {at, ex} */
  tips: new Map(),      /* data-dev key -> () => [[label, value], ...] */
  samples: [], samplesAt: "",
  page: { pending: 0, running: 0 }, reason: "",
  busy: false, again: false, redrawing: false, events: 0,
};
let errors = 0, since = 0, timer = null;

function fail(msg) {
  errors++;
  document.body.dataset.errors = String(errors);
  const e = $("error");
  e.textContent = msg;
  e.style.display = "block";
}
window.addEventListener("error", ev => fail("script error: " + ev.message));
window.addEventListener("unhandledrejection", ev => fail("request failed: " + (ev.reason && ev.reason.message || ev.reason)));

async function api(path) {
  const r = await fetch(path, { headers: { "Authorization": "Bearer " + token, "Accept": "application/json" } });
  if (r.status === 401) { askToken(); throw new Error("the token was refused"); }
  if (!r.ok) { const e = new Error(path + ": HTTP " + r.status); e.status = r.status; throw e; }
  return r.json();
}
async function all(path, key) { /* follow the pages */
  let out = [], next = null;
  for (let i = 0; i < 100; i++) {
    const sep = path.includes("?") ? "&" : "?";
    const page = await api(path + (next ? sep + "after=" + encodeURIComponent(next) : ""));
    out = out.concat(page[key] || []);
    if (!page.next) break;
    next = page.next;
  }
  return out;
}
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k === "style") e.style.cssText = v; else if (k.startsWith("on")) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v);
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}
/* a table cell named for the stacked-card layout of narrow screens */
const td = (label, ...kids) => el("td", { "data-label": label }, el("span", { class: "v" }, ...kids));
function askToken() {
  $("login").hidden = false;
  $("status").textContent = "a token is needed (xpool token create, or DATA/admin.token)";
}
$("go").addEventListener("click", () => {
  token = $("token").value.trim();
  localStorage.setItem("xpool-token", token);
  $("login").hidden = true;
  soon();
});
for (const id of ["f-class", "f-model", "f-zone"]) $(id).addEventListener("change", () => drawTopology());

/* ---- formatting ---- */
const FABRIC = { nvlink: "NVLink", hccs: "HCCS", xgmi: "xGMI", pcie: "PCIe", rdma: "RDMA", eth: "Ethernet", cxl: "CXL" };
const fabric = k => FABRIC[k] || k || "";
const gib = mib => { const g = mib / 1024; return (g >= 10 || Number.isInteger(g) ? g.toFixed(0) : g.toFixed(1)) + " GiB"; };
const cores = milli => { const c = milli / 1000; return Number.isInteger(c) ? String(c) : c.toFixed(1); };
const qty = s => { const v = parseFloat(s || "0"); return /m$/.test(s || "") ? v / 1000 : v; }; /* "2", "500m" (devices) */
const hms = iso => iso ? iso.slice(11, 19) : "-";
function ago(iso) {
  if (!iso) return "-";
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  return s < 90 ? Math.round(s) + " s" : s < 5400 ? Math.round(s / 60) + " min" : s < 172800 ? (s / 3600).toFixed(1) + " h" : Math.round(s / 86400) + " d";
}
function heat(held) { /* 0 pale green .. 1 red */
  const h = Math.min(1, Math.max(0, held));
  return "hsl(" + Math.round(120 - 120 * h) + "," + Math.round(45 + 27 * h) + "%," + Math.round(82 - 34 * h) + "%)";
}
function jobLink(j) {
  return el("a", { class: "job", href: "#", "data-open": j.id }, j.id + " " + (j.name || ""));
}
const jobName = id => { const j = S.jobs.get(id) || S.finished.get(id); return j ? "#" + id + " " + j.name + " (" + j.tenant + ")" : "#" + id; };
const nodesOf = j => [...new Set((j.allocations || []).map(a => a.node))].join(", ") || "-";

/* ---- topology ---- */
function fillSelect(id, values) {
  const s = $(id), cur = s.value;
  const have = new Set([...s.options].map(o => o.value));
  for (const v of [...values].sort()) if (v && !have.has(v)) s.append(el("option", { value: v }, v));
  s.value = cur;
}

function devTips(d) {
  const held = 1 - d.free_milli / 1000, rows = [];
  rows.push(["device", d.node + " #" + d.index + " (" + d.class.toUpperCase() + ")"]);
  rows.push(["model", (d.vendor ? d.vendor + " " : "") + d.model]);
  const topo = [];
  if (d.island >= 0) topo.push((d.interconnect ? fabric(d.interconnect) + " island " : "island ") + d.island);
  else if (d.interconnect) topo.push(fabric(d.interconnect));
  if (d.numa >= 0) topo.push("NUMA " + d.numa);
  if (topo.length) rows.push(["topology", topo.join(", ")]);
  rows.push(["utilisation", (d.util_pct >= 0 ? d.util_pct + " % busy (agent)" : "not reported") + "; " + Math.round(100 * held) + " % of compute held"]);
  const total = d.memory_mib || 0, alloc = total - (d.free_memory_mib || 0);
  rows.push(["memory", !total ? "none of its own"
    : d.mem_used_mib >= 0 ? gib(d.mem_used_mib) + " used of " + gib(total) + " (" + gib(alloc) + " allocated)"
    : gib(alloc) + " used of " + gib(total) + " (allocated)"]);
  if (d.power_w >= 0 && d.power_w !== undefined) rows.push(["power", d.power_w + " W" + (d.temp_c >= 0 ? ", " + d.temp_c + " \u00b0C" : "")]);
  rows.push(["jobs", (d.jobs || []).length ? d.jobs.map(jobName).join(", ") : "none"]);
  rows.push(["health", d.health + (d.why ? ": " + d.why : "")]);
  if (d.mig) { /* a MIG GPU: its memory slices, a letter per instance, and each instance */
    rows.push(["MIG slices", "[" + d.mig.slices + "] " + d.mig.free_compute + " of " + d.mig.compute_slices +
      " compute free; largest new " + (d.mig.largest_free || "none")]);
    (d.mig.instances || []).forEach((m, i) => rows.push(["MIG " + String.fromCharCode(97 + i % 26),
      m.profile + " {" + m.start + "," + m.size + "} " + m.state +
      ((m.jobs || []).length ? ": job " + m.jobs.map(x => x.job + "/" + x.replica).join(", ") : "") +
      (m.uuid ? " \u00b7 GI " + m.gi + " " + m.uuid : "")]));
  }
  return rows;
}

function devTile(d) {
  const held = 1 - d.free_milli / 1000, key = d.node + "/" + d.index;
  const t = el("div", { class: "dev dev-" + d.class + (held > 0.55 ? " hot" : "") + (d.health === "unhealthy" ? " bad" : ""),
    "data-dev": key, "data-class": d.class, tabindex: "0",
    "aria-label": d.class.toUpperCase() + " " + d.index + " " + d.model + ", " + Math.round(100 * held) + " % held" },
  el("span", { class: "tag" }, d.class.toUpperCase()), el("span", { class: "idx" }, d.index),
  d.mig ? el("span", { class: "mig", "data-mig": d.mig.slices, title: "MIG memory slices" }, d.mig.slices) : null);
  t.style.background = heat(held);
  if (d.util_pct >= 0) t.style.boxShadow = "0 0 0 3px rgba(37,99,235," + (0.15 + 0.85 * d.util_pct / 100).toFixed(2) + ")";
  S.tips.set(key, () => devTips(d));
  return t;
}

function cpuChip(n) { /* the node's CPUs: their own class, not a device */
  const key = n.name + "/cpu", held = n.cpu_milli ? 1 - n.cpu_free_milli / n.cpu_milli : 0;
  const c = el("div", { class: "dev dev-cpu" + (held > 0.55 ? " hot" : ""), "data-dev": key, "data-class": "cpu", tabindex: "0",
    "aria-label": "CPU " + cores(n.cpu_milli) + " cores, " + Math.round(100 * held) + " % held" },
  el("span", { class: "tag" }, "CPU"), el("span", { class: "idx" }, cores(n.cpu_milli)));
  c.style.background = heat(held);
  S.tips.set(key, () => [["node", n.name + " (" + n.state + ")"], ["CPU", cores(n.cpu_milli) + " cores, " + cores(n.cpu_free_milli) + " free" + (n.arch ? " (" + n.arch + ")" : "")],
    ["memory", gib(n.memory_mib - n.memory_free_mib) + " used of " + gib(n.memory_mib) + " (allocated)"],
    ["topology", [n.region && "region " + n.region, n.zone && "zone " + n.zone, n.numa_domains ? n.numa_domains + " NUMA domain" + (n.numa_domains > 1 ? "s" : "") : "NUMA unknown"].filter(Boolean).join(", ")],
    ["jobs", n.jobs + " running" + (n.labels && Object.keys(n.labels).length ? "; labels " + Object.entries(n.labels).map(([k, v]) => k + "=" + v).join(" ") : "")]]);
  return c;
}

function islandBox(g) {
  const b = el("div", { class: "island fab-" + (g.interconnect || "none"), "data-island": g.id, "data-fabric": g.interconnect || "" },
    el("div", { class: "group-label" }, (g.interconnect ? fabric(g.interconnect) + " island " : "island ") + g.id + " \u00b7 " + g.devs.length));
  for (const d of g.devs) b.append(devTile(d));
  return b;
}

function nodeCard(n, devs) {
  const bad = n.state === "down" || n.state === "drained", warn = n.state !== "ready" && !bad;
  const meta = [n.arch, n.numa_domains > 1 ? n.numa_domains + " NUMA" : "", devs.length + " dev"].filter(Boolean).join(" \u00b7 ");
  const card = el("div", { class: "node" + (n.state !== "ready" ? " not-ready" : ""), "data-node": n.name, "data-zone": n.zone || "",
    "data-region": n.region || "", "data-numa-domains": n.numa_domains || 0 },
  el("div", { class: "node-head" }, el("span", { class: "node-name" }, n.name),
    el("span", { class: "state" + (bad ? " bad" : warn ? " warn" : "") }, n.state + (n.suspect ? " (suspect)" : "")),
    el("span", { class: "node-meta" }, meta)));
  const body = el("div", { class: "node-body" }, cpuChip(n));
  const islands = new Map(); /* id -> {id, interconnect, devs} */
  for (const d of devs) {
    if (d.island < 0) continue;
    if (!islands.has(d.island)) {
      const declared = (n.islands || []).find(i => i.id === d.island);
      islands.set(d.island, { id: d.island, interconnect: (declared && declared.interconnect) || d.interconnect, devs: [] });
    }
    islands.get(d.island).devs.push(d);
  }
  const numa = new Map(), top = { islands: [], loose: [] };
  const at = k => {
    if (k < 0) return top;
    if (!numa.has(k)) numa.set(k, { islands: [], loose: [] });
    return numa.get(k);
  };
  for (const g of islands.values()) {
    const ks = new Set(g.devs.map(d => d.numa));
    at(ks.size === 1 ? [...ks][0] : -1).islands.push(g);
  }
  for (const d of devs) if (d.island < 0) at(d.numa).loose.push(d);
  const fill = (box, grp) => {
    for (const g of grp.islands) box.append(islandBox(g));
    for (const d of grp.loose) box.append(devTile(d));
  };
  for (const k of [...numa.keys()].sort((a, b) => a - b)) {
    const box = el("div", { class: "numa", "data-numa": k }, el("div", { class: "group-label" }, "NUMA " + k));
    fill(box, numa.get(k));
    body.append(box);
  }
  fill(body, top);
  card.append(body);
  return card;
}

function drawTopology() {
  const fc = $("f-class").value, fm = $("f-model").value, fz = $("f-zone").value;
  fillSelect("f-class", new Set(S.devices.map(d => d.class)));
  fillSelect("f-model", new Set(S.devices.map(d => d.model)));
  fillSelect("f-zone", new Set(S.nodes.map(n => n.zone)));
  const byNode = new Map();
  for (const d of S.devices) {
    if ((fc && d.class !== fc) || (fm && d.model !== fm)) continue;
    if (!byNode.has(d.node)) byNode.set(d.node, []);
    byNode.get(d.node).push(d);
  }
  const regions = new Map(); /* region -> zone -> [node] */
  let total = 0, held = 0, bad = 0, shown = 0, cpu = 0, cpuFree = 0;
  const perClass = {};
  for (const n of S.nodes) {
    if (fz && n.zone !== fz) continue;
    const devs = byNode.get(n.name) || [];
    if ((fc || fm) && !devs.length) continue;
    const r = n.region || "", z = n.zone || "";
    if (!regions.has(r)) regions.set(r, new Map());
    if (!regions.get(r).has(z)) regions.get(r).set(z, []);
    regions.get(r).get(z).push([n, devs]);
    for (const d of devs) {
      total++; held += 1 - d.free_milli / 1000; bad += d.health === "unhealthy";
      perClass[d.class] = (perClass[d.class] || 0) + 1;
    }
    cpu += n.cpu_milli; cpuFree += n.cpu_free_milli;
    shown++;
  }
  /* keep the keyboard's place (and its tooltip) across the redraw */
  const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.dev : null;
  S.redrawing = true;
  S.tips.clear();
  const box = $("topo"), out = [];
  for (const [r, zones] of [...regions].sort()) {
    const rb = el("div", { class: "region", "data-region": r }, r || regions.size > 1 ? el("h3", {}, r ? "region " + r : "no region") : null);
    for (const [z, list] of [...zones].sort()) {
      const zb = el("div", { class: "zone", "data-zone": z }, el("h4", {}, (z ? "zone " + z : "no zone") + " \u00b7 " + list.length + " node" + (list.length > 1 ? "s" : "")));
      zb.append(el("div", { class: "nodes" }, list.map(([n, devs]) => nodeCard(n, devs))));
      rb.append(zb);
    }
    out.push(rb);
  }
  box.replaceChildren(...out);
  S.redrawing = false;
  if (focused) {
    const again = box.querySelector('[data-dev="' + CSS.escape(focused) + '"]');
    if (again) again.focus({ preventScroll: true }); else hideTip();
  } else if (!$("tip").hidden) {
    const again = box.querySelector('[data-dev="' + CSS.escape($("tip").dataset.for || "") + '"]');
    if (again) showTip(again); else hideTip();
  }
  $("totals").textContent = shown + " nodes, " + total + " devices (" +
    Object.entries(perClass).sort().map(([c, k]) => k + " " + c.toUpperCase()).join(", ") + "): " + held.toFixed(1) + " held (" +
    (total ? (100 * held / total).toFixed(1) : "0.0") + " %), " + bad + " unhealthy; CPU " + cores(cpu - cpuFree) + " of " + cores(cpu) + " cores held";
}

/* ---- tooltips: hover and keyboard focus ---- */
function showTip(target) {
  const key = target.dataset.dev, f = S.tips.get(key), tip = $("tip");
  if (!f) return;
  tip.replaceChildren(...f().map(([k, v]) => el("div", { class: "tip-row", "data-k": k }, el("span", { class: "tip-k" }, k), el("span", { class: "tip-v" }, v))));
  tip.dataset.for = key;
  tip.hidden = false;
  target.setAttribute("aria-describedby", "tip");
  const r = target.getBoundingClientRect(), vw = document.documentElement.clientWidth, vh = window.innerHeight;
  const w = tip.offsetWidth, h = tip.offsetHeight;
  let y = r.bottom + 6;
  if (y + h > vh - 4) y = Math.max(4, r.top - h - 6);
  tip.style.left = Math.max(4, Math.min(r.left, vw - w - 4)) + "px";
  tip.style.top = y + "px";
}
function hideTip() {
  const tip = $("tip");
  tip.hidden = true;
  const t = document.querySelector('[aria-describedby="tip"]');
  if (t) t.removeAttribute("aria-describedby");
}
const topo = $("topo");
topo.addEventListener("mouseover", e => { const t = e.target.closest("[data-dev]"); if (t) showTip(t); });
topo.addEventListener("mouseout", e => {
  const t = e.target.closest("[data-dev]");
  if (t && !(e.relatedTarget && t.contains(e.relatedTarget)) && t !== document.activeElement) hideTip();
});
topo.addEventListener("focusin", e => { const t = e.target.closest("[data-dev]"); if (t) showTip(t); });
topo.addEventListener("focusout", () => { if (!S.redrawing) hideTip(); });
document.addEventListener("keydown", e => { if (e.key === "Escape") hideTip(); });
window.addEventListener("scroll", () => { /* the tooltip is fixed: keep it by its element */
  const tip = $("tip");
  if (tip.hidden) return;
  const t = topo.querySelector('[data-dev="' + CSS.escape(tip.dataset.for || "") + '"]');
  if (t) showTip(t); else hideTip();
}, { passive: true });

/* ---- charts: time on x (UTC), a value on y, both with ticks and labels ---- */
const SVGNS = "http://www.w3.org/2000/svg";
function sv(tag, attrs, text) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}
const STEPS = [10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200].map(s => s * 1000);
function countTicks(v) { /* whole numbers in 1-2-5 steps, at most 5 intervals, up to v or past it */
  if (v <= 4) return [0, 1, 2, 3, 4];
  const raw = v / 5, p = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = Math.ceil([1, 2, 5, 10].map(m => m * p).find(x => x >= raw));
  return Array.from({ length: Math.ceil(v / step) + 1 }, (_, i) => i * step);
}
/* series: [{key, color}]; y: {max, ticks, fmt, label} */
function drawChart(svg, series, y) {
  const W = Math.max(200, Math.round(svg.getBoundingClientRect().width) || 600), H = 180;
  const m = { l: 46, r: 12, t: 10, b: 38 }, pw = W - m.l - m.r, ph = H - m.t - m.b;
  const pts = S.samples;
  let t1 = pts.length ? pts[pts.length - 1].t : Date.now(), t0 = pts.length ? pts[0].t : t1;
  if (t1 - t0 < 60000) t0 = t1 - 60000;
  const X = t => m.l + pw * (t - t0) / (t1 - t0), Y = v => m.t + ph - ph * Math.min(1, Math.max(0, v / y.max));
  svg.setAttribute("viewBox", "0 0 " + W + " " + H);
  svg.replaceChildren();
  const grid = sv("g", { class: "grid" }), ax = sv("g", { class: "axis x" }), ay = sv("g", { class: "axis y" });
  /* y: ticks, grid lines, the unit */
  for (const v of y.ticks) {
    grid.append(sv("line", { x1: m.l, x2: W - m.r, y1: Y(v), y2: Y(v) }));
    ay.append(sv("line", { x1: m.l - 4, x2: m.l, y1: Y(v), y2: Y(v) }));
    ay.append(sv("text", { class: "tick", x: m.l - 6, y: Y(v) + 4, "text-anchor": "end" }, y.fmt(v)));
  }
  ay.append(sv("line", { x1: m.l, x2: m.l, y1: m.t, y2: m.t + ph }));
  ay.append(sv("text", { class: "axis-label", transform: "translate(11," + (m.t + ph / 2) + ") rotate(-90)", "text-anchor": "middle" }, y.label));
  /* x: a step that leaves ~70 px a tick, labels in UTC */
  const step = STEPS.find(s => (t1 - t0) / s <= Math.max(2, Math.floor(pw / 70))) || 86400000;
  for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
    grid.append(sv("line", { x1: X(t), x2: X(t), y1: m.t, y2: m.t + ph }));
    ax.append(sv("line", { x1: X(t), x2: X(t), y1: m.t + ph, y2: m.t + ph + 4 }));
    ax.append(sv("text", { class: "tick", x: X(t), y: m.t + ph + 15, "text-anchor": "middle" },
      new Date(t).toISOString().slice(11, step < 60000 ? 19 : 16)));
  }
  ax.append(sv("line", { x1: m.l, x2: W - m.r, y1: m.t + ph, y2: m.t + ph }));
  ax.append(sv("text", { class: "axis-label", x: m.l + pw / 2, y: H - 4, "text-anchor": "middle" }, "time (UTC)"));
  svg.append(grid, ax, ay);
  for (const s of series) {
    if (pts.length === 1) svg.append(sv("circle", { cx: X(pts[0].t), cy: Y(pts[0][s.key]), r: 3, fill: s.color, "data-series": s.key }));
    else if (pts.length) svg.append(sv("polyline", { fill: "none", stroke: s.color, "stroke-width": 2, "data-series": s.key,
      points: pts.map(p => X(p.t).toFixed(1) + "," + Y(p[s.key]).toFixed(1)).join(" ") }));
  }
  if (!pts.length) svg.append(sv("text", { x: m.l + pw / 2, y: m.t + ph / 2, "text-anchor": "middle" }, "no samples yet (one every 10 s)"));
}
function drawCharts() {
  drawChart($("trend"), [{ key: "alloc", color: "#3b82f6" }, { key: "frag", color: "#d97706" }],
    { max: 100, ticks: [0, 25, 50, 75, 100], fmt: v => v + " %", label: "% of accelerators" });
  const ticks = countTicks(Math.max(1, ...S.samples.map(p => Math.max(p.running, p.pending))));
  drawChart($("jobtrend"), [{ key: "running", color: "#16a34a" }, { key: "pending", color: "#9333ea" }],
    { max: ticks[ticks.length - 1], ticks, fmt: String, label: "jobs" });
}
let resizeTimer = null;
window.addEventListener("resize", () => { clearTimeout(resizeTimer); resizeTimer = setTimeout(drawCharts, 150); });

/* ---- queues, tenants ---- */
function drawQueues() {
  $("queues").tBodies[0].replaceChildren(...S.queues.map(q => {
    const gpu = (q.quota || {}).gpu || {};
    const used = qty(gpu.used), g = qty(gpu.guarantee), m = gpu.max ? qty(gpu.max) : null;
    const scale = Math.max(used, g, m || 0, 1);
    const bar = el("div", { class: "bar", title: used + " used / " + g + " guaranteed / " + (m === null ? "no max" : m + " max") },
      el("i", { style: "width:" + (100 * used / scale) + "%" }));
    if (g) bar.append(el("b", { style: "left:" + (100 * g / scale) + "%" }));
    return el("tr", { "data-queue": q.name }, td("queue", q.name), td("GPUs", el("div", { style: "flex:1" }, bar, el("small", {}, used + " / " + g + " / " + (m === null ? "-" : m)))),
      td("pending", q.pending), td("running", q.running));
  }));
}
function drawTenants() {
  const held = new Map();
  for (const j of S.running)
    for (const a of j.allocations || [])
      for (const d of a.devices || [])
        if (d.class === "gpu") held.set(j.tenant, (held.get(j.tenant) || 0) + (d.compute_milli || 1000) / 1000);
  const u = S.usage;
  $("tenants").tBodies[0].replaceChildren(...(u.rows || []).map(r => {
    const gpuh = Object.values(r.device_hours || {}).reduce((a, b) => a + b, 0);
    return el("tr", { "data-tenant": r.tenant }, td("tenant", r.tenant), td("GPUs now", (held.get(r.tenant) || 0).toFixed(1)),
      td("device-h", gpuh.toFixed(2)), td("cost", u.priced ? r.cost.toFixed(2) + " " + u.currency : "-"));
  }));
}

/* ---- paging ---- */
function pager(id, which, count) {
  const pages = Math.max(1, Math.ceil(count / PAGE));
  S.page[which] = Math.min(S.page[which], pages - 1);
  const p = S.page[which], from = p * PAGE, to = Math.min(count, from + PAGE);
  const info = count ? (from + 1) + "\u2013" + to + " of " + count + (count > to ? " \u00b7 " + (count - to) + " more" : "") : "none";
  $(id).replaceChildren(
    el("button", { "data-page": which, "data-dir": "-1", "aria-label": "previous page", ...(p ? {} : { disabled: "" }) }, "\u2039 prev"),
    el("button", { "data-page": which, "data-dir": "1", "aria-label": "next page", ...(p < pages - 1 ? {} : { disabled: "" }) }, "next \u203a"),
    el("span", { class: "pager-info" }, info + (pages > 1 ? " (page " + (p + 1) + " of " + pages + ")" : "")));
  return [from, to];
}
document.addEventListener("click", e => {
  const b = e.target.closest("button[data-page]");
  if (b) { S.page[b.dataset.page] += Number(b.dataset.dir); b.dataset.page === "pending" ? drawPendingTable() : drawRunning(); return; }
  const c = e.target.closest("button[data-reason]");
  if (c) { S.reason = c.dataset.reason; S.page.pending = 0; drawPendingTable(); return; }
  const a = e.target.closest("a[data-open]");
  if (a) { e.preventDefault(); detail(Number(a.dataset.open)).catch(err => fail(err.message)); }
});

/* ---- pending jobs, grouped by reason ---- */
const REASONS = {
  dependencies: "waiting on other jobs", quota: "queue at its quota", starting: "starting or preempting",
  busy: "waiting for room", nonode: "no node has what it asks", nodes: "nodes down or cordoned",
  other: "other", unknown: "not explained yet",
  /* the API's pending_reason codes (squeue's REASON), with their words */
  Held: "held (Held)", Dependency: "waiting on other jobs (Dependency)",
  DependencyNeverSatisfied: "a dependency failed (DependencyNeverSatisfied)",
  QuotaMax: "queue at its quota (QuotaMax)", NoMatchingDevice: "no node has what it asks (NoMatchingDevice)",
  Draining: "nodes draining or cordoned (Draining)", NodeDown: "nodes down (NodeDown)",
  Resources: "waiting for room (Resources)", Priority: "behind a reservation (Priority)",
  None: "not tried yet (None)",
};
function structured(j) { /* a pending_reason field, when the API gives one */
  const p = j.pending_reason;
  if (!p) return null;
  const v = typeof p === "string" ? p : p.code || p.reason || p.kind;
  return v ? String(v) : null;
}
function reason(j) { /* -> a key of REASONS, or a structured reason's own name */
  const s = structured(j);
  if (s) return s;
  if ((j.waiting_on || []).length || /^waiting for job/.test(j.reason || "")) return "dependencies";
  const c = S.explain.get(j.id), ex = c && c.ex;
  if (!ex) return "unknown";
  if (ex.quota_blocked) return "quota";
  if (ex.fits_now || (ex.would_preempt || []).length) return "starting";
  const rs = (ex.reasons || []).map(r => r.reason);
  if (rs.some(r => /busy|short|room/.test(r))) return "busy";
  if (rs.some(r => /down/.test(r))) return "nodes";
  if (rs.length && rs.every(r => /no matching device|not the requested node/.test(r))) return "nonode";
  return "other";
}
const reasonLabel = k => REASONS[k] || k.replace(/_/g, " ");
function why(j) {
  const c = S.explain.get(j.id);
  if (c && c.ex && c.ex.summary) return c.ex.summary;
  const p = j.pending_reason;
  return (p && typeof p === "object" && (p.message || p.detail)) || j.reason || "";
}
async function explainMany(jobs) {
  const q = jobs.slice();
  const one = async () => {
    for (let j; (j = q.shift());) {
      try { S.explain.set(j.id, { at: Date.now(), ex: await api("/v1/jobs/" + j.id + "/explain") }); }
      catch (e) { if (e.status !== 404 && e.status !== 409) throw e; /* it started or ended meanwhile */ }
    }
  };
  await Promise.all(Array.from({ length: EXPLAIN_PAR }, one));
}
function visiblePending() {
  const list = S.reason ? S.pending.filter(j => reason(j) === S.reason) : S.pending;
  return [list, pager("pending-pager", "pending", list.length)];
}
async function drawPending() {
  const now = Date.now(), ids = new Set(S.pending.map(j => j.id));
  for (const id of S.explain.keys()) if (!ids.has(id)) S.explain.delete(id);
  const stale = j => { const c = S.explain.get(j.id); return !c || now - c.at > EXPLAIN_TTL_MS; };
  const needs = j => !structured(j) && !(j.waiting_on || []).length;
  await explainMany(S.pending.filter(j => needs(j) && stale(j)).slice(0, EXPLAIN_MAX));
  const [list, [from, to]] = visiblePending(); /* the page on screen: fresh summaries */
  await explainMany(list.slice(from, to).filter(j => {
    const c = S.explain.get(j.id);
    return !(j.waiting_on || []).length && (!c || c.at < now);
  }));
  drawPendingTable();
}
function drawPendingTable() {
  const counts = new Map();
  for (const j of S.pending) { const k = reason(j); counts.set(k, (counts.get(k) || 0) + 1); }
  if (S.reason && !counts.has(S.reason)) S.reason = "";
  $("pending-box").dataset.total = String(S.pending.length);
  $("reasons").replaceChildren(
    el("button", { class: "chip", "data-reason": "", "aria-pressed": String(!S.reason) }, "all pending", el("b", {}, S.pending.length)),
    ...[...counts].sort((a, b) => b[1] - a[1]).map(([k, n]) =>
      el("button", { class: "chip", "data-reason": k, "data-count": n, "aria-pressed": String(S.reason === k) }, reasonLabel(k), el("b", {}, n))));
  const [list, [from, to]] = visiblePending();
  $("pending").tBodies[0].replaceChildren(...list.slice(from, to).map(j =>
    el("tr", { "data-job": j.name, "data-reason": reason(j) }, td("job", jobLink(j)), td("tenant", j.tenant + " / " + j.queue),
      td("waiting", ago(j.submitted_at)), td("why", el("span", { class: "rtag" }, reasonLabel(reason(j))), el("span", { class: "why" }, why(j))))));
}

/* ---- running and finished jobs ---- */
function drawRunning() {
  const list = S.running.slice().reverse(); /* newest first */
  const [from, to] = pager("running-pager", "running", list.length);
  $("running").tBodies[0].replaceChildren(...list.slice(from, to).map(j =>
    el("tr", { "data-job": j.name }, td("job", jobLink(j)), td("tenant", j.tenant), td("node", nodesOf(j)), td("started", hms(j.started_at)))));
}
function keepFinished(jobs) {
  for (const j of jobs) if (["succeeded", "failed", "cancelled"].includes(j.state)) S.finished.set(j.id, j);
  const sorted = [...S.finished.values()].sort((a, b) => (b.finished_at || "").localeCompare(a.finished_at || "") || b.id - a.id);
  S.finished = new Map(sorted.slice(0, RECENT).map(j => [j.id, j]));
}
function drawFinished() {
  $("finished").tBodies[0].replaceChildren(...[...S.finished.values()].map(j =>
    el("tr", { "data-job": j.name, "data-state": j.state }, td("job", jobLink(j)), td("state", el("span", { class: "jstate " + j.state }, j.state)),
      td("exit", j.exit_code === null || j.exit_code === undefined ? "-" : j.exit_code), td("reason", el("span", { class: "why" }, j.reason || "")),
      td("node", nodesOf(j)), td("ended", el("span", { title: j.finished_at || "" }, hms(j.finished_at))))));
}
async function jobEnded(id) { /* from the event stream, before the debounced refresh */
  try {
    keepFinished([await api("/v1/jobs/" + id)]);
    S.running = S.running.filter(j => j.id !== id);
    drawFinished();
    drawRunning();
  }
  catch (e) { if (e.status !== 404) throw e; }
}

/* what each replica's vGPU account said at the last heartbeat: memory held,
 * compute share used, refusals */
function gpuUse(j) {
  const u = (j.allocations || []).filter(a => a.gpu_usage).map(a => {
    const g = a.gpu_usage, oom = g.ooms_at_cap + g.device_ooms;
    return "r" + a.replica + ": " + (g.memory_mib / 1024).toFixed(1) + " GiB" +
      (g.compute_milli_used === null ? "" : ", " + g.compute_milli_used + "m") +
      (oom ? ", " + oom + " OOM" + (g.device_ooms ? " (device full)" : "") : "");
  });
  return u.length ? u.join("; ") : "-";
}

async function detail(id) {
  const j = await api("/v1/jobs/" + id);
  $("detail-box").hidden = false;
  $("detail-id").textContent = id + " " + j.name;
  $("detail").replaceChildren(el("table", { class: "reflow" }, ...[
    ["state", j.state + (j.reason ? " (" + j.reason + ")" : "")], ["tenant / queue", j.tenant + " / " + j.queue],
    ["priority", j.priority], ["submitted", j.submitted_at], ["started", j.started_at || "-"], ["finished", j.finished_at || "-"],
    ["exit code", j.exit_code === null ? "-" : j.exit_code],
    ["replicas", (j.allocations || []).map(a => a.node + ":" + (a.devices || []).map(d => d.index).join("+")).join(" ") || "-"],
    ["GPU use", gpuUse(j)]
  ].map(([k, v]) => el("tr", {}, el("th", {}, k), td(k, v)))));
  const r = await fetch("/v1/jobs/" + id + "/logs", { headers: { "Authorization": "Bearer " + token } });
  $("logs").textContent = r.ok ? await r.text() : "(no logs yet: HTTP " + r.status + ")";
  $("detail-box").scrollIntoView({ behavior: "smooth", block: "nearest" });
}

/* from /metrics: the journal's sequence, to follow events from now */
async function journalSeq() {
  const t = await (await fetch("/metrics", { headers: { "Authorization": "Bearer " + token } })).text();
  const m = t.match(/^xpool_journal_seq ([0-9.eE+-]+)$/m);
  return m ? Number(m[1]) : 0;
}

async function refresh() {
  if (!token) { askToken(); return; }
  if (S.busy) { S.again = true; return; }
  S.busy = true;
  try {
    const [nodes, devices, queues, pending, running, finished, usage, h] = await Promise.all([
      all("/v1/nodes?limit=1000", "nodes"), api("/v1/devices"), api("/v1/queues"),
      all("/v1/jobs?state=pending&limit=1000", "jobs"), all("/v1/jobs?state=running&limit=1000", "jobs"),
      api("/v1/jobs?state=succeeded,failed,cancelled&newest=1&limit=200"),
      api("/v1/usage?by=tenant&since=24h"),
      api("/v1/history" + (S.samplesAt ? "?since=" + encodeURIComponent(S.samplesAt) : ""))]);
    Object.assign(S, { nodes, devices: devices.devices || [], queues: queues.queues || [], pending, running, usage });
    S.jobs = new Map(running.concat(pending).map(j => [j.id, j]));
    keepFinished(finished.jobs || []);
    for (const p of h.samples || []) { /* the server's samples (every 10 s, a day of them): the new ones */
      if (p.at <= S.samplesAt) continue;
      S.samples.push({ t: Date.parse(p.at), alloc: 100 * p.allocated, frag: 100 * p.fragmentation, running: p.running, pending: p.pending });
      S.samplesAt = p.at;
    }
    if (S.samples.length > SAMPLES_MAX) S.samples.splice(0, S.samples.length - SAMPLES_MAX);
    drawTopology();
    drawCharts();
    drawQueues();
    drawRunning();
    drawTenants();
    drawFinished();
    await drawPending();
    document.body.dataset.refreshes = String(Number(document.body.dataset.refreshes) + 1);
    $("status").textContent = "updated " + new Date().toISOString().slice(11, 19) + " UTC \u00b7 " + S.events + " events followed";
  } finally {
    S.busy = false;
    if (S.again) { S.again = false; soon(); }
  }
}
function soon() { clearTimeout(timer); timer = setTimeout(() => refresh().catch(e => fail(e.message)), 300); }

async function follow() { /* the event stream, by long poll */
  for (;;) {
    try {
      const r = await api("/v1/events?since=" + since + "&wait=" + pollWait);
      const evs = r.events || [];
      S.events += evs.length;
      const ended = evs.filter(e => (e.type === "job.finished" || e.type === "job.cancelled") && e.job);
      if (ended.length <= 20) /* a burst waits for the refresh's list */
        for (const e of ended) jobEnded(e.job).catch(err => fail(err.message));
      if (evs.length) soon();
      since = r.next || since;
      if (!pollWait) /* short polls (tests: #wait=0) */
        await new Promise(res => setTimeout(res, 500));
    } catch (e) {
      if (e.status === 410) { since = await journalSeq().catch(() => since); soon(); continue; } /* older than the ring: list again */
      await new Promise(res => setTimeout(res, 2000));
    }
  }
}

(async () => {
  if (!token) { askToken(); return; }
  localStorage.setItem("xpool-token", token);
  try {
    since = await journalSeq(); /* follow from now */
    await refresh();
  } catch (e) { fail(e.message); }
  follow();
})();
