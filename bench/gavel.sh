#!/bin/sh
# Gavel's workload (docs/results/policy.md): the round-based simulator,
# every policy, seeds 0-2, single-GPU and multi-GPU traces; JCT-vs-rate
# plots; xpool's energy weight as a curve; a hold-out seed set for xpool
# against Gavel's LAS with and without space sharing. Writes CSV and SVG
# under $OUT.
#   bench/gavel.sh [build-dir]    (BENCH_OUT, XP_SHARED_DIR as make bench)
# With `sustain` as the second argument, instead: the sustainable arrival
# rate (PROTOCOL.md §5.4: the rate at which a policy's average JCT passes
# twice its low-load value), xpool against our Gavel LAS with space
# sharing, seeds 0-2, single-GPU and multi-GPU: each policy's mean JCT per
# rate, its limit, where the mean crosses it (linear between the measured
# rates), and where xpool crosses the other's limit. Not part of `make
# bench`: Gavel LAS w/ SS is slow past capacity (about an hour on 2 cores).
# SEEDS picks the seeds (default 0-2; the hold-out set is 3-9).
#   bench/gavel.sh build sustain
#   SEEDS=3-9 bench/gavel.sh build sustain
set -eu
BUILD=${1:-build}
XP="$BUILD/xpool"
OUT=${BENCH_OUT:-out/bench}
GAVEL=${XP_SHARED_DIR:-../shared}/traces/gavel
if [ ! -f "$GAVEL/gavel_isolated_throughputs.csv" ]; then
	echo "bench/gavel.sh: Gavel's matrix is not under $GAVEL; set XP_SHARED_DIR" >&2
	exit 1
fi
mkdir -p "$OUT"
t0=$(date +%s)
if [ "${2:-}" = sustain ]; then
	SEEDS=${SEEDS:-0-2}
	"$XP" sim gavel --policy gavel-las-ss,xpool --rates 0.4,7.2,7.4,7.6,7.8 --seeds "$SEEDS" \
		--csv >"$OUT/gavel-sustain-single.csv"
	# Gavel LAS w/ SS is past its limit at 3.0 and very slow at 3.2
	"$XP" sim gavel --policy gavel-las-ss --multi-gpu --rates 0.2,2.8,3.0 --seeds "$SEEDS" \
		--csv >"$OUT/gavel-sustain-multi.csv"
	"$XP" sim gavel --policy xpool --multi-gpu --rates 0.2,2.8,3.0,3.2 --seeds "$SEEDS" --csv |
		tail -n +2 >>"$OUT/gavel-sustain-multi.csv"
	echo "gavel sustain: all runs in $(($(date +%s) - t0)) s"
	for f in single multi; do
		echo "-- $f-GPU: mean JCT (h) of seeds $SEEDS; limit = twice the lowest rate's; 'sat' saturated"
		awk -F, '
		NR > 1 { r = $3 + 0; k = $1 SUBSEP r; n[k]++; s[k] += $6; if ($16 == 1) sat[k] = 1
			if (!(r in rate)) { rate[r] = 1; rs[++nr] = r } }
		function cross(p, lim,   i, k, prev, pm) {
			prev = -1
			for (i = 1; i <= nr; i++) { k = p SUBSEP rs[i]
				if (!(k in n)) continue
			if (sat[k] || s[k] / n[k] > lim) {
					if (prev < 0 || sat[k]) return sprintf("before %s", rs[i])
					return sprintf("%.2f", prev + (rs[i] - prev) * (lim - pm) / (s[k] / n[k] - pm)) }
				prev = rs[i]; pm = s[k] / n[k] }
			return sprintf("past %s", rs[nr]) }
		END { for (i = 1; i <= nr; i++) for (j = i + 1; j <= nr; j++) if (rs[j] < rs[i]) { t = rs[i]; rs[i] = rs[j]; rs[j] = t }
			printf "%-13s", "rate"; for (i = 1; i <= nr; i++) printf " %7s", rs[i]; printf "   limit  crosses at\n"
			split("gavel-las-ss xpool", ps, " ")
			for (p = 1; p <= 2; p++) { lim[p] = 2 * s[ps[p], rs[1]] / n[ps[p], rs[1]]; printf "%-13s", ps[p]
				for (i = 1; i <= nr; i++) { k = ps[p] SUBSEP rs[i]
					if (!(k in n)) printf " %7s", "-"
				else if (sat[k]) printf " %7s", "sat"; else printf " %7.2f", s[k] / n[k] }
				printf "  %6.2f  %s\n", lim[p], cross(ps[p], lim[p]) }
			printf "xpool crosses gavel-las-ss'"'"'s limit (%.2f h) at %s\n", lim[1], cross("xpool", lim[1]) }' \
			"$OUT/gavel-sustain-$f.csv"
	done
	exit 0
fi
ALL=fifo,gavel-fifo,las,gavel-las,gavel-las-ss,xpool
"$XP" sim gavel --policy $ALL --rates 0.4,2,4,4.8,5.2,5.6,6.0 --seeds 0-2 \
	--plot "$OUT/gavel-single-jct.svg" --csv >"$OUT/gavel-single.csv"
"$XP" sim gavel --policy $ALL --multi-gpu --rates 0.2,1,2,2.4,2.6,2.8 --seeds 0-2 \
	--plot "$OUT/gavel-multi-jct.svg" --csv >"$OUT/gavel-multi.csv"
"$XP" sim gavel --policy xpool --rates 4 --seeds 0-2 --energy-weights 0,0.25,0.5,0.75,1,1.25 \
	--plot "$OUT/gavel-energy.svg" --csv >"$OUT/gavel-energy.csv"
"$XP" sim gavel --policy gavel-las,gavel-las-ss,xpool --rates 4.8,5.6 --seeds 3-9 \
	--csv >"$OUT/gavel-holdout.csv"
"$XP" sim gavel --policy gavel-las,gavel-las-ss,xpool --multi-gpu --rates 2.4,2.8 --seeds 3-9 \
	--csv >"$OUT/gavel-holdout-multi.csv"
echo "gavel: all runs in $(($(date +%s) - t0)) s"
# means over the seeds; beside them the paper's figure for Gavel LAS w/
# space sharing: the published mean of seeds 0-2 (cell 16 of Gavel's
# continuous_jobs{,_multigpu}.ipynb at 1f6f02e; docs/results/policy.md §2.1)
for f in single multi; do
	echo "-- $f-GPU: average JCT (h), mean of seeds 0-2 [seed 0]; '-' saturated"
	awk -F, -v f="$f" '
	BEGIN { split("0.4 18.19 2 18.62 4 16.32 4.8 17.92 5.2 18.61 5.6 19.08 6 19.58", a, " ");
		for (i = 1; i in a; i += 2) ss["single", a[i]] = a[i + 1];
		split("0.2 17.48 1 17.83 2 18.15 2.4 21.82 2.6 25.54 2.8 32.73", b, " ");
		for (i = 1; i in b; i += 2) ss["multi", b[i]] = b[i + 1] }
	NR > 1 { k = $1 SUBSEP $3; if (!(k in n)) { order[++no] = k }
		n[k]++; s[k] += $6; if ($4 == 0) z[k] = $6; if ($16 == 1) sat[k] = 1
		pol[$1] = 1; rate[$3] = 1 }
	END { printf "%-11s", "rate"; for (r in rate) rs[++nr] = r + 0
		for (i = 1; i <= nr; i++) for (j = i + 1; j <= nr; j++) if (rs[j] < rs[i]) { t = rs[i]; rs[i] = rs[j]; rs[j] = t }
		for (i = 1; i <= nr; i++) printf " %15s", rs[i]; printf "\n"
		split("fifo gavel-fifo las gavel-las gavel-las-ss xpool", ps, " ")
		for (p = 1; p <= 6; p++) { printf "%-11s", ps[p]
			for (i = 1; i <= nr; i++) { k = ps[p] SUBSEP rs[i]
				if (sat[k] || !(k in n)) printf " %15s", "-"
				else printf " %6.2f [%6.2f]", s[k] / n[k], z[k] }
			printf "\n" }
		printf "%-11s", "GavelSS pub"; for (i = 1; i <= nr; i++) printf " %6.2f %8s", ss[f, rs[i]], ""; printf "\n"
		printf "%-11s", "xpool/SS"; for (i = 1; i <= nr; i++) { k = "xpool" SUBSEP rs[i]
			if (sat[k]) printf " %15s", "-"; else printf " %14.1f%%", 100 * (s[k] / n[k] / ss[f, rs[i]] - 1) }
		printf "   (mean of seeds against the published mean of seeds 0-2)\n"
		printf "%-11s", "xpool/oursS"; for (i = 1; i <= nr; i++) { k = "xpool" SUBSEP rs[i]; q = "gavel-las-ss" SUBSEP rs[i]
			if (sat[k] || sat[q] || !(q in n)) printf " %15s", "-"; else printf " %14.1f%%", 100 * (s[k] / s[q] - 1) }
		printf "   (mean of seeds against our gavel-las-ss)\n" }' "$OUT/gavel-$f.csv"
done
echo "-- hold-out seeds 3-9: xpool against our Gavel LAS and Gavel LAS w/ SS, mean JCT h of the seeds"
echo "   where neither saturated; a seed where either saturates is listed apart"
cat "$OUT/gavel-holdout.csv" "$OUT/gavel-holdout-multi.csv" | awk -F, '$1 != "policy" {
	k = "multi=" $5 " rate=" $3; ks[k] = 1; v[$1, k, $4] = $6; sat[$1, k, $4] = $16; seeds[$4] = 1 }
	END { split("gavel-las gavel-las-ss", bs, " ")
	for (k in ks) for (bi = 1; bi <= 2; bi++) { b = bs[bi]; n = 0; g = 0; x = 0; bad = ""
		for (sd in seeds) {
			if (!(("xpool", k, sd) in v) || !((b, k, sd) in v)) continue
			if (sat["xpool", k, sd] || sat[b, k, sd]) {
				bad = bad sprintf(" seed %s: %s %s, xpool %s;", sd, b,
					sat[b, k, sd] ? "saturated" : sprintf("%.2f", v[b, k, sd]),
					sat["xpool", k, sd] ? "saturated" : sprintf("%.2f", v["xpool", k, sd]))
				continue }
			n++; g += v[b, k, sd]; x += v["xpool", k, sd] }
		if (n) printf "%s: %d seeds, %s %.2f, xpool %.2f (%+.1f%%)%s\n", k, n, b, g / n, x / n,
			100 * (x / g - 1), bad } }' | sort
echo "-- energy weight (xpool, 4 jobs/h, seeds 0-2): JCT h, kWh per job running, idle MWh"
awk -F, 'NR > 1 { k = $2; n[k]++; j[k] += $6; e[k] += $13; i[k] += $14 } END {
	for (k in n) printf "%s %.2f %.2f %.2f\n", k, j[k] / n[k], e[k] / n[k], i[k] / n[k] / 1000 }' \
	"$OUT/gavel-energy.csv" | sort -n | awk '{ printf "weight %-5s JCT %6.2f h  %5.2f kWh/job  idle %5.2f MWh\n", $1, $2, $3, $4 }'
