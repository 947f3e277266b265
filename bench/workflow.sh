#!/bin/sh
# bench/workflow.sh BUILD [BASELINE]: part 9b of `make bench` (issue 19:
# "a workflow of 10,000 jobs is accepted; make bench reports how long it
# takes", goal under 1 s). For each shape, BENCH_RUNS (5) times on a fresh
# `xpool server` (loopback, fsync on, examples/clusters/small.yaml,
# --body-limit 8388608: the 10,000-job document is 1.3 MB), it times one
# `POST /v1/workflows` with curl until its 201, and prints the median
# (min..max):
#   10000x4   10,000 jobs, job i depending on up to 4 distinct earlier jobs
#             drawn from the 200 before it (awk, seed 42): a wide DAG;
#   1000x64   the hostile case of test_hostile: job i on the 64 before it.
# Beside the wall time, the server's CPU over the request (all its
# threads, from /proc/PID/stat): less at the mercy of a shared machine.
# BASELINE (or BENCH_WF_BASELINE), a folder with another build's xpool and
# xpoold (say, copied before a change), runs the same documents in the same run, alternating
# with BUILD's, so the two are measured under the same load.
# Every server started here is stopped by its PID; the temp dir is removed.
set -eu
BUILD=${1:-build}
BASE=${2:-${BENCH_WF_BASELINE:-}}
RUNS=${BENCH_RUNS:-5}
SRC=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d /tmp/xpool-bench-wf.XXXXXX)
PID=""
stop_server() {
	if [ -n "$PID" ]; then
		kill -TERM "$PID" 2>/dev/null || true
		wait "$PID" 2>/dev/null || true
		PID=""
	fi
	rm -rf "$T/data"
}
trap 'stop_server; rm -rf "$T"' EXIT
trap 'exit 130' INT TERM
[ -x "$BUILD/xpoold" ] || { echo "bench/workflow.sh: $BUILD/xpoold is missing: run make first" >&2; exit 1; }
mkdir "$T/new" "$T/base"
cp "$BUILD/xpool" "$BUILD/xpoold" "$T/new/"
[ -z "$BASE" ] || cp "$BASE/xpool" "$BASE/xpoold" "$T/base/"

# gen N MAXDEPS WINDOW: a workflow document, compact JSON
gen() {
	awk -v n="$1" -v maxd="$2" -v win="$3" 'BEGIN {
		srand(42); printf "{\"name\":\"bench\",\"jobs\":["
		for (i = 0; i < n; i++) {
			printf "%s{\"name\":\"s%d\",\"resources\":{\"cpu\":1},\"depends_on\":[", i ? "," : "", i
			k = 0; split("", used)
			for (d = 0; d < maxd && d < i; d++) {
				if (win) { lo = i - win; if (lo < 0) lo = 0; j = lo + int(rand() * (i - lo)) }
				else j = i - 1 - d
				if (j in used) continue
				used[j] = 1
				printf "%s{\"job\":\"s%d\"}", k++ ? "," : "", j
			}
			printf "]}"
		}
		printf "]}" }'
}
gen 10000 4 200 >"$T/10000x4.json"
gen 1000 64 0 >"$T/1000x64.json"

start_server() { # BIN
	mkdir "$T/data"
	rm -f "$T/server.out" # the last server's address must not be read for this one's
	"$1/xpool" server --data "$T/data" --listen 127.0.0.1:0 --cluster "$SRC/examples/clusters/small.yaml" \
		--body-limit 8388608 >"$T/server.out" 2>"$T/server.err" &
	PID=$!
	i=0
	until grep -q '^address: ' "$T/server.out" 2>/dev/null; do
		i=$((i + 1))
		if [ "$i" -gt 300 ] || ! kill -0 "$PID" 2>/dev/null; then
			echo "bench/workflow.sh: the server did not start:" >&2
			cat "$T/server.err" >&2
			exit 1
		fi
		sleep 0.1
	done
	ADDR=$(sed -n 's|^address: ||p' "$T/server.out")
}

TCK=$(getconf CLK_TCK)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$PID/stat"; }

# one POST on a fresh server: "STATUS SECONDS CPU_MS" appended to FILE,
# CPU_MS the server's CPU time (every thread) over the request
one() { # BIN DOC FILE
	start_server "$1"
	c0=$(cpu_ticks)
	res=$(curl -s -o "$T/reply.json" -w '%{http_code} %{time_total}' -H 'Expect:' \
		-H "Authorization: Bearer $(cat "$T/data/admin.token")" -H 'Content-Type: application/json' \
		--data-binary @"$2" "$ADDR/v1/workflows")
	echo "$res $((($(cpu_ticks) - c0) * 1000 / TCK))" >>"$3"
	stop_server
}

# median (min..max) in ms of the 201s of FILE, wall and the server's CPU,
# and how many were not 201
stat3() {
	awk '$1 != 201 { bad++ } END { if (bad) print "(" bad " not 201) " }' "$1" | tr -d '\n'
	awk '$1 == 201 { print $2 * 1000 }' "$1" | med
	printf ', server CPU '
	awk '$1 == 201 { print $3 }' "$1" | med
}
med() {
	sort -g | awk '{ v[NR] = $1 } END { if (!NR) { printf "no 201"; exit }
		printf "%.0f ms (%.0f..%.0f)", v[int((NR + 1) / 2)], v[1], v[NR] }'
}

echo "   load before: $(uptime | sed 's/.*load average/load average/')"
for shape in 10000x4 1000x64; do
	: >"$T/new.$shape"
	: >"$T/base.$shape"
	r=1
	while [ "$r" -le "$RUNS" ]; do
		one "$T/new" "$T/$shape.json" "$T/new.$shape"
		[ -z "$BASE" ] || one "$T/base" "$T/$shape.json" "$T/base.$shape"
		r=$((r + 1))
	done
	bytes=$(wc -c <"$T/$shape.json")
	printf '   workflow %-8s (%s bytes): 201 in %s over %s runs\n' "$shape" "$bytes" \
		"$(stat3 "$T/new.$shape" 2>&1)" "$RUNS"
	[ -z "$BASE" ] || printf '   %-17s baseline %s: %s\n' "" "$BASE" "$(stat3 "$T/base.$shape" 2>&1)"
done
echo "   goal: the 10,000-job workflow under 1000 ms"
