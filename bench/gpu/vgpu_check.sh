#!/bin/sh
# bench/gpu/vgpu_check.sh: libxpool-vgpu.so on a real NVIDIA GPU with
# PyTorch (issue 20, part 6). About 3 minutes; it only reads the GPU's
# settings (nvidia-smi --query-gpu), never changes them: no MIG mode, no
# clocks, no reset. Uses GPU 0 (CUDA_VISIBLE_DEVICES to pick another).
#   1. PyTorch under an 8 GiB cap allocates 64 MiB blocks until OOM: the
#      OOM point must be within 1 % of the cap, and torch.cuda.mem_get_info()
#      must show the cap as the total;
#   2. two processes at 300 and 700 milli run the same bf16 matmul loop for
#      SHARE_SECONDS (30): their throughput ratio must be within +-5 % of
#      3:7 (printed beside HAMi-core's published 21.4 / 25.2 it/s for 30 / 70);
#   3. the same with the loop captured in a CUDA graph (torch.cuda.graph);
#   4. an unlimited run with the library loaded against one without, the
#      same loop, median of 5 runs each, alternating: the throughput
#      difference (target < 1 %).
# Prints one line per check, PASS or FAIL, and exits 1 if any failed; the
# figures go in docs/results/vgpu.md.
# usage: bench/gpu/vgpu_check.sh [BUILD]
set -u
BUILD=$(cd "${1:-build}" && pwd)
LIB=$BUILD/libxpool-vgpu.so
PY=${PYTHON:-python3}
SHARE_SECONDS=${SHARE_SECONDS:-30}
[ -f "$LIB" ] || { echo "vgpu_check: $LIB missing (make build)"; exit 2; }
command -v nvidia-smi >/dev/null || { echo "vgpu_check: no nvidia-smi: not an NVIDIA machine"; exit 2; }
"$PY" -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null ||
	{ echo "vgpu_check: PyTorch with CUDA is not available to $PY"; exit 2; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
echo "== $(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader -i 0)"
echo "== $("$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)')"

cat >"$T/alloc.py" <<'EOF'
import torch
free, total = torch.cuda.mem_get_info()
blocks = []
try:
    while True:
        blocks.append(torch.empty(64 << 20, dtype=torch.uint8, device="cuda"))
except torch.cuda.OutOfMemoryError:
    pass
print(f"total {total} oom_at {torch.cuda.memory_reserved()}")
EOF

cat >"$T/loop.py" <<'EOF'
import sys, time, torch
secs, graph = float(sys.argv[1]), sys.argv[2] == "graph"
a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
def step():
    for _ in range(8):
        torch.mm(a, b, out=c)
c = torch.empty_like(a)
if graph:
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        step()
    run = g.replay
else:
    run = step
for _ in range(5):
    run()
torch.cuda.synchronize()
n, t0 = 0, time.monotonic()
while time.monotonic() - t0 < secs:
    run()
    n += 1
    if n % 16 == 0:
        torch.cuda.synchronize()
torch.cuda.synchronize()
print(f"its {n / (time.monotonic() - t0):.3f}")
EOF

limited() { # limited ACCOUNT MILLI MEM_MIB CMD...: run under the library
	acct=$1 milli=$2 mem=$3
	shift 3
	env LD_PRELOAD="$LIB" XPOOL_VGPU_ACCOUNT="$acct" ${milli:+XPOOL_VGPU_COMPUTE_MILLI=$milli} \
		${mem:+XPOOL_VGPU_MEMORY_MIB=$mem} "$@"
}
verdict() { # verdict OK TEXT
	if [ "$1" = 1 ]; then echo "PASS $2"; else echo "FAIL $2"; fails=$((fails + 1)); fi
}

# 1. memory cap
limited "$T/acct1" "" 8192 "$PY" "$T/alloc.py" >"$T/alloc.out" 2>&1
# shellcheck disable=SC2046
set -- $(sed -n 's/^total \([0-9]*\) oom_at \([0-9]*\)/\1 \2/p' "$T/alloc.out")
if [ $# -eq 2 ]; then
	ok=$(awk -v t="$1" -v o="$2" 'BEGIN { c = 8192 * 1048576; e = (o - c) / c;
		print (t == c && e <= 0 && e > -0.01) ? 1 : 0 }')
	verdict "$ok" "1. 8 GiB cap: mem_get_info total $1 bytes (cap $((8192 * 1048576))), OOM at $2 bytes ($(awk -v o="$2" 'BEGIN { printf "%.2f%%", 100 * (o - 8192 * 1048576) / (8192 * 1048576) }') from the cap)"
else
	verdict 0 "1. 8 GiB cap: $(tail -3 "$T/alloc.out")"
fi

share() { # share MODE: 300 and 700 milli at once
	limited "$T/acct-a-$1" 300 "" "$PY" "$T/loop.py" "$SHARE_SECONDS" "$1" >"$T/a.out" 2>&1 &
	pa=$!
	limited "$T/acct-b-$1" 700 "" "$PY" "$T/loop.py" "$SHARE_SECONDS" "$1" >"$T/b.out" 2>&1 &
	pb=$!
	wait "$pa" "$pb"
	a=$(sed -n 's/^its //p' "$T/a.out")
	b=$(sed -n 's/^its //p' "$T/b.out")
	if [ -z "$a" ] || [ -z "$b" ]; then
		verdict 0 "$2. 300/700 $1: $(tail -2 "$T/a.out" "$T/b.out")"
		return
	fi
	ok=$(awk -v a="$a" -v b="$b" 'BEGIN { r = a / b; w = 3 / 7; print (r >= w * 0.95 && r <= w * 1.05) ? 1 : 0 }')
	verdict "$ok" "$2. 300/700 $1: $a / $b it/s, ratio $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", a / b }') (3:7 = 0.429, +-5 %); HAMi-core (HAMi-core#314): 21.4 / 25.2 it/s"
}
share eager 2
share graph 3

# 4. unlimited: the library loaded, no limit, against no library
: >"$T/with"
: >"$T/without"
for _ in 1 2 3 4 5; do
	"$PY" "$T/loop.py" 8 eager | sed -n 's/^its //p' >>"$T/without"
	LD_PRELOAD="$LIB" "$PY" "$T/loop.py" 8 eager | sed -n 's/^its //p' >>"$T/with"
done
w=$(sort -n "$T/with" | sed -n 3p)
wo=$(sort -n "$T/without" | sed -n 3p)
ok=$(awk -v w="$w" -v o="$wo" 'BEGIN { d = (o - w) / o; print (d < 0.01 && d > -0.01) ? 1 : 0 }')
verdict "$ok" "4. no limit: $w it/s with the library, $wo without (median of 5; $(awk -v w="$w" -v o="$wo" 'BEGIN { printf "%+.2f%%", 100 * (w - o) / o }'))"
[ "$fails" -eq 0 ]
