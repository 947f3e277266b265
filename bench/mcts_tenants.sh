#!/bin/sh
# Queueing time and fragmentation of `xpool sim tenants` for FIFO, greedy
# xpool and mcts (the cycle's batch search), several seeds, one table
# (docs/results/mcts.md, "Tenants"):
#   bench/mcts_tenants.sh OUTDIR NODES JOBS LOAD SEEDS [MODES] [POLICIES]
#   bench/mcts_tenants.sh out/mt-1k 1000 10000 1.2 "1 2 3 4 5"
# Each seed is one run of every mode x policy on the same trace (JSON in
# OUTDIR/seed-S.json); the table gives the means over seeds of the waits
# over all jobs (mean, p50, p95, seconds), the fragmentation figures of
# tenants.h (stranded, stranded of capacity, F(M); sampled every 10
# simulated minutes while jobs wait), utilisation, preemptions and the
# simulator's wall time per run.
set -eu
OUT=$1 NODES=$2 JOBS=$3 LOAD=$4 SEEDS=$5
MODES=${6:-fifo,xpool}
POLS=${7:-bestfit,xpool,mcts}
XP=${XP:-build/xpool}
mkdir -p "$OUT"
for s in $SEEDS; do
	[ -s "$OUT/seed-$s.json" ] && continue
	"$XP" sim tenants --nodes "$NODES" --jobs "$JOBS" --load "$LOAD" --seed "$s" \
		--mode "$MODES" --policy "$POLS" -o json >"$OUT/seed-$s.json.tmp"
	mv "$OUT/seed-$s.json.tmp" "$OUT/seed-$s.json"
done
echo "| mode | policy | wait mean s | wait p50 s | wait p95 s | stranded % of free GPU | stranded % of all GPU | F(M) % of free GPU | free GPU % | util % | preemptions | wall s |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
jq -s -r '
  flatten | group_by(.mode + "/" + .policy) | map({
    mode: .[0].mode, policy: .[0].policy, n: length,
    mean: (map(.all.wait_mean_s) | add / length),
    p50: (map(.all.wait_p50_s) | add / length),
    p95: (map(.all.wait_p95_s) | add / length),
    str: (map(.fragmentation.stranded) | add / length * 100),
    strc: (map(.fragmentation.stranded_of_capacity) | add / length * 100),
    fm: (map(.fragmentation.fm) | add / length * 100),
    free: (map(.fragmentation.free) | add / length * 100),
    util: (map(.util) | add / length * 100),
    pre: (map(.preemptions) | add / length),
    wall: (map(.wall_s) | add / length)
  }) | sort_by(.mode, .policy) | .[] |
  "| \(.mode) | \(.policy) | \(.mean | floor) | \(.p50 | floor) | \(.p95 | floor) | \(.str * 100 | round / 100) | \(.strc * 100 | round / 100) | \(.fm * 100 | round / 100) | \(.free * 100 | round / 100) | \(.util * 10 | round / 10) | \(.pre | round) | \(.wall * 10 | round / 10) |"
' "$OUT"/seed-*.json
# per seed: mcts against greedy xpool and against FIFO (bestfit), xpool mode
echo
echo "| seed | wait mean: xpool | mcts | fifo | mcts vs xpool | mcts vs fifo |"
echo "|---|---|---|---|---|---|"
for s in $SEEDS; do
	jq -r --arg s "$s" '
	  (map(select(.mode == "xpool" and .policy == "xpool"))[0].all.wait_mean_s) as $x |
	  (map(select(.mode == "xpool" and .policy == "mcts"))[0].all.wait_mean_s) as $m |
	  (map(select(.mode == "fifo" and .policy == "bestfit"))[0].all.wait_mean_s) as $f |
	  if $x and $m and $f then
	    "| \($s) | \($x | floor) | \($m | floor) | \($f | floor) | \(($m - $x) / $x * 1000 | round / 10) % | \(($m - $f) / $f * 1000 | round / 10) % |"
	  else empty end' "$OUT/seed-$s.json"
done
