#!/bin/sh
# bench/scale.sh BUILD [PART...]: the scale figures of issue 23, section 3
# (docs/results/scale.md). Parts (default: agents pass restart state):
#   agents   bench/agents.sh at SCALE_AGENTS (100000) emulated agents, one
#            run: registration, the 5 s period (20,000 beats/s) and the ramp
#            BENCH_AGENT_RAMP (4,3.33,2.5,2) for the highest heartbeat rate
#            with p99 < 200 ms. Long polls (one per agent) are off by
#            default (BENCH_AGENT_WATCHERS=0): the bench client's single
#            libcurl-multi thread opens ~30,000 in 45 s on 2 cores, see
#            scale.md; BENCH_AGENT_WATCH_PROBE=100000@100200 BENCH_RUNS=0 runs
#            that probe, spread over SCALE_SOURCES (8) loopback source
#            addresses. As root the open-file limit is raised (agents.sh).
#            BENCH_* knobs of agents.sh pass through. ~2 min.
#   pass     xp_bench_pass over SCALE_NODES (100000) emulated nodes and
#            SCALE_PASS_JOBS (100000 1000000) pending jobs: one scheduling
#            pass, held full / released / backfill.
#   restart  restart to serving at SCALE_RESTART_NODES (10000) nodes and
#            SCALE_RESTART_JOBS (100000) jobs (SQLite store): a server is
#            loaded through HTTP (xp_bench_submit, 64 clients, duration 0,
#            so they run and finish on the emulated nodes; --max-finished
#            keeps them all), stopped with SIGTERM and started SCALE_RUNS
#            (3) times; each time is from the exec to the first answered
#            authenticated read (curl GET /v1/jobs?limit=1 with the admin
#            token, every 5 ms).
#   state    as restart at SCALE_NODES nodes and SCALE_JOBS (1000000) jobs:
#            the controller's RSS and threads loaded, and one restart.
# Nodes come from a generated descriptor: half the shape of the 8-A100 node
# of examples/clusters/bench-512.yaml, half the 4-V100 one. The binaries are
# copied to a temp dir; every process started here is stopped by its PID;
# the temp dir is removed. Output in BENCH_OUT (out/bench)/scale.
set -eu
BUILD=${1:-build}
[ $# -gt 0 ] && shift
PARTS=${*:-agents pass restart state}
NODES=${SCALE_NODES:-100000}
JOBS=${SCALE_JOBS:-1000000}
PASS_JOBS=${SCALE_PASS_JOBS:-100000 1000000}
R_NODES=${SCALE_RESTART_NODES:-10000}
R_JOBS=${SCALE_RESTART_JOBS:-100000}
RUNS=${SCALE_RUNS:-3}
OUT=${BENCH_OUT:-out/bench}/scale
mkdir -p "$OUT"
BENCH=scale
. "$(dirname "$0")/benchlib.sh"
bench_bins xpool xpoold bench/controller/xp_bench_submit bench/controller/xp_bench_pass
XP=$TMP/xpool
now_ms() { date +%s%3N; }
stat3() { sort -g "$1" 2>/dev/null | awk '{ v[NR] = $1 } END { if (!NR) { print "-"; exit }
	m = v[int((NR + 1) / 2)]; printf "%s (%s..%s)", m, v[1], v[NR] }'; }
field() { printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
proc() { sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status" | awk '{ print $1 }'; }

# cluster FILE N: N emulated nodes, half 8 x A100, half 4 x V100
cluster() {
	a=$(($2 / 2))
	cat >"$1" <<EOF
version: 1
nodes:
  - name: a100
    count: $a
    cpu: 64
    memory: 512Gi
    arch: x86_64
    devices:
      - {type: gpu, vendor: NVIDIA, model: A100, count: 8, memory: 80Gi}
  - name: v100
    count: $(($2 - a))
    cpu: 32
    memory: 256Gi
    arch: x86_64
    devices:
      - {type: gpu, vendor: NVIDIA, model: V100, count: 4, memory: 32Gi}
EOF
}

# start DATA LISTEN ARGS...: start the server; sets SERVER_PID, ADDR, T_START
start() {
	d=$1
	l=$2
	shift 2
	T_START=$(now_ms)
	"$XP" server --data "$d" --listen "$l" "$@" >"$TMP/server.out" 2>"$TMP/server.err" &
	SERVER_PID=$!
}
# serving: wait for the stdout line, return the address
wait_line() {
	i=0
	until grep -q '^serving until interrupted' "$TMP/server.out" 2>/dev/null; do
		i=$((i + 1))
		if [ "$i" -gt 36000 ] || ! kill -0 "$SERVER_PID" 2>/dev/null; then
			echo "bench/scale.sh: the server did not start:" >&2
			cat "$TMP/server.err" >&2
			exit 1
		fi
		sleep 0.05
	done
	ADDR=$(sed -n 's|^address: http://||p' "$TMP/server.out")
}
# first_read DATA ADDR: ms from T_START to the first 200 on an authenticated read
first_read() {
	tok=$(cat "$1/admin.token")
	until [ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $tok" \
		"http://$2/v1/jobs?limit=1" 2>/dev/null)" = 200 ]; do
		kill -0 "$SERVER_PID" 2>/dev/null || {
			cat "$TMP/server.err" >&2
			exit 1
		}
		sleep 0.005
	done
	echo $(($(now_ms) - T_START))
}

# load TAG NODES JOBS: a fresh server loaded with NODES and JOBS, then RUNS restarts
load() {
	tag=$1
	n=$2
	j=$3
	d=$TMP/data-$tag
	rm -rf "$d"
	mkdir "$d"
	cluster "$TMP/cluster-$tag.yaml" "$n"
	start "$d" 127.0.0.1:0 --cluster "$TMP/cluster-$tag.yaml" --max-finished "$j"
	wait_line
	echo "  [$tag] $n nodes registered in $(($(now_ms) - T_START)) ms; submitting $j jobs (64 clients, duration 0)"
	T=$(now_ms)
	"$TMP/xp_bench_submit" --addr "$ADDR" --token-file "$d/admin.token" --clients 64 \
		--jobs "$j" --duration 0 >"$OUT/${tag}_submit.log" 2>&1 || true
	sed 's/^/      /' "$OUT/${tag}_submit.log" | head -3
	# wait until nothing is pending or running
	tok=$(cat "$d/admin.token")
	while :; do
		left=$(curl -s -H "Authorization: Bearer $tok" "http://$ADDR/metrics" |
			awk '/^xpool_jobs[{ ].*state="(pending|running)"/ { s += $NF } END { print s + 0 }')
		[ "$left" = 0 ] && break
		sleep 1
	done
	echo "  [$tag] loaded in $(($(now_ms) - T)) ms"
	sleep 3
	pid=$SERVER_PID
	rss=$(proc "$pid" VmRSS)
	hwm=$(proc "$pid" VmHWM)
	thr=$(proc "$pid" Threads)
	echo "$tag nodes=$n jobs=$j rss_mib=$((rss / 1024)) hwm_mib=$((hwm / 1024)) threads=$thr db_mib=$(du -sm "$d" | cut -f1)" |
		tee -a "$OUT/summary.txt"
	stop_server
	: >"$OUT/${tag}_restart_ms.txt"
	r=1
	while [ "$r" -le "$RUNS" ]; do
		start "$d" "$ADDR"
		ms=$(first_read "$d" "$ADDR")
		wait_line
		sleep 2
		echo "$ms" >>"$OUT/${tag}_restart_ms.txt"
		echo "  [$tag] restart $r: first authenticated read after $ms ms; RSS $(($(proc "$SERVER_PID" VmRSS) / 1024)) MiB (peak $(($(proc "$SERVER_PID" VmHWM) / 1024))), $(proc "$SERVER_PID" Threads) threads"
		stop_server
		r=$((r + 1))
	done
	echo "$tag restart_to_first_read_ms $(stat3 "$OUT/${tag}_restart_ms.txt")" >>"$OUT/summary.txt"
	rm -rf "$d"
}

rm -f "$OUT"/*.txt "$OUT"/*.log
echo "== scale: parts $PARTS; load before: $(uptime | sed 's/.*load average/load average/')"
for part in $PARTS; do
	case $part in
	agents)
		BENCH_AGENTS=${SCALE_AGENTS:-100000} BENCH_AGENT_WATCHERS=${BENCH_AGENT_WATCHERS:-0} \
			BENCH_AGENT_RAMP=${BENCH_AGENT_RAMP:-4,3.33,2.5,2} \
			BENCH_AGENT_SOURCES=${SCALE_SOURCES:-8} BENCH_AGENT_WATCH_PROBE=${BENCH_AGENT_WATCH_PROBE-} \
			BENCH_RUNS=${BENCH_RUNS:-1} BENCH_OUT=$OUT ./bench/agents.sh "$BUILD"
		;;
	pass)
		cluster "$TMP/cluster-pass.yaml" "$NODES"
		for j in $PASS_JOBS; do
			echo "  [pass] $NODES nodes, $j pending jobs, $RUNS runs"
			"$TMP/xp_bench_pass" --cluster "$TMP/cluster-pass.yaml" --jobs "$j" --runs "$RUNS" |
				tee "$OUT/pass_$j.log" | sed 's/^/      /'
		done
		;;
	restart) load restart "$R_NODES" "$R_JOBS" ;;
	state) load state "$NODES" "$JOBS" ;;
	*)
		echo "bench/scale.sh: unknown part $part" >&2
		exit 2
		;;
	esac
done
[ ! -f "$OUT/summary.txt" ] || { echo "== scale figures (restart: median (min..max) of $RUNS)"; cat "$OUT/summary.txt"; }

exit 0
