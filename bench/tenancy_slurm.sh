#!/bin/sh
# bench/tenancy_slurm.sh: the multi-tenant job mix side by side, xpool's
# controller and Slurm 22.05 (multifactor priority, backfill) on the
# 512-node inventory of ../shared/bench/slurm (issue 5 §8; the figures are
# in docs/results/tenancy.md).
#
#   bench/tenancy_slurm.sh [BUILD_DIR]      default build; systems: xpool slurm
#
# The trace is `xpool sim tenants`'s generator (src/sim/tenants.c) sized
# for 3072 GPUs, time divided by BENCH_MIX_SCALE (30: an hour of the trace
# is two minutes of the run). xp_bench_replay submits each job at its
# arrival time with one client process per job (`xpool submit`, `sbatch`);
# jobs then really wait and run: Slurm starts `sleep D` through slurmd and
# slurmstepd, xpool's emulated nodes run them for D. After the last arrival
# the script waits until every job has started (at most BENCH_MIX_WAIT
# seconds), then cancels what remains and reads each scheduler's own
# records. One system at a time, Slurm torn down before xpool runs.
#
# xpool: queues t0..t3 guaranteed 40/30/20/10 % of the GPUs, weights
# 4..1, borrowing, reclaim preemption (the simulator's `xpool` set-up),
# stock settings otherwise. Slurm: the peer's set-up as it is (stock
# SchedulerParameters unless SLURM_BENCH_SCHED_PARAMS is set; priority
# /multifactor with only the job-size weight, since fair share and QOS
# need slurmdbd, which the peer has not), job priority through --nice.
#
# Env: BENCH_MIX_JOBS (1500), BENCH_MIX_LOAD (1.2), BENCH_MIX_SEED (1),
# BENCH_MIX_SCALE (30), BENCH_MIX_WAIT (900), BENCH_MIX_SYSTEMS
# ("xpool slurm"), SLURM_PEER (../shared/bench/slurm), BENCH_OUT (out/bench).
set -eu
BUILD=${1:-build}
PEER=${SLURM_PEER:-../shared/bench/slurm}
OUT=${BENCH_OUT:-out/bench}/tenancy
MIX="--jobs ${BENCH_MIX_JOBS:-1500} --load ${BENCH_MIX_LOAD:-1.2} --seed ${BENCH_MIX_SEED:-1} --scale ${BENCH_MIX_SCALE:-30}"
WAIT=${BENCH_MIX_WAIT:-900}
SYSTEMS=${BENCH_MIX_SYSTEMS:-xpool slurm}
REPLAY=$BUILD/bench/tenancy/xp_bench_replay
XP=$(cd "$BUILD" && pwd)/xpool
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
[ -x "$REPLAY" ] || { echo "tenancy_slurm: no $REPLAY (build first)" >&2; exit 1; }
# shellcheck disable=SC2086
"$REPLAY" trace $MIX >"$OUT/trace.tsv"
echo "== tenancy side by side: $(head -1 "$OUT/trace.tsv" | sed 's/^# //')"

SPID=
DATA=
slurm_up=0
cleanup() {
	if [ -n "$SPID" ] && [ "$(cat /proc/"$SPID"/comm 2>/dev/null)" = xpoold ]; then
		kill "$SPID" 2>/dev/null || true
		wait "$SPID" 2>/dev/null || true
	fi
	[ -n "$DATA" ] && rm -rf "$DATA"
	if [ "$slurm_up" = 1 ]; then
		"$PEER/teardown.sh" --purge >>"$OUT/slurm-teardown.log" 2>&1 || true
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_started CMD: until CMD prints 0 (jobs not yet started), at most WAIT s
wait_started() {
	i=0
	while :; do
		left=$("$@" 2>/dev/null || echo '?')
		[ "$left" = 0 ] && return 0
		i=$((i + 5))
		if [ "$i" -gt "$WAIT" ]; then
			echo "   $left jobs still pending after ${WAIT}s: cancelled, counted as unstarted"
			return 0
		fi
		sleep 5
	done
}

run_xpool() {
	echo "-- xpool ($XP), load before: $(uptime | sed 's/.*load average: //')"
	DATA=$(mktemp -d /tmp/xpbench-tenancy.XXXXXX)
	PORT=$((20000 + $$ % 20000))
	"$XP" server --data "$DATA" --listen "127.0.0.1:$PORT" \
		--cluster examples/clusters/bench-512.yaml >"$OUT/xpool-server.log" 2>&1 &
	SPID=$!
	export XPOOL_ADDR="http://127.0.0.1:$PORT"
	i=0
	until [ -s "$DATA/admin.token" ] && "$XP" queues >/dev/null 2>&1 \
		--token "$(cat "$DATA/admin.token")"; do
		i=$((i + 1))
		[ "$i" -le 100 ] || { echo "xpool server did not start" >&2; exit 1; }
		sleep 0.1
	done
	XPOOL_TOKEN=$(cat "$DATA/admin.token")
	export XPOOL_TOKEN
	t=0
	for share in 1228.8 921.6 614.4 307.2; do
		"$XP" tenant create "t$t" >/dev/null
		"$XP" queue create "t$t" --weight $((4 - t)) --preempt reclaim \
			--guarantee "gpu=$share" >/dev/null
		t=$((t + 1))
	done
	# shellcheck disable=SC2086
	"$REPLAY" replay $MIX --system xpool --xpool "$XP" --t0-file "$OUT/xpool.t0"
	pending() { "$XP" jobs --state pending --all -o json | grep -c '"id"' || true; }
	wait_started pending
	"$XP" jobs --all -o json >"$OUT/xpool-jobs.json"
	"$XP" events -o json >"$OUT/xpool-events.json"
	kill "$SPID"
	wait "$SPID" 2>/dev/null || true
	SPID=
	rm -rf "$DATA"
	DATA=
	# shellcheck disable=SC2086
	"$REPLAY" stats $MIX --t0-file "$OUT/xpool.t0" --jobs-json "$OUT/xpool-jobs.json" \
		--events "$OUT/xpool-events.json" | tee "$OUT/xpool-stats.txt"
}

run_slurm() {
	PEER=$(cd "$PEER" 2>/dev/null && pwd) || { echo "-- slurm: no peer at ${SLURM_PEER:-../shared/bench/slurm}, skipped"; return 0; }
	echo "-- slurm (peer $PEER, SchedulerParameters=${SLURM_BENCH_SCHED_PARAMS:-stock}), load before: $(uptime | sed 's/.*load average: //')"
	slurm_up=1
	SLURM_BENCH_NODES=512 "$PEER/setup.sh" >"$OUT/slurm-setup.log" 2>&1 || {
		tail -20 "$OUT/slurm-setup.log" >&2
		exit 1
	}
	# shellcheck disable=SC1091
	. /tmp/xpool-slurm-peer/run/env.sh
	JC=/tmp/xpool-slurm-peer/run/log/jobcomp.txt
	: >"$JC"
	# shellcheck disable=SC2086
	"$REPLAY" replay $MIX --system slurm --t0-file "$OUT/slurm.t0"
	pending() { squeue -h -t PD | wc -l; }
	wait_started pending
	scancel --user=root >/dev/null 2>&1 || true
	i=0
	while [ "$(squeue -h | wc -l)" -gt 0 ] && [ "$i" -lt 120 ]; do
		sleep 1
		i=$((i + 1))
	done
	cp "$JC" "$OUT/slurm-jobcomp.txt"
	"$PEER/teardown.sh" --purge >>"$OUT/slurm-teardown.log" 2>&1
	slurm_up=0
	# shellcheck disable=SC2086
	"$REPLAY" stats $MIX --t0-file "$OUT/slurm.t0" --slurm "$OUT/slurm-jobcomp.txt" |
		tee "$OUT/slurm-stats.txt"
}

for s in $SYSTEMS; do
	case $s in
	xpool) run_xpool ;;
	slurm) run_slurm ;;
	*) echo "tenancy_slurm: unknown system '$s'" >&2; exit 2 ;;
	esac
done
