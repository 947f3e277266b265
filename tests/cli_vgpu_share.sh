#!/bin/sh
# cli_vgpu_share: `xpool sim share` (issue 20 part 7).
#  - a synthetic trace of 6 pods (30 GiB, 20 % busy, 10 minutes): 6 GPUs
#    whole, 3 as enforced fractions (33 GiB caps: two per 80 GiB GPU), 2
#    with overcommit 1.5 (three per GPU), and then 90 GiB in use on an
#    80 GiB GPU: 10 OOM minutes, 20 GPU-minutes; none over 100 % busy;
#  - bad flags are refused naming the flag;
#  - with no arguments, from the source folder, it reads
#    ../shared/traces/genai2026 (skipped when absent): 143 pods, fewer GPUs
#    as fractions than whole and fewer again with overcommit, in under a
#    minute.
# usage: cli_vgpu_share.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
XP=$1 SHARED=$2 SRC=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

mkdir "$T/tr"
awk 'BEGIN {
	print "value,timestamp_anon,container_ip" > "'"$T"'/tr/pod_gpu_duty_cycle_anon.csv"
	print "timestamp_anon,value,container_ip" > "'"$T"'/tr/pod_gpu_memory_used_bytes_anon.csv"
	for (p = 0; p < 6; p++)
		for (m = 0; m < 10; m++) {
			t = 1000000 + 60 * m
			printf "20.0,%d.0,pod%d\n", t, p >> "'"$T"'/tr/pod_gpu_duty_cycle_anon.csv"
			printf "%d.0,%.0f,pod%d\n", t, 30 * 1073741824, p >> "'"$T"'/tr/pod_gpu_memory_used_bytes_anon.csv"
		}
}'
"$XP" sim share --trace "$T/tr" >"$T/out" 2>&1 || fail "synthetic trace: $(cat "$T/out")"
grep -q '^whole  *6  *0  *0  *0  *0$' "$T/out" || fail "whole: $(cat "$T/out")"
grep -q '^fractions  *3  *0  *0  *0  *0$' "$T/out" || fail "fractions: $(cat "$T/out")"
grep -q '^overcommit  *2  *0  *0  *10  *20$' "$T/out" || fail "overcommit: $(cat "$T/out")"
"$XP" sim share --trace "$T/tr" -o json >"$T/json" 2>&1 || fail "json: $(cat "$T/json")"
grep -q '"pods": 6' "$T/json" || fail "json pods: $(cat "$T/json")"

"$XP" sim share --trace "$T/tr" --overcommit 0.5 >"$T/out" 2>&1
rc=$?
if [ "$rc" != 2 ] || ! grep -q -- '--overcommit: expected a number in 1..10' "$T/out"; then
	fail "overcommit 0.5: exit $rc: $(cat "$T/out")"
fi
"$XP" sim share --trace "$T/none" >"$T/out" 2>&1
rc=$?
if [ "$rc" != 1 ] || ! grep -q 'pod_gpu_duty_cycle_anon.csv' "$T/out"; then
	fail "missing trace: exit $rc: $(cat "$T/out")"
fi

if [ -f "$SHARED/traces/genai2026/pod_gpu_duty_cycle_anon.csv" ] &&
	[ "$(cd "$SRC/../shared" 2>/dev/null && pwd)" = "$(cd "$SHARED" && pwd)" ]; then
	start=$(date +%s)
	(cd "$SRC" && "$XP" sim share) >"$T/out" 2>&1 || fail "genai2026: $(cat "$T/out")"
	took=$(($(date +%s) - start))
	cat "$T/out"
	grep -q ': 143 pods over' "$T/out" || fail "genai2026 pods: $(cat "$T/out")"
	awk '$1 == "whole" { w = $2 } $1 == "fractions" { f = $2 } $1 == "overcommit" { o = $2 }
		END { exit !(w == 143 && f < w && o <= f) }' "$T/out" ||
		fail "genai2026 GPUs: $(cat "$T/out")"
	[ "$took" -lt 60 ] || fail "genai2026 took $took s"
else
	echo "(../shared/traces/genai2026 not beside the source: the real trace is not checked)"
fi
[ "$fails" -eq 0 ] || exit 1
echo "cli_vgpu_share: ok"
