#!/bin/sh
# bench/vgpu.sh: the vGPU interposer's figures against the fake driver
# (tests/fakelibs/fake_cuda.c), no GPU needed (docs/results/vgpu.md):
#   1. per-launch cost on the host, CPU ns (wall time on a shared machine
#      is mostly preemption), median of RUNS rounds of N launches: the fake driver alone, with libxpool-vgpu.so preloaded and
#      no limit, and under a 300-milli share; the interposer's overhead is
#      the difference (target < 1 us);
#   2. the compute-share error of two greedy jobs sharing one simulated GPU
#      for 10 s of simulated device time, at 300/700 and 100/900 milli,
#      eager launches and CUDA-graph launches, with kernel times exact and
#      varying +-20 % and +-50 % around their mean (FAKE_CUDA_JITTER).
# The fake driver's own launch (a process-shared mutex, the simulated
# queue) is in every figure of 1; a real driver's launch costs more, so
# the difference, not the total, is what carries over.
# usage: bench/vgpu.sh BUILD
set -eu
BUILD=$(cd "${1:-build}" && pwd)
APP=$BUILD/xp-vgpu-app
LIB=$BUILD/libxpool-vgpu.so
RUNS=${RUNS:-5}
N=${VGPU_LAUNCHES:-2000000}
if [ ! -x "$APP" ] || [ ! -f "$LIB" ]; then
	echo "vgpu: $APP or $LIB is missing (make build)"
	exit 1
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export LD_LIBRARY_PATH="$BUILD/fakecuda" ASAN_OPTIONS=verify_asan_link_order=0

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

one() { # one ENV...: CPU ns per launch of one run
	rm -f "$T/acct"
	env "$@" "$APP" bench "$N" | sed -n 's/^ns_per_launch //p'
}

echo "-- per-launch cost, CPU ns, median of $RUNS rounds of $N launches (the four in turn)"
: >"$T/base"
: >"$T/free"
: >"$T/lim"
: >"$T/brd"
i=1
while [ "$i" -le "$RUNS" ]; do
	one VGPU_APP_NONE=1 >>"$T/base"
	one LD_PRELOAD="$LIB" >>"$T/free"
	one LD_PRELOAD="$LIB" XPOOL_VGPU_ACCOUNT="$T/acct" XPOOL_VGPU_COMPUTE_MILLI=300 \
		XPOOL_VGPU_MEMORY_MIB=8192 >>"$T/lim"
	rm -f "$T/board" # as the agent runs it: with the GPU's board (priority)
	one LD_PRELOAD="$LIB" XPOOL_VGPU_ACCOUNT="$T/acct" XPOOL_VGPU_COMPUTE_MILLI=300 \
		XPOOL_VGPU_MEMORY_MIB=8192 XPOOL_VGPU_BOARD="$T/board" XPOOL_VGPU_PRIORITY=5 >>"$T/brd"
	i=$((i + 1))
done
base=$(median <"$T/base")
free=$(median <"$T/free")
lim=$(median <"$T/lim")
brd=$(median <"$T/brd")
awk -v b="$base" -v f="$free" -v l="$lim" -v p="$brd" 'BEGIN {
	printf "fake driver alone:                 %7.1f ns/launch\n", b
	printf "interposer, no limit:              %7.1f ns/launch (overhead %+.1f ns)\n", f, f - b
	printf "interposer, 300 milli + 8 GiB cap: %7.1f ns/launch (overhead %+.1f ns)\n", l, l - b
	printf "  the same on the GPU'"'"'s board:      %7.1f ns/launch (overhead %+.1f ns)\n", p, p - b
	printf "target: overhead < 1000 ns per launch\n" }'

share() { # share M1 M2 MODE: two greedy jobs, 10 s simulated
	rm -f "$T/gpu" "$T/a1" "$T/a2"
	for k in 1 2; do
		m=$1
		[ "$k" = 1 ] || m=$2
		env LD_PRELOAD="$LIB" XPOOL_VGPU_ACCOUNT="$T/a$k" XPOOL_VGPU_COMPUTE_MILLI="$m" \
			FAKE_CUDA_STATE="$T/gpu" FAKE_CUDA_PARTIES=2 FAKE_CUDA_HORIZON_MS=10000 \
			FAKE_CUDA_JITTER="${4:-0}" \
			"$APP" run 10 264 500 "$3" >"$T/out$k" &
		pids="${pids:-} $!"
	done
	# shellcheck disable=SC2086
	wait $pids
	pids=
	b1=$(sed -n 's/^busy_ns \([0-9]*\).*/\1/p' "$T/out1")
	b2=$(sed -n 's/^busy_ns \([0-9]*\).*/\1/p' "$T/out2")
	awk -v m1="$1" -v m2="$2" -v b1="$b1" -v b2="$b2" -v mode="$3" -v j="${4:-0}" 'BEGIN {
		s1 = b1 / 1e8; s2 = b2 / 1e8
		printf "%4d/%-4d milli, %-5s, kernel times +-%2d%%: %5.2f%% / %5.2f%% of the GPU (errors %+.2f / %+.2f points)\n",
			m1, m2, mode, j, s1, s2, s1 - m1 / 10, s2 - m2 / 10 }'
}

echo "-- compute share: two greedy jobs on one simulated GPU (132 SMs), 10 s simulated"
for pair in "300 700" "100 900"; do
	for mode in eager graph; do
		for jitter in 0 20 50; do
			# shellcheck disable=SC2086
			share $pair "$mode" "$jitter"
		done
	done
done
echo "target: within 3 points of the share"
