#!/bin/sh
# cli_sim: `xpool sim` from the command line - help on every verb, bad
# flags and malformed files rejected with the flag / file:line:field and a
# non-zero exit and no result files, and a tiny end-to-end run.
# usage: cli_sim.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
XP=$1
SHARED=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0

# expect STATUS PATTERN -- command...: exit status and a stderr/stdout pattern
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

printf 'sn,cpu_milli,memory_mib,gpu,model\nn1,8000,64000,2,T4\nn2,16000,64000,4,V100\n' >"$T/nodes.csv"
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np1,1000,100,1,500,\np2,1000,100,1,1000,V100\np3,500,100,0,0,\np4,2000,100,2,1000,\n' >"$T/pods.csv"

# help everywhere
expect 0 "usage: xpool" -- "$XP" --help
expect 0 "verbs:" -- "$XP" help
for v in openb compare workload bench; do
	expect 0 "usage: xpool sim $v" -- "$XP" sim "$v" --help
done
expect 0 "openb" -- "$XP" sim --help
expect 0 "xpool 0." -- "$XP" version

# bad usage: exit 2 naming the problem
expect 2 "unknown verb 'nope'" -- "$XP" nope
expect 2 "usage:" -- "$XP"
expect 2 "unknown 'frobnicate'" -- "$XP" sim frobnicate
expect 2 "unknown flag --bogus" -- "$XP" sim openb --bogus 1
# sim tenants: bad flags, then a small run of each set-up
expect 0 "multi-tenant trace" -- "$XP" sim tenants --help
expect 2 "--mode: expected xpool, noborrow or fifo" -- "$XP" sim tenants --mode lottery
expect 2 "--tenants: expected an integer 2..16" -- "$XP" sim tenants --tenants 1
expect 2 "--load: expected a number" -- "$XP" sim tenants --load -1
expect 2 "-o: expected table or json" -- "$XP" sim tenants -o yaml
expect 0 "noborrow: 20 nodes (160 GPUs), 300 jobs" -- "$XP" sim tenants --nodes 20 --jobs 300 --load 1.2
grep -q "^  t3 " "$T/out" || { echo "FAIL: sim tenants: no row for tenant t3"; fails=$((fails + 1)); }
expect 0 '"mode": "fifo"' -- "$XP" sim tenants --nodes 20 --jobs 300 --mode fifo -o json
# policies: each with each mode; mcts searches batches in the cycle
expect 2 "--policy: no policy 'nope'" -- "$XP" sim tenants --policy nope
expect 2 "--budget: expected an integer 0..1000000" -- "$XP" sim tenants --budget lots
expect 0 "xpool: 20 nodes (160 GPUs), 300 jobs over 22.2 h, load 1.20, seed 1, policy mcts, budget 4:" -- \
	"$XP" sim tenants --nodes 20 --jobs 300 --load 1.2 --mode xpool --policy xpool,mcts --budget 4
grep -q "seed 1, policy xpool: " "$T/out" || { echo "FAIL: sim tenants: no run of policy xpool"; fails=$((fails + 1)); }
grep -q "batches searched" "$T/out" || { echo "FAIL: sim tenants: mcts searched nothing"; fails=$((fails + 1)); }
grep -q "^  all " "$T/out" || { echo "FAIL: sim tenants: no row for all jobs"; fails=$((fails + 1)); }
printf 'currency: EUR\ndevices: {A100: 2}\nenergy: 0.3\n' >"$T/prices.yaml"
expect 0 "metered (xpool):" -- "$XP" sim tenants --nodes 20 --jobs 300 --mode xpool --prices "$T/prices.yaml"
grep -q '^total .* EUR$' "$T/out" || { echo "FAIL: sim tenants --prices: no total: $(cat "$T/out")"; fails=$((fails + 1)); }
expect 0 '"cost_micros"' -- "$XP" sim tenants --nodes 20 --jobs 300 --mode fifo --prices "$T/prices.yaml" -o json
printf 'devices: {A100: lots}\n' >"$T/bad-prices.yaml"
expect 1 "devices.A100: expected a price" -- "$XP" sim tenants --nodes 20 --jobs 300 --prices "$T/bad-prices.yaml"
expect 2 "no-such-file" -- "$XP" sim tenants --prices "$T/no-such-file"
expect 0 "metered (fifo):" -- "$XP" sim tenants --nodes 20 --jobs 300 --mode fifo --report cost --plot "$T/plots"
for p in usage cost; do
	head -c 4 "$T/plots/tenants-fifo-$p.svg" 2>/dev/null | grep -q '<svg' ||
		{ echo "FAIL: sim tenants --plot: no $T/plots/tenants-fifo-$p.svg"; fails=$((fails + 1)); }
done
grep -q 'polyline' "$T/plots/tenants-fifo-usage.svg" || { echo "FAIL: the usage plot has no line"; fails=$((fails + 1)); }
expect 2 "--report: expected cost" -- "$XP" sim tenants --report money
expect 2 "flag --seeds needs a value" -- "$XP" sim openb --seeds
expect 2 "\-\-seeds: expected seeds" -- "$XP" sim openb --seeds abc --nodes "$T/nodes.csv" --pods "$T/pods.csv"
expect 2 "\-\-seeds: " -- "$XP" sim openb --seeds 9-1 --nodes "$T/nodes.csv" --pods "$T/pods.csv"
expect 2 "\-\-tune: expected a number" -- "$XP" sim openb --tune -1 --nodes "$T/nodes.csv" --pods "$T/pods.csv"
expect 2 "\-\-tune: expected a number" -- "$XP" sim openb --tune 1.3x --nodes "$T/nodes.csv" --pods "$T/pods.csv"
expect 2 "unknown policy 'nope'" -- "$XP" sim openb --policy fgd,nope --nodes "$T/nodes.csv" --pods "$T/pods.csv"
expect 2 "\-\-tiebreak: expected rank or random" -- "$XP" sim openb --tiebreak coin
expect 2 "\-\-jobs: expected an integer" -- "$XP" sim openb --jobs 0
expect 2 "flag --no-index takes no value" -- "$XP" sim openb --no-index=1
expect 2 "\-\-ours DIR is required" -- "$XP" sim compare
expect 2 "\-\-format: expected" -- "$XP" sim compare --ours "$T" --format xml
expect 2 "\-\-points: expected an integer 0..130" -- "$XP" sim compare --ours "$T" --points 200
expect 2 "\-\-nodes: expected an integer" -- "$XP" sim bench --nodes 10k

# malformed files: exit 1, file:line: field, and no results written
printf 'sn,cpu_milli,memory_mib,gpu,model\nn1,8000,64000,2,T4\nn2,lots,64000,4,V100\n' >"$T/badnodes.csv"
expect 1 "badnodes.csv:3: field cpu_milli" -- "$XP" sim openb --nodes "$T/badnodes.csv" --pods "$T/pods.csv" --out "$T/o1"
[ -e "$T/o1" ] && { echo "FAIL: results written despite bad input"; fails=$((fails + 1)); }
printf 'name,cpu_milli,memory_mib,num_gpu,gpu_milli\np1,1000,100,1,500\np2,1000,100,1\n' >"$T/badpods.csv"
expect 1 "badpods.csv:3: expected 5 fields" -- "$XP" sim openb --nodes "$T/nodes.csv" --pods "$T/badpods.csv" --out "$T/o2"
[ -e "$T/o2" ] && { echo "FAIL: results written despite bad input"; fails=$((fails + 1)); }
expect 1 "No such file" -- "$XP" sim openb --nodes "$T/absent.csv" --pods "$T/pods.csv" --out "$T/o3"
printf 'workload,sc_policy,seed,100\ndefault,06-FGD,42,abc\n' >"$T/bad_allo.csv"
expect 1 "bad_allo.csv:2: column 100: expected a number" -- "$XP" sim compare --ours "$T/bad_allo.csv" --published "$T/bad_allo.csv"

# a tiny end-to-end run
expect 0 "fgd\|06-FGD" -- "$XP" sim openb --nodes "$T/nodes.csv" --pods "$T/pods.csv" --policy fgd,bestfit,binpack --seeds 1-3 --tune 1.3 --out "$T/run"
# without --published there is no published column, and nothing is "ok"
if grep -q 'published\| ok\b' "$T/out"; then
	echo "FAIL: sim openb without --published prints a published column: $(head -3 "$T/out")"; fails=$((fails + 1))
fi
grep -q 'ours at 100% arrived' "$T/out" || { echo "FAIL: sim openb: no 'ours' column: $(head -2 "$T/out")"; fails=$((fails + 1)); }
W=$(sed -n '2p' "$T/run/runs.csv" | cut -d, -f1)
expect 0 "wrote $T/fig.svg" -- "$XP" sim plot --ours "$T/run" --workload "$W" --out "$T/fig.svg"
grep -q '06-FGD' "$T/fig.svg" || { echo "FAIL: sim plot: no 06-FGD line"; fails=$((fails + 1)); }
# beside published runs: the same policy in the same colour, the published dashed
expect 0 "wrote $T/fig3.svg" -- "$XP" sim plot --ours "$T/run" --published "$T/run" --workload "$W" --out "$T/fig3.svg"
c1=$(grep -o '<polyline fill="none" stroke="#[0-9a-f]*" stroke-width' "$T/fig3.svg" | head -1 | grep -o '#[0-9a-f]*')
grep -q "<polyline fill=\"none\" stroke=\"$c1\" stroke-dasharray" "$T/fig3.svg" ||
	{ echo "FAIL: sim plot --published: the published line is not dashed in ours' colour ($c1)"; fails=$((fails + 1)); }
grep -q '(published)' "$T/fig3.svg" || { echo "FAIL: sim plot --published: no legend entry"; fails=$((fails + 1)); }
grep -q 'stroke-dasharray' "$T/fig.svg" && { echo "FAIL: sim plot without --published draws dashes"; fails=$((fails + 1)); }
expect 1 "no results for workload 'nope'" -- "$XP" sim plot --ours "$T/run" --workload nope --out "$T/fig2.svg"
expect 2 "\-\-out FILE is required" -- "$XP" sim plot --ours "$T/run"
if [ -f "$SHARED/traces/gavel/gavel_isolated_throughputs.csv" ]; then
	expect 0 "" -- "$XP" sim gavel-trace --matrix "$SHARED/traces/gavel/gavel_isolated_throughputs.csv" --jobs 5 --multi-gpu
	[ "$(wc -l <"$T/out")" = 5 ] || { echo "FAIL: gavel-trace: $(cat "$T/out")"; fails=$((fails + 1)); }
	[ "$(head -1 "$T/out" | awk -F'\t' '{ print NF }')" = 10 ] || { echo "FAIL: gavel-trace: not 10 fields"; fails=$((fails + 1)); }
	expect 2 "\-\-budget: expected an integer 0..100000, got 'x'" -- "$XP" sim gavel --matrix "$SHARED/traces/gavel/gavel_isolated_throughputs.csv" --colo "$SHARED/traces/gavel/gavel_colocated_throughputs.csv" --policy mcts --budget x
fi
expect 2 "\-\-rate: expected jobs per hour" -- "$XP" sim gavel-trace --rate 0
expect 0 "mcts: rollouts per round" -- "$XP" sim gavel --help
for f in analysis_allo_discrete.csv analysis_frag_discrete.csv analysis_frag_ratio_discrete.csv runs.csv; do
	[ -s "$T/run/$f" ] || { echo "FAIL: $f missing"; fails=$((fails + 1)); }
done
rows=$(($(wc -l <"$T/run/analysis_allo_discrete.csv") - 1))
[ "$rows" = 9 ] || { echo "FAIL: expected 9 result rows, got $rows"; fails=$((fails + 1)); }
head -1 "$T/run/analysis_allo_discrete.csv" | grep -q '^workload,sc_policy,tune,seed,total_gpus,0,1,2,' ||
	{ echo "FAIL: allo header"; fails=$((fails + 1)); }
head -1 "$T/run/analysis_frag_discrete.csv" | grep -q '^workload,sc_policy,tune,seed,0,1,2,' ||
	{ echo "FAIL: frag header"; fails=$((fails + 1)); }
grep -q '^pods,05-BestFit,1.3,2,6,' "$T/run/analysis_allo_discrete.csv" ||
	{ echo "FAIL: a BestFit seed-2 row with workload 'pods' and 6 GPUs"; fails=$((fails + 1)); }
expect 0 "cells compared" -- "$XP" sim compare --ours "$T/run" --published "$T/run" --gate
# --against: each other policy beside a baseline of the same run; a policy
# is never lower than itself, and an absent baseline is an error
# is hand-computed: A leaves 5 and 0 % unallocated, B 9 and 3 %
printf 'workload,sc_policy,tune,seed,total_gpus,100\nw1,A,1.3,1,8,96\nw1,A,1.3,2,8,94\nw1,B,1.3,1,8,90\nw1,B,1.3,2,8,92\nw2,A,1.3,1,8,100\nw2,B,1.3,1,8,97\n' >"$T/ab.csv"
expect 0 "mean  *2.500  *6.000  *-58.3%   lower on 2 of 2 workloads" -- "$XP" sim compare --ours "$T/ab.csv" --against B --points 100
expect 1 "lower on 0 of 2 workloads" -- "$XP" sim compare --ours "$T/ab.csv" --against A
expect 0 "| \*\*mean of 2\*\* | \*\*2.500\*\* | \*\*6.000\*\* | \*\*-58.3 %\*\* |" -- "$XP" sim compare --ours "$T/ab.csv" --against B --format markdown
expect 2 "no results of policy '99-None'" -- "$XP" sim compare --ours "$T/run" --against 99-None
printf 'workload,sc_policy,tune,seed,total_gpus,100\nw1,06-FGD,1.3,1,8,96\nw1,05-BestFit,1.3,1,8,90\n' >"$T/fb.csv"
expect 0 "mean  *4.000  *10.000  *-60.0%" -- "$XP" sim compare --ours "$T/fb.csv" --against bestfit
printf 'workload,sc_policy,tune,seed,total_gpus,100\nw1,B,1.3,1,8,90\n' >"$T/b.csv"
expect 2 "no policy besides 'B'" -- "$XP" sim compare --ours "$T/b.csv" --against B
expect 2 "not with --published or --gate" -- "$XP" sim compare --ours "$T/ab.csv" --against B --gate
expect 2 "the format is text or markdown" -- "$XP" sim compare --ours "$T/run" --against 05-BestFit --format csv

if [ "$fails" -gt 0 ]; then
	echo "$fails failure(s)"
	exit 1
fi
echo "cli_sim: all checks passed"
