#!/bin/sh
# bench/controller_real.sh BUILD: submit-to-start with REAL processes
# (issue 3: p50/p99 for 10,000 jobs on 512 nodes running `sleep 0`; target
# p99 < 200 ms), section 3b of `make bench`.
#
# Each run starts one `xpool server` on a fresh data directory (fsync on,
# the defaults otherwise; no --cluster, so there are no emulated nodes) and
# BENCH_REAL_AGENTS (512) real `xpool agent` processes on this machine, one
# per node of examples/clusters/bench-512.yaml (a100-0..a100-255,
# v100-0..v100-255, in the order a100-0, v100-0, a100-1, ... so a smaller
# count keeps both shapes). Each agent gets a --devices file describing its
# node (one per node, generated from the cluster file: 64 cores, 512 GiB,
# 8 A100 or 32 cores, 256 GiB, 4 V100, with per-node device uuids), its own
# --work folder, --no-limits with --cgroup-root pointing at a folder that
# does not exist (no cgroup limits, on purpose: nothing outside the temp dir
# is touched; without --no-limits every task would be refused), --stop-tasks and
# the default heartbeat. Once every node is `ready`, BENCH_REAL_JOBS (10000)
# jobs of the peer's mix (command `sleep 0`, no duration) are submitted by
# xp_bench_submit from BENCH_REAL_CLIENTS (64) HTTP clients; it waits until
# none is pending or running and dumps every job object. Per job:
#   submit-to-bind   started_at - submitted_at (the controller's placement,
#                    what figure 3 of bench/controller.sh measures)
#   submit-to-start  mtime of the task's shim.pid - submitted_at: the shim
#                    writes shim.pid first thing after the agent forks it,
#                    then forks and execs the command (docs/design/agent.md)
#   submit-to-exit   mtime of the task's exit file - submitted_at (the shim
#                    writes it when `sleep 0` has ended)
#   submit-to-done   finished_at - submitted_at (the controller took the
#                    agent's exit report)
# All clocks are this machine's CLOCK_REALTIME; the controller stamps in
# milliseconds, the files in nanoseconds (truncated to ms here). Percentile
# = v[min(n-1, floor(p*n))], as bench_submit.c and the peer's
# jobcomp_stats.py. BENCH_RUNS (3) runs, each on fresh processes; figures
# are median (min..max) over the runs.
# The agents, the controller and the clients share the machine's cores.
# Every process started here is stopped by its PID on exit (agents first,
# SIGTERM: with --stop-tasks they end their tasks), and the temp dir is
# removed.
# Quick look: BENCH_RUNS=1 BENCH_REAL_AGENTS=16 BENCH_REAL_JOBS=500 ./bench/controller_real.sh build
set -eu
BUILD=${1:-build}
RUNS=${BENCH_RUNS:-3}
AGENTS=${BENCH_REAL_AGENTS:-512}
JOBS=${BENCH_REAL_JOBS:-10000}
CLIENTS=${BENCH_REAL_CLIENTS:-64}
READY_S=${BENCH_REAL_READY_SECONDS:-300}
CLUSTER=examples/clusters/bench-512.yaml
OUT=${BENCH_OUT:-out/bench}/controller_real
mkdir -p "$OUT"
AGENT_PIDS=""
stop_agents() {
	[ -n "$AGENT_PIDS" ] || return 0
	# shellcheck disable=SC2086
	kill -TERM $AGENT_PIDS 2>/dev/null || true
	for p in $AGENT_PIDS; do wait "$p" 2>/dev/null || true; done
	AGENT_PIDS=""
}
BENCH=controller_real BENCH_CLEANUP=stop_agents
. "$(dirname "$0")/benchlib.sh"

command -v jq >/dev/null || {
	echo "bench/controller_real.sh: needs jq (apt-get install jq)" >&2
	exit 1
}
bench_bins xpool xpoold bench/controller/xp_bench_submit
XP=$TMP/xpool
SUB=$TMP/xp_bench_submit
# agents, shims and the controller's connection threads: lift the soft limit
# shellcheck disable=SC3045
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

now_ms() { date +%s%3N; }
div() { awk -v a="$1" -v b="$2" -v d="$3" 'BEGIN { printf "%.*f", d, a / b }'; }
field() { printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
stat3() { sort -g "$1" 2>/dev/null | awk '{ v[NR] = $1 } END { if (!NR) { print "-"; exit }
	m = v[int((NR + 1) / 2)]; printf "%s (%s..%s)", m, v[1], v[NR] }'; }
load() { uptime | sed 's/.*load average: //'; }

# ---- one descriptor file per node, from the cluster file's two shapes ----
mkdir "$TMP/dev"
"$XP" cluster -f "$CLUSTER" -o json >"$TMP/cluster.json"
# "name count cpu memory_mib arch type vendor model devcount devmem_mib" per shape
jq -r '.nodes[] | [.name, (.count // 1), .cpu, .memory, (.arch // "x86_64"),
	(.devices[0].type), .devices[0].vendor, .devices[0].model, (.devices[0].count // 1),
	.devices[0].memory] | @tsv' "$TMP/cluster.json" >"$TMP/shapes.tsv"
while IFS="$(printf '\t')" read -r name count cpu mem arch type vendor model dc dmem; do
	i=0
	while [ "$i" -lt "$count" ]; do
		n=$name-$i
		{
			printf 'version: 1\nnodes:\n  - name: %s\n    cpu: %s\n    memory: %sMi\n    arch: %s\n    devices:\n' \
				"$n" "$cpu" "$mem" "$arch"
			d=0
			while [ "$d" -lt "$dc" ]; do
				printf '      - {type: %s, vendor: %s, model: %s, memory: %sMi, uuid: GPU-%s-%d}\n' \
					"$type" "$vendor" "$model" "$dmem" "$n" "$d"
				d=$((d + 1))
			done
		} >"$TMP/dev/$n.yaml"
		i=$((i + 1))
	done
done <"$TMP/shapes.tsv"
# interleave the shapes: a100-0 v100-0 a100-1 v100-1 ...
cut -f1,2 "$TMP/shapes.tsv" | while IFS="$(printf '\t')" read -r name count; do
	i=0
	while [ "$i" -lt "$count" ]; do
		echo "$i $name-$i"
		i=$((i + 1))
	done
done | sort -n -s -k1,1 | cut -d' ' -f2 | head -n "$AGENTS" >"$TMP/nodes.txt"
[ "$(wc -l <"$TMP/nodes.txt")" = "$AGENTS" ] || {
	echo "bench/controller_real.sh: $CLUSTER has fewer than $AGENTS nodes" >&2
	exit 1
}

start_server() {
	mkdir "$TMP/data"
	"$XP" server --data "$TMP/data" --listen 127.0.0.1:0 \
		>"$TMP/server.out" 2>"$TMP/server.err" &
	SERVER_PID=$!
	i=0
	until grep -q '^serving until interrupted' "$TMP/server.out" 2>/dev/null; do
		i=$((i + 1))
		if [ "$i" -gt 300 ] || ! kill -0 "$SERVER_PID" 2>/dev/null; then
			echo "bench/controller_real.sh: the server did not start:" >&2
			cat "$TMP/server.err" >&2
			exit 1
		fi
		sleep 0.1
	done
	ADDR=$(sed -n 's|^address: http://||p' "$TMP/server.out")
	XPOOL_ADDR=$ADDR
	XPOOL_TOKEN=$(cat "$TMP/data/admin.token")
	export XPOOL_ADDR XPOOL_TOKEN
}

start_agents() {
	mkdir "$TMP/work" "$TMP/log"
	while read -r n; do
		"$XP" agent --server "$ADDR" --token "$XPOOL_TOKEN" --node-name "$n" \
			--devices "$TMP/dev/$n.yaml" --work "$TMP/work/$n" \
			--cgroup-root "$TMP/no-cgroup" --no-limits --stop-tasks \
			>"$TMP/log/$n.out" 2>"$TMP/log/$n.err" &
		AGENT_PIDS="$AGENT_PIDS $!"
	done <"$TMP/nodes.txt"
}

# ready_nodes: how many nodes the controller lists as ready and not suspect
ready_nodes() {
	"$XP" nodes -o json 2>/dev/null | jq '[.nodes[] | select(.state == "ready" and
		(.suspect // false) == false)] | length' 2>/dev/null || echo 0
}

# pct FILE P: the P-quantile of a sorted file of integers
pct() { awk -v p="$2" '{ v[NR - 1] = $1 } END { i = int(p * NR); if (i > NR - 1) i = NR - 1; print v[i] }' "$1"; }

T_ALL=$(now_ms)
rm -f "$OUT"/*.txt "$OUT"/*.log
echo "== controller, real launch: 1 xpool server + $AGENTS xpool agent processes ($CLUSTER), $JOBS jobs (sleep 0) from $CLIENTS clients, $RUNS runs"
r=1
while [ "$r" -le "$RUNS" ]; do
	echo "   run $r: load before $(load)"
	T=$(now_ms)
	start_server
	start_agents
	i=0
	while :; do
		k=$(ready_nodes)
		[ "$k" -lt "$AGENTS" ] || break
		i=$((i + 1))
		[ "$i" -le $((READY_S * 2)) ] || {
			echo "bench/controller_real.sh: only $k of $AGENTS nodes ready after $READY_S s" >&2
			exit 1
		}
		sleep 0.5
	done
	TR=$(($(now_ms) - T))
	sleep 2 # let the agents' first watch and heartbeat settle
	echo "   run $r: $AGENTS agents ready after $(div "$TR" 1000 1) s; load now $(load)"
	cpu0=$(awk '{ printf "%.2f", ($14 + $15) / 100 }' "/proc/$SERVER_PID/stat")
	rc=0
	"$SUB" --addr "$ADDR" --token "$XPOOL_TOKEN" --clients "$CLIENTS" --jobs "$JOBS" \
		--duration "" --collect --dump "$TMP/jobs.txt" >"$OUT/run_$r.log" 2>"$OUT/run_$r.err" || rc=$?
	cpu1=$(awk '{ printf "%.2f", ($14 + $15) / 100 }' "/proc/$SERVER_PID/stat")
	s=$(grep '^submit' "$OUT/run_$r.log" || true)
	l=$(grep '^latency' "$OUT/run_$r.log" || true)
	echo "   run $r: $s"
	echo "   run $r: $l server_cpu_s=$(awk -v a="$cpu1" -v b="$cpu0" 'BEGIN { printf "%.2f", a - b }')"
	[ "$rc" = 0 ] || { echo "   run $r: xp_bench_submit exit status $rc:"; sed 's/^/      /' "$OUT/run_$r.err"; }
	# agent RSS, summed, while they are still up
	rss=0
	for p in $AGENT_PIDS; do
		v=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$p/status" 2>/dev/null || echo 0)
		rss=$((rss + ${v:-0}))
	done
	srss=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$SERVER_PID/status")
	sthr=$(sed -n 's/^Threads:[[:space:]]*//p' "/proc/$SERVER_PID/status")
	stop_agents
	stop_server
	# per task: job id, shim.pid and exit mtimes (ms)
	find "$TMP/work" -path '*/tasks/*' \( -name shim.pid -o -name exit \) -printf '%h %f %T@\n' |
		awk '{ n = split($1, d, "/"); split(d[n], k, "-"); split($3, t, ".");
			ms = sprintf("%s%s", t[1], substr(t[2] "000", 1, 3));
			if ($2 == "shim.pid") s[k[1]] = ms; else e[k[1]] = ms }
			END { for (j in s) print j, s[j], (j in e) ? e[j] : 0 }' | sort -n >"$TMP/tasks.txt"
	awk 'NR == FNR { s[$1] = $2; e[$1] = $3; next }
		{ print $0, ($1 in s) ? s[$1] : 0, ($1 in e) ? e[$1] : 0 }' \
		"$TMP/tasks.txt" "$TMP/jobs.txt" >"$TMP/joined.txt"
	# id sub start_ctl fin_ctl state shim exit
	awk '$3 > 0 { print $3 - $2 }' "$TMP/joined.txt" | sort -n >"$TMP/bind.txt"
	awk '$6 > 0 { print $6 - $2 }' "$TMP/joined.txt" | sort -n >"$TMP/start.txt"
	awk '$7 > 0 { print $7 - $2 }' "$TMP/joined.txt" | sort -n >"$TMP/exit.txt"
	awk '$4 > 0 { print $4 - $2 }' "$TMP/joined.txt" | sort -n >"$TMP/finish.txt"
	awk '$6 > 0 { print $6 - $3 }' "$TMP/joined.txt" | sort -n >"$TMP/launch.txt"
	nj=$(wc -l <"$TMP/jobs.txt")
	nt=$(wc -l <"$TMP/tasks.txt")
	nok=$(awk '$5 == "succeeded"' "$TMP/jobs.txt" | wc -l)
	nmulti=$(find "$TMP/work" -path '*/tasks/*' -name shim.pid | sed 's|.*/tasks/\([0-9]*\)-.*|\1|' | sort | uniq -d | wc -l)
	echo "   run $r: $nj jobs, $nok succeeded, $nt with a task folder ($nmulti with more than one); agents' RSS $((rss / 1024)) MiB in all, controller $((srss / 1024)) MiB, $sthr threads"
	for m in bind start exit finish launch; do
		f=$TMP/$m.txt
		[ -s "$f" ] || continue
		p50=$(pct "$f" 0.5)
		p90=$(pct "$f" 0.9)
		p99=$(pct "$f" 0.99)
		mx=$(tail -1 "$f")
		case $m in launch) what=bind-to-start ;; finish) what=submit-to-done ;; *) what=submit-to-$m ;; esac
		echo "   run $r: $what (ms) p50=$p50 p90=$p90 p99=$p99 max=$mx n=$(wc -l <"$f")"
		echo "$p50" >>"$OUT/${m}_p50.txt"
		echo "$p90" >>"$OUT/${m}_p90.txt"
		echo "$p99" >>"$OUT/${m}_p99.txt"
		echo "$mx" >>"$OUT/${m}_max.txt"
	done
	field jobs_per_s "$s" >>"$OUT/rate.txt"
	field all_done_s "$l" >>"$OUT/all_done.txt"
	echo "$TR" | awk '{ printf "%.1f\n", $1 / 1000 }' >>"$OUT/ready_s.txt"
	echo $((rss / 1024)) >>"$OUT/agents_rss.txt"
	cp "$TMP/joined.txt" "$OUT/jobs_$r.txt"
	rm -rf "$TMP/data" "$TMP/work" "$TMP/log" "$TMP/jobs.txt"
	r=$((r + 1))
done

cat <<EOF | tee "$OUT/summary.txt"
== real launch: median (min..max) of $RUNS runs; $AGENTS xpool agents, $JOBS jobs (sleep 0), $CLIENTS clients
all $AGENTS nodes ready after (s)                           $(stat3 "$OUT/ready_s.txt")
submit rate (jobs/s); all done after the first submit (s)    $(stat3 "$OUT/rate.txt"); $(stat3 "$OUT/all_done.txt")
submit-to-bind (controller started_at) p50/p90/p99/max ms   $(stat3 "$OUT/bind_p50.txt") / $(stat3 "$OUT/bind_p90.txt") / $(stat3 "$OUT/bind_p99.txt") / $(stat3 "$OUT/bind_max.txt")
submit-to-start (shim.pid written) p50/p90/p99/max ms       $(stat3 "$OUT/start_p50.txt") / $(stat3 "$OUT/start_p90.txt") / $(stat3 "$OUT/start_p99.txt") / $(stat3 "$OUT/start_max.txt")   target p99 < 200
bind-to-start (agent's share) p50/p90/p99/max ms            $(stat3 "$OUT/launch_p50.txt") / $(stat3 "$OUT/launch_p90.txt") / $(stat3 "$OUT/launch_p99.txt") / $(stat3 "$OUT/launch_max.txt")
submit-to-exit (exit file written) p50/p90/p99/max ms       $(stat3 "$OUT/exit_p50.txt") / $(stat3 "$OUT/exit_p90.txt") / $(stat3 "$OUT/exit_p99.txt") / $(stat3 "$OUT/exit_max.txt")
submit-to-done (controller finished_at) p50/p90/p99/max ms  $(stat3 "$OUT/finish_p50.txt") / $(stat3 "$OUT/finish_p90.txt") / $(stat3 "$OUT/finish_p99.txt") / $(stat3 "$OUT/finish_max.txt")
agents' RSS in all (MiB)                                    $(stat3 "$OUT/agents_rss.txt")
time: all $(div $(($(now_ms) - T_ALL)) 1000 1) s
EOF
