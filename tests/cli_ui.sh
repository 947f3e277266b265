#!/bin/sh
# cli_ui: the dashboard at /ui in headless Chromium (Debian's `chromium`),
# driven through the DevTools protocol by tests/ui/dashboard.js against a
# real `xpool dev`: the page loads without console errors or failed
# requests, every seeded node is drawn, a pending job appears with its
# explanation and a running one in the job list, a job submitted through
# the API while the page is open appears without a reload, and a
# screenshot is kept (BUILD/artifacts/ui.png). Every wait is on a condition
# in the page, 30 s at most. scripts/deps.sh installs chromium, Node.js and
# the pinned npm packages (tests/ui/package-lock.json); without them this
# skips (exit 77, ctest's SKIP_RETURN_CODE).
# usage: cli_ui.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
XP=$1 SRC=$3
CHROME=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROME" ]; then
	echo "SKIP: chromium not installed (scripts/deps.sh installs it)"
	exit 77
fi
if ! command -v node >/dev/null 2>&1 || [ ! -d "$SRC/tests/ui/node_modules/chrome-remote-interface" ]; then
	echo "SKIP: node or tests/ui/node_modules absent (scripts/deps.sh installs them)"
	exit 77
fi
ART=$(cd "$(dirname "$XP")" && pwd)/artifacts
mkdir -p "$ART"
. "$SRC/tests/devlib.sh"
start_dev --no-agent --cluster "$SRC/examples/clusters/small.yaml"

run submit -q --name ui-running --gpus 2 --cpu 4 --duration 1h; expect 0 "submit ui-running"
run submit -q --name ui-pending --gpus 64 --duration 1h --hold-for-nodes; expect 0 "submit ui-pending"
run queue create ui-team --guarantee gpu=4 --max gpu=8; expect 0 "queue create"

CHROME=$CHROME UI_NODES=$(sed -n 's/^  - name: *//p' "$SRC/examples/clusters/small.yaml" | tr '\n' ' ') \
	UI_ARTIFACTS=$ART UI_PROFILE=$T/chrome UI_LIVE=ui-live \
	timeout 300 node "$SRC/tests/ui/dashboard.js" >"$T/ui.out" 2>&1 || fail "dashboard (above)"
cat "$T/ui.out"
[ -s "$ART/ui.png" ] || fail "no screenshot at $ART/ui.png"
# /ui needs no token and carries no data; the API behind it does
curl -s -o /dev/null -w '%{http_code}' "$XPOOL_ADDR/ui" | grep -q 200 || fail "GET /ui"
curl -s -D - -o /dev/null "$XPOOL_ADDR/ui" | grep -qi 'content-security-policy' || fail "/ui without a CSP"
[ "$fails" -eq 0 ] || exit 1
echo "ok: the dashboard loads clean, shows the pool and follows events; screenshot $ART/ui.png"
