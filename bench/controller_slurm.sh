#!/bin/sh
# bench/controller_slurm.sh: the Slurm 22.05 side of the controller
# figures, run the peer's way (../shared/bench/slurm/README.md) and printed
# under the names bench/controller.sh uses. Not part of `make bench` by
# default: it installs Debian's Slurm packages on first use and takes about
# 6 minutes a run. `BENCH_SLURM=1 make bench` runs it after the xpool side;
# alone: `bench/controller_slurm.sh`.
#
#   SLURM_BENCH_NODES=512 setup.sh; bench.sh N M; teardown.sh --purge
#
# Phase A (N jobs, sequential sbatch, each job really runs /bin/sh + sleep 0
# through slurmd and slurmstepd) and phase B (two blockers hold every node,
# M jobs queue, sdiag over 65 s, then the blockers are cancelled and the
# backlog drains). Stock scheduler settings unless SLURM_BENCH_SCHED_PARAMS
# is set. The peer's results folder is copied to BENCH_OUT/controller/.
# Env: SLURM_PEER (default ../shared/bench/slurm), SLURM_BENCH_NODES (512),
# BENCH_SLURM_N / BENCH_SLURM_M (1000 / 1000), BENCH_SLURM_RUNS (1).
set -eu
PEER=${SLURM_PEER:-../shared/bench/slurm}
NODES=${SLURM_BENCH_NODES:-512}
N=${BENCH_SLURM_N:-1000}
M=${BENCH_SLURM_M:-1000}
RUNS=${BENCH_SLURM_RUNS:-1}
OUT=${BENCH_OUT:-out/bench}/controller
ROOT=/tmp/xpool-slurm-peer
mkdir -p "$OUT"
PEER=$(cd "$PEER" && pwd)
[ -x "$PEER/bench.sh" ] || {
	echo "bench/controller_slurm.sh: no Slurm peer at $PEER (set SLURM_PEER)" >&2
	exit 1
}
made_root=0
[ -e "$ROOT" ] || made_root=1
cleanup() {
	"$PEER/teardown.sh" --purge >>"$OUT/slurm-teardown.log" 2>&1 || true
	if [ "$made_root" = 1 ]; then rm -rf "$ROOT"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now_ms() { date +%s%3N; }
secs() { awk -v a="$1" 'BEGIN { printf "%.1f", a / 1000 }'; }
# the value of KEY in summary.txt ("KEY=value" words or "KEY: value" lines)
get() { tr ' ' '\n' <"$1" | sed -n "s/^$2=//p" | head -1; }
sdiag_s() { # sdiag's microseconds as seconds
	sed -n "s/^$2:[[:space:]]*//p" "$1" | head -1 | awk '{ printf "%.4f", $1 / 1e6 }'
}
sdiag_v() { sed -n "s/^$2:[[:space:]]*//p" "$1" | head -1; }

r=1
while [ "$r" -le "$RUNS" ]; do
	echo "== controller: Slurm $(sinfo -V 2>/dev/null || echo 22.05) peer, $NODES nodes (real sleep 0 per job), run $r of $RUNS"
	echo "   load before: $(uptime | sed 's/.*load average/load average/')"
	T=$(now_ms)
	SLURM_BENCH_NODES=$NODES "$PEER/setup.sh" >"$OUT/slurm-setup.log" 2>&1 || {
		tail -20 "$OUT/slurm-setup.log" >&2
		exit 1
	}
	TS=$(($(now_ms) - T))
	echo "   setup: $(secs $TS) s (log: $OUT/slurm-setup.log); load now: $(uptime | sed 's/.*load average: //')"
	RES=$ROOT/results/xpool-bench-$(date -u +%Y%m%dT%H%M%SZ)
	T=$(now_ms)
	SLURM_BENCH_OUT=$RES "$PEER/bench.sh" "$N" "$M" >"$OUT/slurm-bench.log" 2>&1 || {
		tail -20 "$OUT/slurm-bench.log" >&2
		exit 1
	}
	TB=$(($(now_ms) - T))
	T=$(now_ms)
	"$PEER/teardown.sh" >>"$OUT/slurm-teardown.log" 2>&1
	TT=$(($(now_ms) - T))
	dest=$OUT/slurm-$(basename "$RES")
	rm -rf "$dest"
	cp -r "$RES" "$dest"
	S=$dest/summary.txt
	# sdiag lines as "B.queued.sdiag.main.Mean cycle: 2800"
	sed -n 's/^B\.queued\.sdiag\.//p' "$S" >"$dest/queued-sdiag.txt"
	Q=$dest/queued-sdiag.txt
	cat <<EOF | tee -a "$OUT/slurm-summary.txt"
== controller figures (Slurm, run $r; jobcomp times have 1 s resolution)
figure                                                      slurm
submit into a full cluster, 1 client, sbatch (jobs/s)       $(get "$S" B.submit_jobs_per_s)   ($M jobs, $(get "$S" B.submit_s) s)
drain of $M queued jobs after release: all started (s)      $(get "$S" B.drain_all_started_s)
drain of $M queued jobs after release: all done (s)         $(get "$S" B.drain_all_done_s)
sequential CLI, $N sbatch processes (jobs/s)                $(get "$S" A.submit_jobs_per_s)   ($(get "$S" A.submit_s) s)
  all $N started / done after the first submit (s)          $(get "$S" A.all_started_s) / $(get "$S" A.all_done_s)
  submit-to-start p50 / p90 / max (s)                       $(get "$S" A.submit_to_start_p50_s) / $(get "$S" submit_to_start_p90_s) / $(get "$S" submit_to_start_max_s)
scheduling pass, $M pending, cluster held full: main (s)    max $(sdiag_s "$Q" "main.Max cycle"), mean $(sdiag_s "$Q" "main.Mean cycle")  ($(sdiag_v "$Q" "main.Total cycles") cycles, mean depth $(sdiag_v "$Q" "main.Mean depth cycle"); the periodic pass walks all $M)
scheduling pass, $M pending, cluster held full: backfill (s) mean $(sdiag_s "$Q" "backfill.Mean cycle"), max $(sdiag_s "$Q" "backfill.Max cycle")  ($(sdiag_v "$Q" "backfill.Total cycles") cycles, depth $(sdiag_v "$Q" "backfill.Last depth cycle") = bf_max_job_test)
time: setup $(secs $TS) s, bench $(secs $TB) s, teardown $(secs $TT) s; results $dest
EOF
	r=$((r + 1))
done
