#!/bin/sh
# The live controller's cycle under `--optimise mcts --budget B` against
# greedy xpool (docs/results/mcts.md, "The live controller"):
#   bench/mcts_server.sh [build] [JOBS]
# For each set-up (greedy xpool; mcts --budget 10ms; mcts --budget 16) a
# fresh `xpool dev --no-agent --no-sync` on the 512 emulated nodes of
# examples/clusters/bench-512.yaml (3,072 GPUs); 4 clients submit JOBS
# jobs (default 4000: 1, 2, 4 or 8 GPUs or half of one, 2-20 s each, so a
# queue builds); when every job has ended, /metrics gives the cycle calls'
# time (xpool_scheduling_cycle_seconds: calls, mean, the bucket that holds
# the slowest), submit-to-start (mean), and the search's counters.
set -eu
B=${1:-build}
N=${2:-4000}
XP=$B/xpool
T=$(mktemp -d)
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
trap 'exit 1' INT TERM
HOME=$T/home
export HOME
unset XPOOL_ADDR XPOOL_TOKEN

until_ok() { # SECS CMD...: a wall deadline
	end=$(($(date +%s) + $1))
	shift
	until "$@"; do
		[ "$(date +%s)" -lt "$end" ] || return 1
		sleep 0.2
	done
}
metric() { awk -v k="$1" '$1 == k { print $2 }' "$T/metrics"; }
scrape() { curl -fsS -H "Authorization: Bearer $XPOOL_TOKEN" "$XPOOL_ADDR/metrics" >"$T/metrics"; }
idle() { # every job ended
	scrape || return 1
	[ "$(metric 'xpool_jobs{state="pending"}')" = 0 ] &&
		[ "$(metric 'xpool_jobs{state="running"}')" = 0 ] &&
		[ "$(metric 'xpool_jobs{state="succeeded"}')" = "$N" ]
}
client() { # $1: which of 4
	i=$1
	while [ "$i" -lt "$N" ]; do
		case $((i % 5)) in
		0) g="--gpus 1" ;; 1) g="--gpus 2" ;; 2) g="--gpus 4" ;; 3) g="--gpus 8" ;;
		*) g="--fraction 0.5" ;;
		esac
		"$XP" submit $g --cpu 1 --memory 1Gi --duration "$((2 + (i * 7) % 19))s" >/dev/null
		i=$((i + 4))
	done
}

run() { # NAME FLAGS...
	name=$1
	shift
	rm -rf "$T/data"
	"$XP" dev --data "$T/data" --listen 127.0.0.1:0 --no-agent --no-sync \
		--cluster examples/clusters/bench-512.yaml "$@" >"$T/dev.out" 2>"$T/dev.err" &
	PID=$!
	until_ok 60 grep -q '^admin token:' "$T/dev.out" || { cat "$T/dev.err"; exit 1; }
	XPOOL_ADDR=$(sed -n 's/^address: *//p' "$T/dev.out" | head -n 1)
	XPOOL_TOKEN=$(sed -n 's/^admin token: *//p' "$T/dev.out" | head -n 1)
	export XPOOL_ADDR XPOOL_TOKEN
	until_ok 60 "$XP" queues >/dev/null 2>&1
	t0=$(date +%s)
	pids=
	for c in 0 1 2 3; do
		client "$c" &
		pids="$pids $!"
	done
	for p in $pids; do wait "$p"; done
	until_ok 600 idle || { echo "$name: jobs did not all end in 600 s"; exit 1; }
	t1=$(date +%s)
	awk -v name="$name" -v wall=$((t1 - t0)) '
	/^xpool_scheduling_cycle_seconds_bucket/ {
		split($1, a, "\""); le = a[2]; c = $2
		if (c > prev) top = le; prev = c
	}
	$1 == "xpool_scheduling_cycle_seconds_count" { calls = $2 }
	$1 == "xpool_scheduling_cycle_seconds_sum" { sum = $2 }
	$1 == "xpool_schedule_latency_seconds_count" { lc = $2 }
	$1 == "xpool_schedule_latency_seconds_sum" { ls = $2 }
	$1 == "xpool_search_batches_total" { b = $2 }
	$1 == "xpool_search_jobs_total" { j = $2 }
	$1 == "xpool_search_rollouts_total" { r = $2 }
	$1 == "xpool_search_budget_rollouts" { g = $2 }
	END {
		printf "| %s | %d | %.2f | <= %s | %.2f | %s | %s | %s | %s | %d |\n", name, calls,
		       1000 * sum / calls, top, ls / lc, b + 0, j + 0, r + 0, g + 0, wall
	}' "$T/metrics"
	kill "$PID"
	wait "$PID" 2>/dev/null || true
	PID=
}
echo "| set-up | cycle calls | mean ms per call | slowest call in bucket (s) | submit-to-start mean (s) | searches | jobs searched | rollouts | rollouts per search at the end | wall s |"
echo "|---|---|---|---|---|---|---|---|---|---|"
run "xpool (greedy)" --policy xpool
run "mcts --budget 10ms" --optimise mcts --budget 10ms
run "mcts --budget 16" --optimise mcts --budget 16
