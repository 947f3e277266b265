#!/bin/sh
# bench/serving.sh: a service under real load through a real HAProxy (issue
# 22 part 5), on a real `xpool dev` and its local agent, the test service
# (xp-svc-http, SVC_MS a request) as replicas. A figure, not a test.
#
#  1. reaction time: RUNS times (default 5), from a load step (8 closed-loop
#     clients) on a service at 1 replica to its second ready replica
#     (autoscale on inflight, period 1 s), then back to 1 without load;
#  2. the Azure LLM hour's arrivals replayed at SPEED x (default 10) for
#     REPLAY_S seconds (default 120) through HAProxy, the service
#     autoscaling on rps; a rolling update starts a third of the way in.
#     Printed: requests and failed requests (in all, and while the rolling
#     update ran), the replicas over time, and the gap between the ready
#     replicas and what the rule wanted (its last decision), sampled each
#     second.
# usage: bench/serving.sh BUILD
set -eu
BUILD=${1:-build}
XP=$(cd "$BUILD" && pwd)/xpool
BIN=$(cd "$BUILD" && pwd)
SRC=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${RUNS:-5} SPEED=${SPEED:-10} REPLAY_S=${REPLAY_S:-120}
TRACE=${XPOOL_AZURE:-$SRC/../shared/traces/azure-llm2023/AzureLLMInferenceTrace_conv.csv}
command -v haproxy >/dev/null 2>&1 || { echo "serving: haproxy absent (scripts/deps.sh installs it)"; exit 0; }
[ -x "$BIN/xp-svc-http" ] && [ -x "$BIN/xp-svc-load" ] || { echo "serving: build the tests first (xp-svc-http)"; exit 0; }
set +e
. "$SRC/tests/devlib.sh"
HAP= SYNC= LOADPID=
cleanup() {
	for p in $LOADPID $SYNC $HAP; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	stop_server
	rm -rf "$T"
}
trap cleanup EXIT
start_dev --cluster "$SRC/examples/clusters/small.yaml"
agent_node
free_port() {
	p=$1
	while curl -s -o /dev/null "http://127.0.0.1:$p/"; [ $? -ne 7 ]; do p=$((p + 1)); done
	echo "$p"
}
P1=$(free_port $((21000 + $$ % 4000)))
P2=$(free_port $((P1 + 1)))
svc() { # NAME PORT METRIC TARGET MS VERSION
	cat <<EOF
kind: service
name: $1
replicas: {min: 1, max: 8}
port: $2
readiness: {http: /healthz, period: 200ms}
drain: 1s
autoscale: {metric: $3, target: $4, period: 1s, down_window: 10s}
template:
  node: $NODE
  resources: {cpu: 100m, memory: 64}
  command: [$BIN/xp-svc-http]
  env: {SVC_MS: "$5", SVC_VERSION: "$6"}
EOF
}
svc step "$P1" inflight 2 100 1 >"$T/step.yaml"
svc llm "$P2" rps 15 50 1 >"$T/llm.yaml"
"$XP" service create "$T/step.yaml" >/dev/null && "$XP" service create "$T/llm.yaml" >/dev/null ||
	{ echo "serving: services not created"; exit 0; }
"$XP" service proxy-config --socket "$T/hap.sock" --bind 127.0.0.1 >"$T/hap.cfg"
haproxy -f "$T/hap.cfg" -db >"$T/hap.log" 2>&1 &
HAP=$!
until_ok 30 test -S "$T/hap.sock"
"$XP" service proxy-sync --socket "$T/hap.sock" --interval 100ms >"$T/sync.log" 2>&1 &
SYNC=$!
ready() { "$XP" service endpoints "$1" -o json 2>/dev/null | jq -e ".endpoints | length $2" >/dev/null; }
desired() { "$XP" service get "$1" -o json 2>/dev/null | jq -e ".replicas.desired == $2" >/dev/null; }
ms() { date +%s%3N; }
up() { curl -sf "http://127.0.0.1:$1/" >/dev/null; }
until_ok 60 up "$P1" && until_ok 60 up "$P2" || { echo "serving: no answer through haproxy"; exit 0; }

# ---- 1. reaction time ----
: >"$T/react"
i=1
while [ "$i" -le "$RUNS" ]; do
	until_ok 90 desired step 1 && until_ok 60 ready step "== 1" || { echo "serving: step not back at 1"; break; }
	rm -f "$T/stop"
	t0=$(ms)
	"$BIN/xp-svc-load" 127.0.0.1 "$P1" 8 120 "$T/stop" >"$T/l.out" 2>&1 &
	LOADPID=$!
	until_ok 60 ready step ">= 2" && echo $(($(ms) - t0)) >>"$T/react"
	: >"$T/stop"
	wait "$LOADPID"
	LOADPID=
	i=$((i + 1))
done
sort -n "$T/react" | awk '{d[NR]=$1} END {
	if (!NR) { print "serving: no reaction measured"; exit }
	printf "serving: load step -> second ready replica: median %d ms (min %d, max %d) of %d runs (goal: median < 10 s)\n",
		d[int((NR + 1) / 2)], d[1], d[NR], NR }'

# ---- 2. the Azure hour at SPEED x, a rolling update a third of the way ----
if [ ! -r "$TRACE" ]; then
	echo "serving: the Azure LLM trace is not at $TRACE: replay skipped"
	exit 0
fi
sed -e 's/SVC_VERSION: "1"/SVC_VERSION: "2"/' "$T/llm.yaml" >"$T/llm2.yaml"
"$BIN/xp-svc-load" --replay "$TRACE" "$SPEED" "$REPLAY_S" 127.0.0.1 "$P2" >"$T/replay.out" 2>"$T/replay.err" &
LOADPID=$!
start=$(ms)
: >"$T/samples"
updated=0 upd_from=0 upd_to=0
while kill -0 "$LOADPID" 2>/dev/null; do
	now=$(ms)
	el=$(( (now - start) / 1000 ))
	if [ "$updated" = 0 ] && [ "$el" -ge $((REPLAY_S / 3)) ]; then
		"$XP" service update llm "$T/llm2.yaml" >/dev/null && updated=1 upd_from=$el
	fi
	j=$("$XP" service get llm -o json 2>/dev/null)
	echo "$j" | jq -r --arg t "$el" '[$t, .replicas.desired, .replicas.ready, (.autoscale.current // -1), .autoscale.target, .version, .status] | @tsv' >>"$T/samples"
	if [ "$updated" = 1 ] && [ "$upd_to" = 0 ] && echo "$j" | jq -e '.status == "ready" and .version == 2' >/dev/null; then
		upd_to=$el
	fi
	sleep 1
done
wait "$LOADPID"
LOADPID=
t_end=$(ms)
until_ok 120 desired llm 1 && back_s=$(( ($(ms) - t_end) / 1000 )) || back_s=-1
read -r _ sent _ okn _ failed <<EOF
$(grep '^requests' "$T/replay.out")
EOF
awk -F'\t' '{print $1, $2, $3}' "$T/samples" | awk 'NR % 10 == 1 {printf "  t=%ss desired %s ready %s\n", $1, $2, $3}'
awk -F'\t' 'function ceil(x) { return x == int(x) ? x : int(x) + 1 }
	$4 >= 0 { want = ceil($2 * $4 / $5); want = want < 1 ? 1 : want > 8 ? 8 : want
		gap = $3 - want; gap = gap < 0 ? -gap : gap; s += gap; n++; if (gap == 0) z++; if ($3 > mx) mx = $3 }
	END { if (n) printf "serving: replicas against what the rule wants (ceil(replicas x rps / 15)): mean gap %.2f, equal in %d of %d seconds, at most %d ready\n", s / n, z, n, mx }' "$T/samples"
echo "serving: Azure LLM hour at ${SPEED}x for ${REPLAY_S} s through HAProxy: $sent requests, $failed failed; rolling update from ${upd_from} s to ${upd_to} s (0: not finished); back to 1 replica ${back_s} s after the load ended (down window 10 s)"
