// dashboard.js: the dashboard at /ui in Debian's headless chromium, driven
// through the DevTools protocol (chrome-remote-interface). Used by
// tests/cli_ui.sh (the checks) and bench/ui.sh (the event delay).
//
// It waits on conditions in the page, never on sleeps or virtual time:
// every wait polls the page's DOM until it holds or 30 s pass (a busy or
// sanitized run is slow, not wrong). It checks that
//   - the page loads with no console error or warning, no exception and no
//     failed request;
//   - every node of the cluster is drawn, with device cells, a trend with
//     points, the pending job and its reason, the running job, the queue
//     and the tenant;
//   - a job submitted through the API while the page is open appears
//     without a reload (the delay is printed: a bench figure, not asserted);
//   - a screenshot is kept.
// Environment: CHROME, XPOOL_ADDR, XPOOL_TOKEN, UI_NODES (names, spaces),
// UI_ARTIFACTS (a folder), UI_LIVE (the live job's name), UI_PROFILE (a
// fresh folder for chromium's profile). Prints one line per failure, and
// "delay_ms N" for the live job; exits 1 on any failure.
"use strict";
const { spawn } = require("child_process");
const fs = require("fs");
const path = require("path");
const CDP = require("chrome-remote-interface");

const WAIT_MS = 30000;
const env = k => {
  const v = process.env[k];
  if (!v) throw new Error(k + " is not set");
  return v;
};
const addr = env("XPOOL_ADDR"), token = env("XPOOL_TOKEN");
const nodes = (process.env.UI_NODES || "").split(/\s+/).filter(Boolean);
const art = env("UI_ARTIFACTS"), live = process.env.UI_LIVE || "ui-live";
const failures = [];
const fail = m => { failures.push(m); console.log("FAIL: " + m); };

// chromium with a DevTools port of its own choosing: its stderr names it
function launch() {
  return new Promise((resolve, reject) => {
    const args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
      "--no-first-run", "--no-default-browser-check", "--remote-debugging-port=0",
      "--remote-debugging-address=127.0.0.1", "--user-data-dir=" + env("UI_PROFILE"),
      "--window-size=1400,1000", "about:blank"];
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
    const { Page, Runtime, Network, Log } = client;
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
      const r = await Runtime.evaluate({ expression: expr, returnByValue: true });
      if (r.exceptionDetails) throw new Error(expr + ": " + r.exceptionDetails.text);
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
    const check = async (expr, what) => { if (!(await waitFor(expr))) fail(what); };

    await Page.navigate({ url: addr + "/ui#token=" + token });
    await check(`document.readyState === "complete" && Number(document.body.dataset.refreshes) >= 1`,
      "the page did not draw (data-refreshes=0) in 30 s");
    for (const n of nodes)
      await check(`!!document.querySelector('[data-node^="${n}"]')`, "heatmap: no row for " + n);
    await check(`!!document.querySelector(".cell")`, "heatmap: no device cells");
    await check(`[...document.querySelectorAll("polyline")].some(p => /^[0-9]/.test(p.getAttribute("points") || ""))`,
      "the history chart has no point");
    await check(`document.body.textContent.includes("ui-pending")`, "pending jobs: ui-pending missing");
    await check(`!!document.querySelector(".why")`, "pending jobs: no explanation");
    await check(`!!document.querySelector('[data-job="ui-running"]')`, "running jobs: ui-running missing");
    await check(`document.body.textContent.includes("ui-team")`, "queues: ui-team missing");
    await check(`!!document.querySelector('[data-tenant="admin"]')`, "tenants: admin missing");

    // a job submitted through the API while the page is open: it must
    // arrive through the event stream, with no reload (the marker stays)
    await evaluate(`window.__xpMarker = 1`);
    const t0 = Date.now();
    const r = await fetch(addr + "/v1/jobs", {
      method: "POST",
      headers: { "Authorization": "Bearer " + token, "Content-Type": "application/json" },
      body: JSON.stringify({ name: live, resources: { cpu: 1 }, duration: "1h" }),
    });
    if (r.status !== 201) fail("POST /v1/jobs: HTTP " + r.status + ": " + (await r.text()));
    if (await waitFor(`!!document.querySelector('[data-job="${live}"]')`)) {
      console.log("delay_ms " + (Date.now() - t0));
      if (!(await evaluate(`window.__xpMarker === 1`))) fail("the page reloaded to show the job");
    } else {
      fail("the job submitted while the page was open did not appear in 30 s");
    }
    const errs = await evaluate(`document.body.dataset.errors`);
    if (errs !== "0") fail("the page counted errors: " + errs + ": " + await evaluate(`document.getElementById("error").textContent`));
    for (const p of problems) fail(p);

    const shot = await Page.captureScreenshot({ format: "png" });
    fs.mkdirSync(art, { recursive: true });
    const file = path.join(art, "ui.png");
    fs.writeFileSync(file, Buffer.from(shot.data, "base64"));
    if (fs.statSync(file).size < 1000) fail("the screenshot at " + file + " is empty");
  } finally {
    if (client) await client.close().catch(() => {});
    proc.kill("SIGTERM");
    await new Promise(r => { if (proc.exitCode !== null) r(); else proc.on("exit", r); });
  }
}

main().then(() => process.exit(failures.length ? 1 : 0),
  e => { console.log("FAIL: " + e.message); process.exit(1); });
