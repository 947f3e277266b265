#!/bin/sh
# bench/ui.sh: how long a job submitted through the API takes to appear on
# an open dashboard (event stream -> redraw), in Debian's headless chromium
# driven by tests/ui/dashboard.js; RUNS runs (default 5), each a fresh
# browser and a new job, the median printed. A figure, not a test.
# usage: bench/ui.sh BUILD
set -eu
BUILD=${1:-build}
XP=$(cd "$BUILD" && pwd)/xpool
SRC=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${RUNS:-5}
CHROME=$(command -v chromium || true)
[ -n "$CHROME" ] && [ -d "$SRC/tests/ui/node_modules/chrome-remote-interface" ] || {
	echo "ui: chromium or tests/ui/node_modules absent (scripts/deps.sh installs them)"
	exit 0
}
set +e
. "$SRC/tests/devlib.sh"
start_dev --no-agent --cluster "$SRC/examples/clusters/small.yaml"
"$XP" submit -q --name ui-running --gpus 2 --cpu 4 --duration 1h >/dev/null
"$XP" submit -q --name ui-pending --gpus 64 --duration 1h --hold-for-nodes >/dev/null
"$XP" queue create ui-team --guarantee gpu=4 --max gpu=8 >/dev/null
NODES=$(sed -n 's/^  - name: *//p' "$SRC/examples/clusters/small.yaml" | tr '\n' ' ')
i=1
: >"$T/delays"
while [ "$i" -le "$RUNS" ]; do
	rm -rf "$T/chrome"
	CHROME=$CHROME UI_NODES=$NODES UI_ARTIFACTS=$T/art UI_PROFILE=$T/chrome UI_LIVE=ui-live-$i TMPDIR=$T \
		timeout 300 node "$SRC/tests/ui/dashboard.js" >"$T/ui.out" 2>&1
	sed -n 's/^delay_ms //p' "$T/ui.out" >>"$T/delays"
	i=$((i + 1))
done
sort -n "$T/delays" | awk -v runs="$RUNS" '{d[NR]=$1} END {
	if (!NR) { print "ui: no run measured a delay"; exit }
	printf "ui: submit -> drawn on an open dashboard: median %d ms (min %d, max %d) of %d runs\n",
		d[int((NR + 1) / 2)], d[1], d[NR], NR }'
