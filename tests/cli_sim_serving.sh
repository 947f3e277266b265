#!/bin/sh
# cli_sim_serving: `xpool sim serving` from the command line - help, bad
# flags refused with the flag and exit 2, a missing load series or an
# absent ../shared said plainly with exit 1, a small run on a synthetic
# time,qps CSV (the three policies labelled static, reactive, xpool; JSON;
# the four SVG plots), and (with ../shared) the genai2026 day by default in
# under a minute. Without ../shared the last part is skipped (exit 77).
# usage: cli_sim_serving.sh XPOOL SHARED_DIR SOURCE_DIR
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

# six hours: quiet, a ramp to 6 qps, quiet again
awk 'BEGIN { print "time,qps"; for (m = 0; m < 360; m++) {
	q = (m < 120 || m >= 240) ? 0.5 : 0.5 + 5.5 * (m < 180 ? (m - 120) / 60 : (240 - m) / 60);
	printf "%d,%.3f\n", m * 60, q } }' >"$T/day.csv"
printf 'time,qps\n0,1\n60,oops\n' >"$T/bad.csv"

expect 0 "usage: xpool sim serving" -- "$XP" sim serving --help
expect 0 "serving" -- "$XP" sim --help
expect 2 "\-\-gpus: expected an integer 1..100000, got '0'" -- "$XP" sim serving --gpus 0
expect 2 "\-\-policy: expected a list of static, reactive, xpool, got 'hpa'" -- \
	"$XP" sim serving --policy static,hpa
expect 2 "\-\-series: expected generative, api or both" -- "$XP" sim serving --series all
expect 2 "\-\-capacity: expected a number" -- "$XP" sim serving --capacity -1
expect 2 "\-\-min-replicas: 9 is more than the pool's 8 GPUs" -- \
	"$XP" sim serving --gpus 8 --min-replicas 9
expect 2 "unknown flag" -- "$XP" sim serving --nodes 4
expect 1 "$T/none.csv: load series not found" -- "$XP" sim serving --load "$T/none.csv"
expect 1 "bad.csv:3: field qps: expected a number, got 'oops'" -- \
	"$XP" sim serving --load "$T/bad.csv"
expect 1 "../shared is absent" -- env XP_SHARED_DIR="$T/noshared" "$XP" sim serving

# the small day: three rows, static never scales, the pool holds
expect 0 "day.csv, 360 windows of 60 s = 6.0 h" -- "$XP" sim serving --load "$T/day.csv" \
	--gpus 32
for p in static reactive xpool; do
	grep -q "^$p " "$T/out" || { echo "FAIL: no row $p"; cat "$T/out"; fails=$((fails + 1)); }
done
expect 0 '"policy": "xpool"' -- "$XP" sim serving --load "$T/day.csv" --gpus 32 -o json
grep -q '"policy": "static"' "$T/out" || { echo "FAIL: no static in JSON"; fails=$((fails + 1)); }
expect 0 "" -- "$XP" sim serving --load "$T/day.csv" --gpus 32 --policy static -o json
grep -q '"scale_ups": 0,' "$T/out" || { echo "FAIL: static scaled"; cat "$T/out"; fails=$((fails + 1)); }
expect 0 "" -- "$XP" sim serving --load "$T/day.csv" --time-scale 0.5 --qps-scale 2 \
	--gpus 32 --svg "$T/plot"
grep -q "360 windows of 30 s = 3.0 h, peak 12.00 qps" "$T/out" ||
	{ echo "FAIL: scaling"; cat "$T/out"; fails=$((fails + 1)); }
for f in replicas load util training; do
	[ -s "$T/plot-$f.svg" ] || { echo "FAIL: no $T/plot-$f.svg"; fails=$((fails + 1)); }
done

# the genai2026 day by default, in under a minute
if [ -f "$SHARED/traces/genai2026/qps.csv" ]; then
	start=$(date +%s)
	export XP_SHARED_DIR="$SHARED"
	expect 0 "qps.csv (Generative Requests), 1400 windows of 57 s" -- "$XP" sim serving
	took=$(($(date +%s) - start))
	[ "$took" -lt 60 ] || { echo "FAIL: sim serving took ${took}s"; fails=$((fails + 1)); }
	for p in static reactive xpool; do
		grep -q "^$p " "$T/out" || { echo "FAIL: no row $p"; cat "$T/out"; fails=$((fails + 1)); }
	done
	[ "$fails" -eq 0 ] || exit 1
	echo "cli_sim_serving: sim serving's flags, errors, a small run and the genai2026 day as expected"
	exit 0
fi
[ "$fails" -eq 0 ] || exit 1
echo "SKIP: $SHARED/traces/genai2026/qps.csv is absent: the default genai2026 day not run"
exit 77
