#!/bin/sh
# cli_ui: the dashboard at /ui in headless Chromium (Debian's `chromium`),
# driven through the DevTools protocol by tests/ui/dashboard.js against a
# real `xpool dev` on examples/clusters/small.yaml: the page loads without
# console errors or failed requests; every node is drawn in its region and
# zone with its NUMA domains and NVLink/HCCS islands as the descriptor
# declares them (UI_TOPO below); DPUs and CPUs are drawn as their own
# classes; a device's tooltip (hover and Tab) shows its model, memory and
# job; the charts have labelled axes; 40 pending jobs show as a page of 25,
# "15 more" and counts per reason that add up; a job submitted and one that
# fails while the page is open appear without a reload; at 375 px nothing
# scrolls sideways. Screenshots are kept in BUILD/artifacts (ui.png,
# ui-tooltip.png, ui-phone.png). Every wait is on a condition in the page,
# 30 s at most. scripts/deps.sh installs chromium, Node.js and the pinned
# npm packages (tests/ui/package-lock.json); without them this skips (exit
# 77, ctest's SKIP_RETURN_CODE).
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
running=$(cat "$T/out")
run submit -q --name ui-half --fraction 0.5 --device-memory 20Gi --duration 1h; expect 0 "submit ui-half"
run queue create ui-team --guarantee gpu=4 --max gpu=8; expect 0 "queue create"
run submit -q --name ui-team-8 --queue ui-team --gpus 8 --duration 1h; expect 0 "submit ui-team-8"
# 40 pending: 38 that no node could run yet, one over its queue's max, one
# waiting for another job
run submit -q --name ui-pending --gpus 64 --duration 1h --hold-for-nodes; expect 0 "submit ui-pending"
i=1
while [ "$i" -le 37 ]; do
	run submit -q --name "ui-hold-$i" --gpus 64 --duration 1h --hold-for-nodes; expect 0 "submit ui-hold-$i"
	i=$((i + 1))
done
run submit -q --name ui-over-quota --queue ui-team --gpus 1 --duration 1h; expect 0 "submit ui-over-quota"
run submit -q --name ui-after --after "$running" --duration 1h; expect 0 "submit ui-after"

# what small.yaml declares: NODE@REGION/ZONE, then numas=K, islandI=N~FABRIC
# (numaK>... inside NUMA domain K's box), dpu
R=cn-north-1
TOPO="gpu-a100-0@$R/zone-a:numas=2:island0=8~nvlink:dpu gpu-a100-1@$R/zone-a:numas=2:island0=8~nvlink:dpu
gpu-h100-0@$R/zone-a:numas=2:numa0>island0=4~nvlink:numa1>island1=4~nvlink npu-910b-0@$R/zone-b:numas=4:island0=8~hccs
mlu370-0@$R/zone-b fpga-u280-0@$R/zone-b infer-l40s-0@$R/zone-c:dpu cpu-x86-2@$R/zone-c cpu-arm-0@$R/zone-c"
CHROME=$CHROME UI_NODES=$(sed -n 's/^  - name: *//p' "$SRC/examples/clusters/small.yaml" | tr '\n' ' ') \
	UI_ARTIFACTS=$ART UI_PROFILE=$T/chrome UI_LIVE=ui-live UI_TOPO=$TOPO TMPDIR=$T \
	UI_REASONS="no node has what it asks,queue at its quota,waiting on other jobs" \
	timeout 300 node "$SRC/tests/ui/dashboard.js" >"$T/ui.out" 2>&1 || fail "dashboard (above)"
cat "$T/ui.out"
for f in ui.png ui-tooltip.png ui-phone.png; do
	[ -s "$ART/$f" ] || fail "no screenshot at $ART/$f"
done
# /ui needs no token and carries no data; the API behind it does
curl -s -o /dev/null -w '%{http_code}' "$XPOOL_ADDR/ui" | grep -q 200 || fail "GET /ui"
curl -s -D - -o /dev/null "$XPOOL_ADDR/ui" | grep -qi "content-security-policy: .*script-src 'self'" || fail "/ui without its CSP"
curl -s -o /dev/null -w '%{http_code} %{content_type}' "$XPOOL_ADDR/ui/app.js" | grep -q '^200 text/javascript' || fail "GET /ui/app.js"
[ "$fails" -eq 0 ] || exit 1
echo "ok: the dashboard loads clean, shows the pool's topology, pages its pending jobs and follows events; screenshots in $ART"
