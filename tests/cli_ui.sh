#!/bin/sh
# cli_ui: the dashboard at /ui in headless Chromium (Debian's `chromium`,
# installed by scripts/deps.sh) against a real `xpool dev`: the page loads
# without console errors or failed requests, the heatmap shows every seeded
# node, a pending job appears with its explanation and a running one in the
# job list, a job submitted while the page is open appears through the
# event stream, and a screenshot is kept as a test artifact
# (BUILD/artifacts/ui.png). Skips (exit 0) when chromium is absent.
# usage: cli_ui.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
XP=$1 SRC=$3
CHROME=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROME" ]; then
	echo "SKIP: chromium not installed (scripts/deps.sh installs it)"
	exit 0
fi
ART=$(cd "$(dirname "$XP")" && pwd)/artifacts
mkdir -p "$ART"
. "$SRC/tests/devlib.sh"
start_dev --no-agent --cluster "$SRC/examples/clusters/small.yaml"

run submit -q --name ui-running --gpus 2 --cpu 4 --duration 1h; expect 0 "submit ui-running"
run submit -q --name ui-pending --gpus 64 --duration 1h; expect 0 "submit ui-pending"
run queue create ui-team --guarantee gpu=4 --max gpu=8; expect 0 "queue create"

chrome() { # chrome ARGS...: headless, as root, quiet, bounded
	timeout 90 "$CHROME" --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage \
		--no-first-run --user-data-dir="$T/chrome" "$@"
}
# short polls every 500 ms of the page's virtual time: 20 virtual minutes
# take a few real seconds, and a job submitted meanwhile must arrive through
# the event stream
URL="$XPOOL_ADDR/ui#token=$XPOOL_TOKEN&wait=0"
(sleep 1.5; "$XP" submit -q --name ui-live --cpu 1 --duration 1h >/dev/null 2>&1) &
LIVE=$!
chrome --enable-logging=stderr --v=0 --virtual-time-budget=1200000 --dump-dom "$URL" \
	>"$T/dom.html" 2>"$T/chrome.err"
wait "$LIVE"
grep -q 'data-errors="0"' "$T/dom.html" || fail "the page counted errors: $(grep -o 'id="error"[^<]*<' "$T/dom.html")"
grep -q 'data-refreshes="[2-9]' "$T/dom.html" || grep -q 'data-refreshes="[1-9][0-9]' "$T/dom.html" || fail "the page did not refresh on an event: $(grep -o 'data-refreshes="[0-9]*"' "$T/dom.html")"
grep 'INFO:CONSOLE' "$T/chrome.err" >"$T/console" && fail "console messages: $(head -5 "$T/console")"
for n in $(sed -n 's/^  - name: *//p' "$SRC/examples/clusters/small.yaml"); do
	grep -q "data-node=\"$n" "$T/dom.html" || fail "heatmap: no row for $n"
done
grep -q 'class="cell"' "$T/dom.html" || fail "heatmap: no device cells"
grep -q 'polyline[^>]*points="[0-9]' "$T/dom.html" || fail "the history chart has no point"
grep -q 'ui-pending' "$T/dom.html" || fail "pending jobs: ui-pending missing"
grep -q 'class="why"' "$T/dom.html" || fail "pending jobs: no explanation"
grep -q 'data-job="ui-running"' "$T/dom.html" || fail "running jobs: ui-running missing"
grep -q 'ui-team' "$T/dom.html" || fail "queues: ui-team missing"
grep -q 'data-tenant="admin"' "$T/dom.html" || fail "tenants: admin missing"
grep -q 'data-job="ui-live"' "$T/dom.html" || fail "the job submitted while the page was open did not appear"
# the screenshot, kept for people
chrome --virtual-time-budget=5000 --window-size=1400,1000 --screenshot="$ART/ui.png" "$URL" \
	>/dev/null 2>&1 || fail "screenshot"
[ -s "$ART/ui.png" ] || fail "no screenshot at $ART/ui.png"
# /ui needs no token and carries no data; the API behind it does
curl -s -o /dev/null -w '%{http_code}' "$XPOOL_ADDR/ui" | grep -q 200 || fail "GET /ui"
curl -s -D - -o /dev/null "$XPOOL_ADDR/ui" | grep -qi 'content-security-policy' || fail "/ui without a CSP"
[ "$fails" -eq 0 ] || exit 1
echo "ok: the dashboard loads clean, shows the pool and follows events; screenshot $ART/ui.png"
