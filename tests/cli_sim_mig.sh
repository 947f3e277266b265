#!/bin/sh
# cli_sim_mig: `xpool sim mig` from the command line - help, bad flags and
# malformed or missing traces rejected with the flag / file:line:field or
# the path and a non-zero exit, a tiny end-to-end run on a synthetic OpenB
# pod list, and (with ../shared) the default comparison in under a minute
# with the static layouts labelled static-...
# usage: cli_sim_mig.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
XP=$1
SHARED=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0

# expect STATUS PATTERN -- command...: exit status and a stdout/stderr pattern
expect() {
	want=$1 pat=$2
	shift 3
	"$@" >"$T/out" 2>"$T/err"
	got=$?
	if [ "$got" != "$want" ]; then
		echo "FAIL: '$*' exited $got, expected $want"; cat "$T/err"; fails=$((fails + 1)); return
	fi
	if [ -n "$pat" ] && ! grep -q -- "$pat" "$T/out" "$T/err"; then
		echo "FAIL: '$*' output lacks '$pat'"; cat "$T/out" "$T/err"; fails=$((fails + 1))
	fi
}

H='name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time'
{
	echo "$H"
	echo 'p1,1000,100,1,1000,,LS,Running,0,100,0'
	echo 'p2,1000,100,1,1000,,LS,Running,0,100,0'
	echo 'p3,1000,100,1,320,,LS,Running,10,200,10'
	echo 'p4,1000,100,1,320,,LS,Running,10,200,10'
	echo 'p5,1000,100,2,1000,,LS,Running,20,300,20'
	echo 'p6,1000,100,1,100,,LS,Running,400,500,400'
} >"$T/pods.csv"
printf '%s\np1,1000,100,1,x,,LS,Running,0,100,0\n' "$H" >"$T/bad.csv"

expect 0 "usage: xpool sim mig" -- "$XP" sim mig --help
expect 0 "mig" -- "$XP" sim --help
expect 2 "\-\-nodes: expected an integer 1..4096, got 'x'" -- "$XP" sim mig --nodes x
expect 2 "\-\-gpus: expected an integer 1..16, got '0'" -- "$XP" sim mig --gpus 0
expect 2 "\-\-timeout: expected an integer" -- "$XP" sim mig --timeout -1
expect 2 "\-\-stream: expected openb, genai or both" -- "$XP" sim mig --stream all
expect 2 "\-\-arrivals: expected trace or poisson" -- "$XP" sim mig --arrivals uniform
expect 2 "\-\-models: unknown GPU model 'V100'" -- "$XP" sim mig --models A100-80GB,V100
expect 2 "\-\-headroom: expected a number in 1..4" -- "$XP" sim mig --headroom 0.5
expect 2 "unknown flag" -- "$XP" sim mig --policy xpool
expect 1 "$T/none/openb_pod_list_default.csv: trace file not found" -- \
	"$XP" sim mig --stream openb --openb-trace "$T/none"
expect 1 "$T/none/pod_gpu_memory_used_bytes_anon.csv: trace file not found" -- \
	"$XP" sim mig --stream genai --genai-trace "$T/none"
expect 1 "bad.csv:2: field gpu_milli: expected an integer 1..1000, got 'x'" -- \
	"$XP" sim mig --stream openb --pods "$T/bad.csv"

# 5 one-GPU pods on 1 node x 1 A100-80GB: all-7g holds one at a time
expect 0 "openb: 5 requests" -- "$XP" sim mig --stream openb --pods "$T/pods.csv" \
	--nodes 1 --gpus 1 --models A100-80GB --timeout 50
for m in static-all-balanced static-all-1g static-all-7g first-fit hami-best-fit xpool; do
	grep -q "^$m " "$T/out" || { echo "FAIL: no row $m"; cat "$T/out"; fails=$((fails + 1)); }
done
# p1 at 0; p2 waits past 50 s; p3, p4 wait past 50 s behind p1 (ends at
# 100); p6 at 400: 2 admitted, 3 rejected
grep -q "^static-all-7g  *2  *0  *3 " "$T/out" || { echo "FAIL: static-all-7g row"; cat "$T/out"; fails=$((fails + 1)); }
expect 0 '"mode": "xpool"' -- "$XP" sim mig --stream openb --pods "$T/pods.csv" --nodes 1 \
	--gpus 1 -o json
expect 0 "" -- "$XP" sim mig --stream openb --pods "$T/pods.csv" --nodes 1 --svg "$T/plot"
[ -s "$T/plot-openb.svg" ] || { echo "FAIL: no $T/plot-openb.svg"; fails=$((fails + 1)); }

# the default comparison on the real traces, in under a minute
if [ -f "$SHARED/traces/openb/openb_pod_list_default.csv" ] &&
	[ -f "$SHARED/traces/genai2026/pod_gpu_memory_used_bytes_anon.csv" ]; then
	start=$(date +%s)
	export XP_SHARED_DIR="$SHARED"
	expect 0 "static-all-balanced" -- "$XP" sim mig
	took=$(($(date +%s) - start))
	[ "$took" -lt 60 ] || { echo "FAIL: sim mig took ${took}s"; fails=$((fails + 1)); }
	grep -q "^genai: 144 requests" "$T/out" || { echo "FAIL: no genai table"; fails=$((fails + 1)); }
else
	echo "note: $SHARED/traces absent, the default comparison not run"
fi

[ "$fails" -eq 0 ] || exit 1
echo "cli_sim_mig: sim mig's flags, errors and a small run as expected"
