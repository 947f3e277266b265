// dashboard.js: the dashboard at /ui in Debian's headless chromium, driven
// through the DevTools protocol (chrome-remote-interface). Used by
// tests/cli_ui.sh (the checks) and bench/ui.sh (the event delay).
//
// It waits on conditions in the page, never on sleeps or virtual time:
// every wait polls the page's DOM until it holds or 30 s pass (a busy or
// sanitized run is slow, not wrong). It checks that
//   - the page loads with no console error or warning, no exception and no
//     failed request;
//   - every node of the cluster (UI_NODES: the descriptor's entries, and
//     every node the API lists) is drawn, grouped by region and zone, with
//     its islands (device count, fabric) and NUMA domains as the API says
//     and, with UI_TOPO, as the descriptor declares them;
//   - DPUs and CPUs are drawn as their own classes (shape, label, legend);
//   - a device's tooltip, on hover and on keyboard focus (Tab), shows its
//     model, memory and the job on it;
//   - both charts have axes: ticks on time and value, labels with units;
//   - the pending list shows a page of 25 and "N more" when there are more,
//     pages on, and its per-reason counts add up to the pending total;
//   - the running job, the queue and the tenant are shown;
//   - a job submitted through the API while the page is open appears
//     without a reload (the delay is printed: a bench figure, not asserted),
//     and a job that ends appears in the recently finished list with its
//     state and exit code, also without a reload;
//   - at a 375 px wide viewport nothing scrolls sideways, every node is
//     still drawn inside it, and tables become stacked cards;
//   - screenshots are kept: desktop (ui.png), tooltip (ui-tooltip.png),
//     phone width (ui-phone.png).
// Environment: CHROME, XPOOL_ADDR, XPOOL_TOKEN, UI_NODES
// (the descriptor's entries, spaces; one with `count` names the prefix
// of its nodes), UI_ARTIFACTS (a folder), UI_LIVE (the live job's name), UI_PROFILE (a
// fresh folder for chromium's profile), optional UI_TOPO (what the
// descriptor declares, see topoSpec) and UI_REASONS (reason labels that
// must have a count, separated by commas). Prints one line per failure,
// "delay_ms N" for the live job; exits 1 on any failure.
"use strict";
const { spawn } = require("child_process");
const fs = require("fs");
const path = require("path");
const CDP = require("chrome-remote-interface");

// UI_WAIT_MS shortens the waits only to run the checks against an old page
// that fails them all (see docs/results/first-hour.md, section 11)
const WAIT_MS = Number(process.env.UI_WAIT_MS || 30000), PAGE = 25, PHONE = 375;
const env = k => {
  const v = process.env[k];
  if (!v) throw new Error(k + " is not set");
  return v;
};
const addr = env("XPOOL_ADDR"), token = env("XPOOL_TOKEN");
const nodes = (process.env.UI_NODES || "").split(/\s+/).filter(Boolean);
const art = env("UI_ARTIFACTS"), live = process.env.UI_LIVE || "ui-live";
const reasons = (process.env.UI_REASONS || "").split(",").filter(Boolean);
const failures = [];
const fail = m => { failures.push(m); console.log("FAIL: " + m); };

// UI_TOPO: entries separated by spaces, NODE@REGION/ZONE then ':'-separated
// groups: islandI=N (island I of N devices, NVLink/HCCS named by ~FABRIC:
// island0=8~nvlink), numaK>islandI=N (that island inside NUMA domain K's
// box), numas=K (the node declares K NUMA domains), dpu (a DPU is drawn).
function topoSpec(s) {
  return s.split(/\s+/).filter(Boolean).map(e => {
    const [head, ...groups] = e.split(":");
    const m = head.match(/^([^@]+)@([^/]*)\/(.*)$/);
    if (!m) throw new Error("UI_TOPO: bad entry " + e);
    return { node: m[1], region: m[2], zone: m[3], groups };
  });
}
const topo = topoSpec(process.env.UI_TOPO || "");

async function api(p, init) {
  const r = await fetch(addr + p, Object.assign({ headers: { "Authorization": "Bearer " + token, "Content-Type": "application/json" } }, init));
  const body = await r.text();
  if (!r.ok) throw new Error(p + ": HTTP " + r.status + ": " + body);
  return JSON.parse(body);
}

// chromium with a DevTools port of its own choosing: its stderr names it
function launch() {
  return new Promise((resolve, reject) => {
    const args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
      "--no-first-run", "--no-default-browser-check", "--remote-debugging-port=0",
      "--remote-debugging-address=127.0.0.1", "--user-data-dir=" + env("UI_PROFILE"),
      "--window-size=1400,1000", "--hide-scrollbars", "about:blank"];
    const p = spawn(env("CHROME"), args, { stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    const t = setTimeout(() => reject(new Error("chromium named no DevTools port in 30 s: " + err.slice(-400))), WAIT_MS);
    p.stderr.on("data", d => {
      err += d;
      const m = err.match(/DevTools listening on ws:\/\/[^:]+:(\d+)\//);
      if (m) { clearTimeout(t); resolve({ proc: p, port: Number(m[1]) }); }
    });
    p.on("exit", c => { clearTimeout(t); reject(new Error("chromium exited (" + c + "): " + err.slice(-400))); });
  });
}

async function main() {
  const { proc, port } = await launch();
  let client;
  try {
    client = await CDP({ port, local: true });
    const { Page, Runtime, Network, Log, Input, Emulation } = client;
    const problems = [];
    Runtime.consoleAPICalled(e => {
      if (e.type === "error" || e.type === "warning" || e.type === "assert")
        problems.push("console " + e.type + ": " + e.args.map(a => a.value || a.description).join(" "));
    });
    Runtime.exceptionThrown(e => problems.push("exception: " + (e.exceptionDetails.exception &&
      e.exceptionDetails.exception.description || e.exceptionDetails.text)));
    Log.entryAdded(e => {
      if (e.entry.level === "error" || e.entry.level === "warning")
        problems.push("log " + e.entry.level + ": " + e.entry.text + " " + (e.entry.url || ""));
    });
    const urls = {};
    Network.requestWillBeSent(e => { urls[e.requestId] = e.request.url; });
    Network.loadingFailed(e => {
      if (!e.canceled) problems.push("request failed: " + urls[e.requestId] + ": " + e.errorText);
    });
    Network.responseReceived(e => {
      if (e.response.status >= 400) problems.push("HTTP " + e.response.status + ": " + e.response.url);
    });
    await Promise.all([Runtime.enable(), Log.enable(), Network.enable(), Page.enable()]);

    const evaluate = async expr => {
      const r = await Runtime.evaluate({ expression: expr, returnByValue: true, awaitPromise: true });
      if (r.exceptionDetails) throw new Error(expr + ": " + (r.exceptionDetails.exception && r.exceptionDetails.exception.description || r.exceptionDetails.text));
      return r.result.value;
    };
    // poll the page until expr is truthy; false after WAIT_MS
    const waitFor = async (expr, ms = WAIT_MS) => {
      const end = Date.now() + ms;
      for (;;) {
        if (await evaluate(expr)) return true;
        if (Date.now() > end) return false;
        await new Promise(r => setTimeout(r, 50));
      }
    };
    const check = async (expr, what) => { if (!(await waitFor(expr))) { fail(what); return false; } return true; };
    const shoot = async (name, full) => {
      let opts = { format: "png" };
      if (full) {
        const m = await Page.getLayoutMetrics();
        const c = m.cssContentSize || m.contentSize;
        opts = { format: "png", captureBeyondViewport: true, clip: { x: 0, y: 0, width: c.width, height: Math.min(c.height, 6000), scale: 1 } };
      }
      const shot = await Page.captureScreenshot(opts);
      fs.mkdirSync(art, { recursive: true });
      const file = path.join(art, name);
      fs.writeFileSync(file, Buffer.from(shot.data, "base64"));
      if (fs.statSync(file).size < 1000) fail("the screenshot at " + file + " is empty");
    };
    const q = s => JSON.stringify(s); /* a string literal for the page */

    await Page.navigate({ url: addr + "/ui#token=" + token });
    await check(`document.readyState === "complete" && Number(document.body.dataset.refreshes) >= 1`,
      "the page did not draw (data-refreshes=0) in 30 s");

    // every node, in its region and zone, with the topology the API gives
    // UI_NODES are the descriptor's entries: a name, or the prefix of
    // `count` nodes (gpu-a100 -> gpu-a100-0, gpu-a100-1)
    for (const n of nodes)
      await check(`[...document.querySelectorAll(".node")].some(c => c.dataset.node === ${q(n)} || c.dataset.node.startsWith(${q(n + "-")}))`,
        "topology: no card for the descriptor's node " + n);
    const apiNodes = (await api("/v1/nodes")).nodes;
    for (const n of apiNodes) {
      const sel = `.region[data-region=${q(n.region || "")}] .zone[data-zone=${q(n.zone || "")}] .node[data-node=${q(n.name)}]`;
      if (!(await check(`!!document.querySelector(${q(sel)})`, "topology: " + n.name + " is not drawn under region " + (n.region || "-") + ", zone " + (n.zone || "-"))))
        continue;
      for (const isl of n.islands || []) {
        const got = await evaluate(`(() => { const b = document.querySelector(${q(sel + " .island[data-island=\"" + isl.id + "\"]")});
          return b ? b.querySelectorAll(".dev").length + "/" + b.dataset.fabric : "none"; })()`);
        if (got !== isl.devices.length + "/" + (isl.interconnect || ""))
          fail("topology: " + n.name + " island " + isl.id + ": drawn " + got + ", the API says " + isl.devices.length + "/" + isl.interconnect);
      }
      const numas = await evaluate(`(() => { const c = document.querySelector(${q(sel)}); return c ? c.dataset.numaDomains : null; })()`);
      if (String(numas) !== String(n.numa_domains || 0))
        fail("topology: " + n.name + ": " + numas + " NUMA domains drawn, the API says " + n.numa_domains);
    }
    // ... and as the descriptor declares it
    for (const t of topo) {
      const sel = `.region[data-region=${q(t.region)}] .zone[data-zone=${q(t.zone)}] .node[data-node=${q(t.node)}]`;
      if (!(await check(`!!document.querySelector(${q(sel)})`, "descriptor: " + t.node + " not under region " + t.region + ", zone " + t.zone)))
        continue;
      if (!(await evaluate(`document.querySelector(${q(sel)}).closest(".zone").querySelector("h4").textContent.includes(${q(t.zone)})`)))
        fail("descriptor: the zone heading of " + t.node + " does not name " + t.zone);
      for (const g of t.groups) {
        let m;
        if (g === "dpu") {
          const ok = await evaluate(`(() => { const d = document.querySelector(${q(sel + " .dev.dev-dpu[data-class=dpu]")});
            return !!d && d.querySelector(".tag").textContent === "DPU"; })()`);
          if (!ok) fail("descriptor: " + t.node + " has no device drawn with the DPU class and label");
        } else if ((m = g.match(/^numas=(\d+)$/))) {
          const txt = await evaluate(`document.querySelector(${q(sel + " .node-meta")}) ? document.querySelector(${q(sel + " .node-meta")}).textContent : ""`);
          if (!txt.includes(m[1] + " NUMA")) fail("descriptor: " + t.node + " does not show " + m[1] + " NUMA domains (head: " + JSON.stringify(txt) + ")");
        } else if ((m = g.match(/^(?:numa(\d+)>)?island(\d+)=(\d+)(?:~(\w+))?$/))) {
          const [, numa, id, count, fab] = m;
          const isel = sel + (numa !== undefined ? ` .numa[data-numa="${numa}"]` : "") + ` .island[data-island="${id}"]`;
          const got = await evaluate(`(() => { const b = document.querySelector(${q(isel)});
            return b ? { n: b.querySelectorAll(".dev").length, label: b.querySelector(".group-label").textContent } : null; })()`);
          const where = (numa !== undefined ? "NUMA " + numa + " > " : "") + "island " + id;
          if (!got) fail("descriptor: " + t.node + ": no " + where);
          else if (got.n !== Number(count)) fail("descriptor: " + t.node + ": " + where + " has " + got.n + " devices, not " + count);
          else if (fab && !got.label.toLowerCase().includes(fab)) fail("descriptor: " + t.node + ": " + where + " is labelled " + JSON.stringify(got.label) + ", not " + fab);
        } else throw new Error("UI_TOPO: bad group " + g);
      }
    }

    // DPUs and CPUs: their own classes, shapes and legend entries
    if (await check(`!!document.querySelector(".node .dev.dev-dpu")`, "classes: no device drawn as a DPU")) {
      const shape = await evaluate(`(() => {
        const box = e => { const r = e.getBoundingClientRect(); return { w: r.width, h: r.height, radius: getComputedStyle(e).borderTopLeftRadius, style: getComputedStyle(e).borderTopStyle }; };
        const d = document.querySelector(".node .dev.dev-dpu"), g = document.querySelector(".node .dev.dev-gpu"), c = document.querySelector(".node .dev.dev-cpu");
        return { dpu: box(d), gpu: g && box(g), cpu: c && box(c), tag: d.querySelector(".tag") && d.querySelector(".tag").textContent,
          legend: [...document.querySelectorAll("#legend .dev")].map(e => e.className) }; })()`);
      if (shape.tag !== "DPU") fail("classes: a DPU is not labelled DPU: " + shape.tag);
      if (!shape.gpu || (shape.dpu.w / shape.dpu.h < 1.4 && shape.dpu.style === shape.gpu.style))
        fail("classes: a DPU is drawn like a GPU: " + JSON.stringify(shape));
      if (!shape.cpu || shape.cpu.radius !== "50%" && parseFloat(shape.cpu.radius) < shape.cpu.w / 2 - 1)
        fail("classes: no node CPU drawn as a CPU (a circle): " + JSON.stringify(shape.cpu));
      if (!shape.legend.some(c => /dev-dpu/.test(c)) || !shape.legend.some(c => /dev-cpu/.test(c)))
        fail("classes: the legend has no DPU or CPU entry: " + JSON.stringify(shape.legend));
    }
    const cpus = await evaluate(`document.querySelectorAll(".node .dev-cpu[data-class=cpu]").length`);
    if (cpus < apiNodes.length) fail("classes: " + cpus + " node CPUs drawn for " + apiNodes.length + " nodes");

    await check(`[...document.querySelectorAll("#trend polyline, #trend circle")].length > 0`, "the history chart has no point");
    // charts: axes with ticks and labelled units
    for (const [id, unit] of [["trend", "%"], ["jobtrend", "jobs"]]) {
      const ax = await evaluate(`(() => { const s = document.getElementById(${q(id)}); if (!s) return null;
        return { labels: [...s.querySelectorAll(".axis-label")].map(t => t.textContent), x: s.querySelectorAll(".axis.x .tick").length,
                 y: [...s.querySelectorAll(".axis.y .tick")].map(t => t.textContent) }; })()`);
      if (!ax) { fail("chart " + id + ": absent"); continue; }
      if (!ax.labels.some(l => /time/.test(l) && /UTC/.test(l))) fail("chart " + id + ": no time axis label: " + JSON.stringify(ax.labels));
      if (!ax.labels.some(l => l.includes(unit))) fail("chart " + id + ": no value axis label with " + unit + ": " + JSON.stringify(ax.labels));
      if (ax.x < 2) fail("chart " + id + ": " + ax.x + " time ticks");
      if (ax.y.length < 3 || (unit === "%" && !ax.y.every(t => t.includes("%")))) fail("chart " + id + ": value ticks " + JSON.stringify(ax.y));
    }

    await check(`document.body.textContent.includes("ui-pending")`, "pending jobs: ui-pending missing");
    await check(`!!document.querySelector("#pending .why")`, "pending jobs: no explanation");
    await check(`!!document.querySelector('#running [data-job="ui-running"]')`, "running jobs: ui-running missing");
    await check(`document.body.textContent.includes("ui-team")`, "queues: ui-team missing");
    await check(`!!document.querySelector('[data-tenant="admin"]')`, "tenants: admin missing");

    // the pending list: all of it, paged, counted per reason
    const pending = (await api("/v1/jobs?state=pending&limit=1000")).jobs;
    const P = pending.length, sumChips = `[...document.querySelectorAll("#reasons [data-count]")].reduce((a, c) => a + Number(c.dataset.count), 0)`;
    if (await check(`document.getElementById("pending-box") && document.getElementById("pending-box").dataset.total === "${P}" && ${sumChips} === ${P}`,
      "pending: the per-reason counts do not add up to the " + P + " pending jobs: " +
      await evaluate(`document.getElementById("reasons") ? document.getElementById("reasons").textContent : "(no counts)"`))) {
      for (const r of reasons)
        if (!(await evaluate(`[...document.querySelectorAll("#reasons [data-count]")].some(c => c.textContent.includes(${q(r)}) && Number(c.dataset.count) > 0)`)))
          fail("pending: no count for the reason " + JSON.stringify(r) + ": " + await evaluate(`document.getElementById("reasons").textContent`));
    }
    const rows = `document.querySelectorAll("#pending tbody tr").length`;
    if (P > PAGE) {
      if (await check(`${rows} === ${PAGE} && document.getElementById("pending-pager").textContent.includes("${P - PAGE} more")`,
        "pending: with " + P + " pending, not a page of " + PAGE + " and \"" + (P - PAGE) + " more\": " +
        await evaluate(`${rows} + " rows; " + (document.getElementById("pending-pager") || {}).textContent`))) {
        await evaluate(`document.querySelector('#pending-pager button[data-dir="1"]').click()`);
        const last = pending[pending.length - 1].name;
        await check(`${rows} === ${Math.min(PAGE, P - PAGE)} && !!document.querySelector('#pending [data-job=${q(last)}]')`,
          "pending: the next page does not show the rest (" + last + ")");
      }
    } else {
      await check(`${rows} === ${P}`, "pending: " + P + " jobs, rows " + rows);
    }

    // a device's tooltip on hover, then on keyboard focus: model, memory, the job
    const running = (await api("/v1/jobs?name=ui-running")).jobs[0];
    if (running && running.allocations.length) {
      const a = running.allocations[0], dev = (await api("/v1/devices?node=" + a.node)).devices.find(d => d.index === a.devices[0].index);
      const key = a.node + "/" + dev.index, memTotal = Math.round(dev.memory_mib / 1024) + " GiB";
      const tipHas = `(() => { const t = document.getElementById("tip"); return !!t && !t.hidden && t.dataset.for === ${q(key)} &&
        t.textContent.includes(${q(dev.model)}) && t.textContent.includes(${q(memTotal)}) && t.textContent.includes("ui-running"); })()`;
      const tipText = `(document.getElementById("tip") || {}).textContent`;
      if (await check(`!!document.querySelector('[data-dev=${q(key)}]')`, "tooltip: device " + key + " is not drawn")) {
        // scrolled, and the scroll's events delivered (two frames), before the mouse moves there
        await evaluate(`document.querySelector('[data-dev=${q(key)}]').scrollIntoView({ block: "center" });
          new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))`);
        const r = await evaluate(`(() => { const b = document.querySelector('[data-dev=${q(key)}]').getBoundingClientRect(); return { x: b.x + b.width / 2, y: b.y + b.height / 2 }; })()`);
        await Input.dispatchMouseEvent({ type: "mouseMoved", x: r.x, y: r.y });
        if (await check(tipHas, "tooltip on hover over " + key + ": no model " + dev.model + ", memory " + memTotal + " and job ui-running: " + await evaluate(tipText)))
          await shoot("ui-tooltip.png");
        await Input.dispatchMouseEvent({ type: "mouseMoved", x: 2, y: 2 });
        await check(`!document.getElementById("tip") || document.getElementById("tip").hidden`, "tooltip: stays open after the mouse left");
        // keyboard: focus the element before it, then Tab onto it
        await evaluate(`(() => { const all = [...document.querySelectorAll('[tabindex="0"], a[href], button, select, input')];
          const i = all.indexOf(document.querySelector('[data-dev=${q(key)}]')); all[i - 1].focus(); })()`);
        await Input.dispatchKeyEvent({ type: "keyDown", key: "Tab", code: "Tab", windowsVirtualKeyCode: 9 });
        await Input.dispatchKeyEvent({ type: "keyUp", key: "Tab", code: "Tab", windowsVirtualKeyCode: 9 });
        await check(`document.activeElement && document.activeElement.dataset.dev === ${q(key)} && ${tipHas}`,
          "tooltip on keyboard focus (Tab) of " + key + ": " + await evaluate(tipText));
        await evaluate(`document.activeElement.blur()`);
      }
    } else fail("tooltip: ui-running has no allocation to look at");

    // a job submitted through the API while the page is open: it must
    // arrive through the event stream, with no reload (the marker stays)
    await evaluate(`window.__xpMarker = 1`);
    const t0 = Date.now();
    try {
      await api("/v1/jobs", { method: "POST", body: JSON.stringify({ name: live, resources: { cpu: 1 }, duration: "1h" }) });
      if (await waitFor(`!!document.querySelector('#running [data-job="${live}"]')`)) {
        console.log("delay_ms " + (Date.now() - t0));
        if (!(await evaluate(`window.__xpMarker === 1`))) fail("the page reloaded to show the job");
      } else {
        fail("the job submitted while the page was open did not appear in 30 s");
      }
    } catch (e) { fail(e.message); }
    // a job that ends while the page is open: the recently finished list
    const done = live + "-done";
    try {
      await api("/v1/jobs", { method: "POST", body: JSON.stringify({ name: done, resources: { cpu: 1 }, duration: "1s", exit_code: 3 }) });
      const row = `document.querySelector('#finished tbody tr[data-job=${q(done)}]')`;
      if (await check(`!!${row} && ${row}.dataset.state === "failed" && ${row}.querySelector('[data-label="exit"]').textContent === "3" && ${row} === document.querySelector("#finished tbody tr")`,
        "recently finished: " + done + " (failed, exit 3) not at the top in 30 s: " + await evaluate(`(document.querySelector("#finished tbody") || {}).textContent`))) {
        if (!(await evaluate(`window.__xpMarker === 1`))) fail("the page reloaded to show the finished job");
        const cells = await evaluate(`[...${row}.querySelectorAll("td")].map(t => t.dataset.label + "=" + t.textContent)`);
        for (const want of ["node=", "ended="]) if (!cells.some(c => c.startsWith(want) && c.length > want.length + 1)) fail("recently finished: no " + want + " in " + cells);
      }
    } catch (e) { fail(e.message); }

    await evaluate(`window.scrollTo(0, 0)`);
    await shoot("ui.png", true);

    // phone width: no sideways scroll, every node still drawn inside it
    await Emulation.setDeviceMetricsOverride({ width: PHONE, height: 812, deviceScaleFactor: 1, mobile: true });
    // (a page without a viewport meta tag is laid out 980 px wide and
    // scaled down: that is the sideways scroll this catches)
    if (await check(`screen.width === ${PHONE}`, "phone: the screen did not become " + PHONE + " px")) {
      const wide = `document.documentElement.scrollWidth <= ${PHONE} && document.body.scrollWidth <= ${PHONE}`;
      await check(wide, "phone: the page scrolls sideways at " + PHONE + " px: scrollWidth " +
        await evaluate(`document.documentElement.scrollWidth + " (widest: " + [...document.querySelectorAll("body *")].filter(e => e.getBoundingClientRect().right > ${PHONE} + 0.5).slice(0, 4).map(e => e.tagName + "." + e.className + "#" + e.id).join(", ") + ")"`));
      for (const n of apiNodes.map(x => x.name))
        await check(`(() => { const c = document.querySelector('.node[data-node=${q(n)}]'); if (!c) return false;
          const r = c.getBoundingClientRect(); return r.width > 0 && r.left >= 0 && r.right <= ${PHONE} && !!c.querySelector(".dev"); })()`,
        "phone: node " + n + " is not drawn inside " + PHONE + " px");
      await check(`getComputedStyle(document.querySelector("#pending thead")).display === "none" && getComputedStyle(document.querySelector("#pending tbody td")).display !== "table-cell"`,
        "phone: the pending table does not reflow into cards");
      await shoot("ui-phone.png", true);
    }
    await Emulation.clearDeviceMetricsOverride();

    const errs = await evaluate(`document.body.dataset.errors`);
    if (errs !== "0") fail("the page counted errors: " + errs + ": " + await evaluate(`document.getElementById("error").textContent`));
    for (const p of problems) fail(p);
  } finally {
    if (client) await client.close().catch(() => {});
    proc.kill("SIGTERM");
    await new Promise(r => { if (proc.exitCode !== null) r(); else proc.on("exit", r); });
  }
}

main().then(() => process.exit(failures.length ? 1 : 0),
  e => { console.log("FAIL: " + e.message); process.exit(1); });
