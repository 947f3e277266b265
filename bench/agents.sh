#!/bin/sh
# bench/agents.sh BUILD: heartbeat handling at scale (issue 4), section 4 of
# `make bench`. One process (xp_bench_agents) emulates BENCH_AGENTS (10000)
# node agents with BENCH_AGENT_DEVICES (8) fake GPUs each through the real
# HTTP API of an `xpool server` started here on a fresh data directory
# (fsync on, the defaults otherwise; --max-connections sized to the load).
# Every agent registers (POST /v1/agents), then heartbeats on an open-loop
# schedule from BENCH_AGENT_THREADS (32) kept-alive connections; the
# controller's CPU comes from /proc/PID/stat. Each run is on a fresh server;
# figures are median (min..max) of BENCH_RUNS (3) runs:
#   a. the default period, 5 s (10000 agents: 2000 heartbeats/s), measured
#      for BENCH_AGENT_SECONDS (20) after one period of warm-up;
#   c. then, on the same server, a ramp of shorter periods BENCH_AGENT_RAMP
#      (2, 1, 0.5, 0.33, 0.25 s: 5k, 10k, 20k, 30k, 40k heartbeats/s),
#      BENCH_AGENT_RAMP_SECONDS (4) each, that stops after the first step
#      whose p99 (from the schedule) passes 200 ms or that had errors or
#      missed beats: the highest rate that passed is the sustainable one;
#   b. on fresh servers, (a) again, measured for BENCH_AGENT_WATCH_SECONDS
#      (30: the polls come back and are re-issued once inside the window),
#      while BENCH_AGENT_WATCHERS (10000: one per agent) long polls on
#      assignments are held (wait=30 s, as agents hold them; the server's
#      --max-connections is sized for them), then one probe run per entry
#      of BENCH_AGENT_WATCH_PROBE ("16000 17000"; BENCH_AGENT_PROBE_SECONDS,
#      25, measured: on 2 cores the controller needs ~10 s to accept 16,000
#      connections, a shorter window ends before they are all open) against
#      a server started WITHOUT --max-connections, to show where the default
#      (16384 connections) stops and how: an entry W holds W watchers; W@M
#      starts that server with --max-connections M.
#      (Before ad76cdb the controller's select() loop dropped every
#      connection past descriptor 1024, ~980 watchers; see
#      docs/results/agents.md.)
# The client shares the machine's cores with the controller: on 2 cores the
# ramp's ceiling is the machine's, not the controller's alone. The binaries
# are copied to a temp dir first; every process started here is stopped by
# its PID on exit, and the temp dir is removed.
# 100,000 agents (docs/results/scale.md): one source address has ~28,000
# ephemeral ports, so BENCH_AGENT_SOURCES (1) spreads the watchers over
# 127.0.0.1 .. 127.0.0.K (xp_bench_agents --sources), and as root the hard
# open-file limit is raised to BENCH_AGENT_NOFILE (1048576) first.
# Quick look: BENCH_RUNS=1 BENCH_AGENTS=2000 BENCH_AGENT_SECONDS=5 BENCH_AGENT_WATCHERS=2000
#   BENCH_AGENT_WATCH_PROBE= ./bench/agents.sh build
set -eu
BUILD=${1:-build}
RUNS=${BENCH_RUNS:-3}
AGENTS=${BENCH_AGENTS:-10000}
DEVICES=${BENCH_AGENT_DEVICES:-8}
THREADS=${BENCH_AGENT_THREADS:-32}
WINDOW=${BENCH_AGENT_SECONDS:-20}
RAMP=${BENCH_AGENT_RAMP:-2,1,0.5,0.33,0.25}
RAMP_WINDOW=${BENCH_AGENT_RAMP_SECONDS:-4}
WATCHERS=${BENCH_AGENT_WATCHERS:-10000}
WATCH_WINDOW=${BENCH_AGENT_WATCH_SECONDS:-30}
PROBE=${BENCH_AGENT_WATCH_PROBE-16000 17000}
PROBE_WINDOW=${BENCH_AGENT_PROBE_SECONDS:-25}
SOURCES=${BENCH_AGENT_SOURCES:-1}
NOFILE=${BENCH_AGENT_NOFILE:-1048576}
P99_LIMIT=200
OUT=${BENCH_OUT:-out/bench}/agents
mkdir -p "$OUT"
BENCH=agents
BENCH_AFTER_STOP='[ -f "$TMP/server.err" ] && grep "refused at accept" "$TMP/server.err" >&2 || true; rm -rf "$TMP/data"'
. "$(dirname "$0")/benchlib.sh"
bench_bins xpool xpoold bench/controller/xp_bench_agents
XP=$TMP/xpool
BA=$TMP/xp_bench_agents
# one descriptor per connection, on both sides (dash and bash both have -n, -H)
# shellcheck disable=SC3045
[ "$(id -u)" != 0 ] || ulimit -Hn "$NOFILE" 2>/dev/null || true
# shellcheck disable=SC3045
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

now_ms() { date +%s%3N; }
div() { awk -v a="$1" -v b="$2" -v d="$3" 'BEGIN { printf "%.*f", d, a / b }'; }
# word KEY of a "key=value ..." line
field() { printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
# median (min..max) of the numbers in a file, one a line
stat3() { sort -g "$1" 2>/dev/null | awk '{ v[NR] = $1 } END { if (!NR) { print "-"; exit }
	m = v[int((NR + 1) / 2)]; printf "%s (%s..%s)", m, v[1], v[NR] }'; }

# start_server [MAX_CONNECTIONS]: without one, the server's default
start_server() {
	mkdir "$TMP/data"
	# every emulated agent connects from 127.0.0.1, at once: the per-address
	# limit on connections not yet admitted (--max-strangers, 64, against
	# one address holding slots) is lifted to the whole load
	"$XP" server --data "$TMP/data" --listen 127.0.0.1:0 ${1:+--max-connections "$1"} \
		--max-strangers 100000 \
		>"$TMP/server.out" 2>"$TMP/server.err" &
	SERVER_PID=$!
	i=0
	until grep -q '^serving until interrupted' "$TMP/server.out" 2>/dev/null; do
		i=$((i + 1))
		if [ "$i" -gt 300 ] || ! kill -0 "$SERVER_PID" 2>/dev/null; then
			echo "bench/agents.sh: the server did not start:" >&2
			cat "$TMP/server.err" >&2
			exit 1
		fi
		sleep 0.1
	done
	ADDR=$(sed -n 's|^address: http://||p' "$TMP/server.out")
}

# bench LOG ARGS...: one xp_bench_agents run against the server; its lines
# go to LOG and, the human ones, to the terminal. Never fails the script:
# the figures say what went wrong.
bench() {
	log=$1
	shift
	rc=0
	"$BA" --addr "$ADDR" --token-file "$TMP/data/admin.token" --server-pid "$SERVER_PID" \
		--agents "$AGENTS" --devices "$DEVICES" --threads "$THREADS" --sources "$SOURCES" "$@" \
		>"$log" 2>"$log.err" || rc=$?
	sed -n 's/^# /      /p' "$log"
	sed 's/^/      stderr: /' "$log.err"
	[ "$rc" = 0 ] || echo "      (xp_bench_agents exit status $rc)"
}

# keep KEY LINE FILE: append word KEY of LINE to FILE
keep() { field "$1" "$2" >>"$3"; }

T_ALL=$(now_ms)
rm -f "$OUT"/*.txt "$OUT"/*.log "$OUT"/*.err
echo "== agents: $AGENTS emulated agents x $DEVICES fake GPUs, $THREADS connections, one xpool server per run, $RUNS runs"
echo "   load before: $(uptime | sed 's/.*load average/load average/')"

# ------------------------------------------------------------ a + c --
T=$(now_ms)
r=1
while [ "$r" -le "$RUNS" ]; do
	start_server $((THREADS + 64))
	echo "  [a+c] run $r: period 5 s for $WINDOW s, then the ramp $RAMP s ($RAMP_WINDOW s each)"
	bench "$OUT/ac_$r.log" --period "5,$RAMP" --seconds "$WINDOW,$RAMP_WINDOW" \
		--stop-p99-ms "$P99_LIMIT"
	stop_server
	reg=$(grep '^register' "$OUT/ac_$r.log" || true)
	keep per_s "$reg" "$OUT/reg_per_s.txt"
	keep p99_ms "$reg" "$OUT/reg_p99.txt"
	keep server_cpu_us_per_reg "$reg" "$OUT/reg_cpu_us.txt"
	a=$(grep '^heartbeat' "$OUT/ac_$r.log" | head -1 || true)
	for k in per_s errors missed sched_p50_ms sched_p90_ms sched_p99_ms sched_max_ms \
		send_p50_ms send_p99_ms server_cpu_us_per_hb server_cpu_pct server_rss_mib \
		server_threads client_cpu_pct; do
		keep "$k" "$a" "$OUT/a_$k.txt"
	done
	# the ramp: every step after the first; the sustainable rate is the
	# highest offered rate of a step within the limits
	best=0
	top=0
	grep '^heartbeat' "$OUT/ac_$r.log" | tail -n +2 >"$TMP/ramp" || true
	while read -r line; do
		p=$(field period_s "$line")
		off=$(field offered_per_s "$line")
		got=$(field per_s "$line")
		p99=$(field sched_p99_ms "$line")
		ok=$(awk -v p="$p99" -v e="$(field errors "$line")" -v m="$(field missed "$line")" \
			-v l="$P99_LIMIT" 'BEGIN { print (p <= l && e == 0 && m == 0) ? 1 : 0 }')
		echo "$got" >>"$OUT/ramp_${p}_per_s.txt"
		echo "$p99" >>"$OUT/ramp_${p}_p99.txt"
		field server_cpu_us_per_hb "$line" >>"$OUT/ramp_${p}_cpu_us.txt"
		field server_cpu_pct "$line" >>"$OUT/ramp_${p}_cpu_pct.txt"
		field client_cpu_pct "$line" >>"$OUT/ramp_${p}_client_pct.txt"
		echo "$ok" >>"$OUT/ramp_${p}_ok.txt"
		[ "$ok" = 0 ] || best=$(awk -v a="$best" -v b="$off" 'BEGIN { print (b > a) ? b : a }')
		top=$(awk -v a="$top" -v b="$got" 'BEGIN { print (b > a) ? b : a }')
	done <"$TMP/ramp"
	echo "$best" >>"$OUT/ramp_sustained.txt"
	echo "$top" >>"$OUT/ramp_top.txt"
	n=$(grep '^nodes' "$OUT/ac_$r.log" || true)
	echo "$(field suspect "$n") $(field down "$n")" >>"$OUT/ac_nodes.txt"
	r=$((r + 1))
done
TAC=$(($(now_ms) - T))

# ---------------------------------------------------------------- b --
T=$(now_ms)
r=1
while [ "$r" -le "$RUNS" ] && [ "$WATCHERS" -gt 0 ]; do
	start_server $((THREADS + WATCHERS + 64))
	echo "  [b] run $r: period 5 s for $WATCH_WINDOW s with $WATCHERS watchers"
	bench "$OUT/b_$r.log" --period 5 --seconds "$WATCH_WINDOW" --watchers "$WATCHERS"
	stop_server
	b=$(grep '^heartbeat' "$OUT/b_$r.log" || true)
	for k in per_s errors sched_p50_ms sched_p99_ms sched_max_ms server_cpu_us_per_hb \
		server_rss_mib server_threads server_fds watch_in_flight watch_replies \
		watch_errors; do
		keep "$k" "$b" "$OUT/b_$k.txt"
	done
	r=$((r + 1))
done
for p in $PROBE; do
	w=${p%@*}
	m=
	[ "$w" = "$p" ] || m=${p#*@}
	start_server "$m"
	echo "  [b] probe: $w watchers, --max-connections ${m:-default}, period 5 s for $PROBE_WINDOW s (one run)"
	bench "$OUT/probe_$w.log" --period 5 --seconds "$PROBE_WINDOW" --watchers "$w"
	# the controller logs each connection it refuses at its limit
	refused=$(grep -c 'reached connection limit' "$TMP/server.err" || true)
	stop_server
	l=$(grep '^heartbeat' "$OUT/probe_$w.log" || true)
	printf '%s %s %s %s %s %s %s %s %s %s\n' "$w" "$(field watch_in_flight "$l")" \
		"$(field watch_errors "$l")" "$(field server_threads "$l")" \
		"$(field server_fds "$l")" "$(field server_rss_mib "$l")" \
		"$(field sched_p99_ms "$l")" "$(field errors "$l")" "${m:-default}" \
		"$refused" >>"$OUT/probe.txt"
done
TB=$(($(now_ms) - T))

ramp_rows() {
	for p in $(echo "$RAMP" | tr ',' ' '); do
		[ -f "$OUT/ramp_${p}_per_s.txt" ] || {
			printf '   period %-4s %6.0f/s offered: not reached (the ramp stopped before)\n' \
				"$p" "$(div "$AGENTS" "$p" 0)"
			continue
		}
		printf '   period %-4s %6.0f/s offered: answered/s %s; p99 ms %s; CPU/hb us %s; %% of a core: controller %s, client %s; within limits in %s of %s runs\n' \
			"$p" "$(div "$AGENTS" "$p" 0)" "$(stat3 "$OUT/ramp_${p}_per_s.txt")" \
			"$(stat3 "$OUT/ramp_${p}_p99.txt")" "$(stat3 "$OUT/ramp_${p}_cpu_us.txt")" \
			"$(stat3 "$OUT/ramp_${p}_cpu_pct.txt")" "$(stat3 "$OUT/ramp_${p}_client_pct.txt")" \
			"$(grep -c 1 "$OUT/ramp_${p}_ok.txt" || true)" "$(wc -l <"$OUT/ramp_${p}_ok.txt")"
	done
}
probe_rows() {
	[ -f "$OUT/probe.txt" ] || return 0
	while read -r w inf err thr fds rss p99 e m ref; do
		echo "   probe, $w watchers asked, --max-connections $m: $inf polls open at the end (client's count), $err failed in $PROBE_WINDOW s, $ref connections refused at the limit (controller log); controller $thr threads, $fds descriptors, RSS $rss MiB; heartbeat p99 $p99 ms, $e errors"
	done <"$OUT/probe.txt"
}
secs() { div "$1" 1000 1; }
{
	cat <<EOF
== agent figures: median (min..max) of $RUNS runs; $AGENTS agents x $DEVICES devices, $THREADS connections
registration, POST /v1/agents (fsynced), per s            $(stat3 "$OUT/reg_per_s.txt")
   p99 (ms); controller CPU per registration (us)          $(stat3 "$OUT/reg_p99.txt"); $(stat3 "$OUT/reg_cpu_us.txt")
a. period 5 s, $(div "$AGENTS" 5 0)/s offered: answered per s           $(stat3 "$OUT/a_per_s.txt"); errors $(stat3 "$OUT/a_errors.txt"), missed $(stat3 "$OUT/a_missed.txt")
   from schedule p50 / p90 / p99 / max (ms)                $(stat3 "$OUT/a_sched_p50_ms.txt") / $(stat3 "$OUT/a_sched_p90_ms.txt") / $(stat3 "$OUT/a_sched_p99_ms.txt") / $(stat3 "$OUT/a_sched_max_ms.txt")   target p99 < $P99_LIMIT
   from send p50 / p99 (ms)                                $(stat3 "$OUT/a_send_p50_ms.txt") / $(stat3 "$OUT/a_send_p99_ms.txt")
   controller CPU per heartbeat (us)                       $(stat3 "$OUT/a_server_cpu_us_per_hb.txt")
   controller / client CPU (% of a core)                   $(stat3 "$OUT/a_server_cpu_pct.txt") / $(stat3 "$OUT/a_client_cpu_pct.txt")
   controller RSS (MiB) / threads                          $(stat3 "$OUT/a_server_rss_mib.txt") / $(stat3 "$OUT/a_server_threads.txt")
   agent nodes suspect/down at the end, each run           $({ tr '\n' ',' <"$OUT/ac_nodes.txt"; } 2>/dev/null | sed 's/,$//; s/ /\//g; s/,/, /g')
c. ramp, $RAMP_WINDOW s a step, stops past p99 $P99_LIMIT ms, errors or missed beats:
$(ramp_rows)
   highest offered rate within the limits (per s)          $(stat3 "$OUT/ramp_sustained.txt")
   most heartbeats answered in one step (per s)            $(stat3 "$OUT/ramp_top.txt")
b. period 5 s with $WATCHERS watchers: answered per s        $(stat3 "$OUT/b_per_s.txt"); errors $(stat3 "$OUT/b_errors.txt")
   from schedule p50 / p99 / max (ms)                      $(stat3 "$OUT/b_sched_p50_ms.txt") / $(stat3 "$OUT/b_sched_p99_ms.txt") / $(stat3 "$OUT/b_sched_max_ms.txt")
   controller CPU per heartbeat (us)                       $(stat3 "$OUT/b_server_cpu_us_per_hb.txt")
   controller RSS (MiB) / threads / descriptors            $(stat3 "$OUT/b_server_rss_mib.txt") / $(stat3 "$OUT/b_server_threads.txt") / $(stat3 "$OUT/b_server_fds.txt")
   polls open at the end / re-issued / failed (client)     $(stat3 "$OUT/b_watch_in_flight.txt") / $(stat3 "$OUT/b_watch_replies.txt") / $(stat3 "$OUT/b_watch_errors.txt")
$(probe_rows)
time: [a+c] $(secs $TAC) s, [b] $(secs $TB) s, all $(secs $(($(now_ms) - T_ALL))) s
EOF
} | tee "$OUT/summary.txt"
