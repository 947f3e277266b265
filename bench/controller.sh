#!/bin/sh
# bench/controller.sh BUILD: the controller figures of `make bench`, the xpool
# side of the comparison with Slurm 22.05 (../shared/bench/slurm/README.md:
# same 512-node inventory, same job mix, one system at a time).
#
# Every run starts its own `xpool server` on a fresh data directory (fsync on,
# the defaults otherwise) with examples/clusters/bench-512.yaml registered as
# EMULATED nodes: no agent exists yet, so a job "runs" for its declared
# duration (0 here) and no process is started. Figures, each repeated
# BENCH_RUNS times (default 3), printed as median (min..max):
#   1. HTTP submit into a full cluster (two gang jobs hold every node, as the
#      peer's phase B): 1, 8 and 64 concurrent clients, durable acks (a 201
#      only once the submit is fsynced), BENCH_HTTP_JOBS jobs each (10000);
#      after the 64-client run the blockers are cancelled and the backlog
#      drains: when the last job started / finished, from the cancel.
#   2. Sequential CLI: BENCH_CLI_JOBS (1000) `xpool submit` processes, one per
#      job, like the peer's sequential sbatch (phase A); jobs run (emulated)
#      and finish; submit-to-start from the job objects.
#   3. Submit-to-start: BENCH_LAT_JOBS (10000) jobs from 64 HTTP clients on
#      the empty cluster, duration 0; p50/p90/p99/max from the job objects'
#      submitted_at / started_at (ms, the controller's clock).
#   4. One scheduling pass over 10000 pending jobs (xp_bench_pass, in
#      process): cluster held full, and right after it is released.
#   5. A long-lived server: BENCH_LONG_BATCHES (8) batches of 10000 jobs from
#      64 clients into ONE server, jobs run and finish; the rate and the
#      slowest ack per batch (one run: it shows a trend, not a median).
# The binaries are copied to a temp dir first (build/ may be rebuilt
# meanwhile); every process started here is stopped by its PID on exit.
# BENCH_FIGURES (default "1 2 3 4 5") selects figures: e.g. BENCH_FIGURES=2
# runs the sequential CLI alone (the rows of the others print "-").
# BENCH_SLURM=1 then runs the peer side (bench/controller_slurm.sh).
set -eu
BUILD=${1:-build}
RUNS=${BENCH_RUNS:-3}
HTTP_JOBS=${BENCH_HTTP_JOBS:-10000}
CLI_JOBS=${BENCH_CLI_JOBS:-1000}
LAT_JOBS=${BENCH_LAT_JOBS:-10000}
CLIENTS=${BENCH_CLIENTS:-1 8 64}
FIGURES=${BENCH_FIGURES:-1 2 3 4 5}
CLUSTER=examples/clusters/bench-512.yaml # the blockers below assume its two node shapes
OUT=${BENCH_OUT:-out/bench}/controller
mkdir -p "$OUT"
BENCH=controller BENCH_AFTER_STOP='rm -rf "$TMP/data"'
. "$(dirname "$0")/benchlib.sh"
bench_bins xpool xpoold bench/controller/xp_bench_submit bench/controller/xp_bench_pass
XP=$TMP/xpool
SUB=$TMP/xp_bench_submit
PASS=$TMP/xp_bench_pass

now_ms() { date +%s%3N; }
# want N: figure N is in BENCH_FIGURES
want() { case " $FIGURES " in *" $1 "*) return 0 ;; esac; return 1; }
# a / b with d decimals; a - b with 2
div() { awk -v a="$1" -v b="$2" -v d="$3" 'BEGIN { printf "%.*f", d, a / b }'; }
minus() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a - b }'; }
# CPU seconds (user + system) the server has used so far
server_cpu() { awk '{ printf "%.2f", ($14 + $15) / 100 }' "/proc/$SERVER_PID/stat"; }
# word KEY of a "key=value ..." line
field() { printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
# median (min..max) of the numbers in a file, one a line
stat3() { sort -g "$1" 2>/dev/null | awk '{ v[NR] = $1 } END { if (!NR) { print "-"; exit }
	m = v[int((NR + 1) / 2)]; printf "%s (%s..%s)", m, v[1], v[NR] }'; }

start_server() {
	mkdir "$TMP/data"
	"$XP" server --data "$TMP/data" --listen 127.0.0.1:0 --cluster "$CLUSTER" \
		>"$TMP/server.out" 2>"$TMP/server.err" &
	SERVER_PID=$!
	i=0
	until grep -q '^serving until interrupted' "$TMP/server.out" 2>/dev/null; do
		i=$((i + 1))
		if [ "$i" -gt 300 ] || ! kill -0 "$SERVER_PID" 2>/dev/null; then
			echo "bench/controller.sh: the server did not start:" >&2
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

# two gang jobs holding every a100 node and every v100 node whole (rule 5)
hold_cluster() {
	na=$(grep -A1 'name: a100' "$CLUSTER" | sed -n 's/.*count: //p')
	nv=$(grep -A1 'name: v100' "$CLUSTER" | sed -n 's/.*count: //p')
	BLOCK_A=$("$XP" submit -q --name blockA --replicas "$na" --cpu 64 --memory 512Gi \
		--gpus 8 --model A100 --duration 1h -- sleep 3600)
	BLOCK_V=$("$XP" submit -q --name blockV --replicas "$nv" --cpu 32 --memory 256Gi \
		--gpus 4 --model V100 --duration 1h -- sleep 3600)
	i=0
	while [ "$("$XP" job "$BLOCK_A" -o json | grep -c '"state": "running"')$("$XP" job "$BLOCK_V" -o json | grep -c '"state": "running"')" != 11 ]; do
		i=$((i + 1))
		[ "$i" -lt 100 ] || {
			echo "bench/controller.sh: the blockers did not start" >&2
			exit 1
		}
		sleep 0.1
	done
}

# the sbatch arguments of the peer's job mix, as xpool submit flags (row i mod 8)
mix_args() {
	case $(($1 % 8)) in
	0) echo "--cpu 1 --memory 1Gi" ;;
	1) echo "--cpu 4 --memory 4Gi --gpus 1 --model A100" ;;
	2) echo "--cpu 8 --memory 8Gi --gpus 2 --model A100" ;;
	3) echo "--cpu 16 --memory 16Gi --gpus 4 --model A100" ;;
	4) echo "--cpu 4 --memory 4Gi --gpus 1 --model V100" ;;
	5) echo "--cpu 8 --memory 8Gi --gpus 2 --model V100" ;;
	6) echo "--cpu 2 --memory 2Gi --gpus 1" ;;
	7) echo "--cpu 32 --memory 32Gi --gpus 8 --model A100" ;;
	esac
}

T_ALL=$(now_ms)
rm -f "$OUT"/*.txt
echo "== controller: xpool server, $("$XP" cluster -f "$CLUSTER" | sed -n 's/^\([0-9]*\) nodes.*/\1/p') emulated nodes ($CLUSTER), $RUNS runs per figure"
echo "   EMULATED launch: no agent exists yet; a job 'runs' for its duration (0), no process starts"
echo "   load before: $(uptime | sed 's/.*load average/load average/')"

# ---------------------------------------------------------------- 1 --
T=$(now_ms)
want 1 || CLIENTS=
for c in $CLIENTS; do
	r=1
	while [ "$r" -le "$RUNS" ]; do
		start_server
		hold_cluster
		cpu0=$(server_cpu)
		line=$("$SUB" --addr "$ADDR" --token "$XPOOL_TOKEN" --clients "$c" \
			--jobs "$HTTP_JOBS" --first 0)
		cpu1=$(server_cpu)
		echo "  [1] full cluster, $c clients, run $r: $line server_cpu_s=$(minus "$cpu1" "$cpu0")"
		echo "$line" >>"$OUT/http_full_c$c.log"
		field jobs_per_s "$line" >>"$OUT/http_full_c$c.txt"
		field ack_p50_ms "$line" >>"$OUT/http_full_c${c}_ack_p50.txt"
		field ack_p99_ms "$line" >>"$OUT/http_full_c${c}_ack_p99.txt"
		if [ "$c" = "${CLIENTS##* }" ]; then
			ids=$(field ids "$line")
			t0=$(now_ms)
			"$XP" cancel "$BLOCK_A" "$BLOCK_V" -o json >/dev/null
			d=$("$SUB" --addr "$ADDR" --token "$XPOOL_TOKEN" --collect-ids "$ids" \
				--t0-ms "$t0")
			echo "  [1] drain after releasing the blockers, run $r: $d"
			field all_started_s "$d" >>"$OUT/drain_started.txt"
			field all_done_s "$d" >>"$OUT/drain_done.txt"
		fi
		stop_server
		r=$((r + 1))
	done
done
T1=$(($(now_ms) - T))

# ---------------------------------------------------------------- 2 --
T=$(now_ms)
i=0
while [ "$i" -lt "$CLI_JOBS" ]; do
	mix_args "$i"
	i=$((i + 1))
done >"$TMP/cli.args"
r=1
want 2 || r=$((RUNS + 1))
while [ "$r" -le "$RUNS" ]; do
	start_server
	cpu0=$(server_cpu)
	t0=$(now_ms)
	# shellcheck disable=SC2086
	while read -r a; do "$XP" submit -q --duration 0 $a -- sleep 0; done <"$TMP/cli.args" >"$TMP/cli.ids"
	t1=$(now_ms)
	n=$(grep -c '^[0-9]' "$TMP/cli.ids" || true)
	[ "$n" = "$CLI_JOBS" ] || {
		echo "bench/controller.sh: only $n of $CLI_JOBS CLI submits succeeded" >&2
		exit 1
	}
	rate=$(div $((CLI_JOBS * 1000)) $((t1 - t0)) 1)
	l=$("$SUB" --addr "$ADDR" --token "$XPOOL_TOKEN" \
		--collect-ids "$(head -1 "$TMP/cli.ids")-$(tail -1 "$TMP/cli.ids")" --t0-ms "$t0")
	cpu1=$(server_cpu)
	echo "  [2] sequential CLI, run $r: $CLI_JOBS submits in $(div $((t1 - t0)) 1000 3) s, $rate jobs/s; $l server_cpu_s=$(minus "$cpu1" "$cpu0")"
	echo "$rate" >>"$OUT/cli_rate.txt"
	for k in p50_ms p90_ms p99_ms max_ms all_started_s all_done_s; do
		field "$k" "$l" >>"$OUT/cli_$k.txt"
	done
	stop_server
	r=$((r + 1))
done
T2=$(($(now_ms) - T))

# ---------------------------------------------------------------- 3 --
T=$(now_ms)
r=1
want 3 || r=$((RUNS + 1))
while [ "$r" -le "$RUNS" ]; do
	start_server
	cpu0=$(server_cpu)
	out=$("$SUB" --addr "$ADDR" --token "$XPOOL_TOKEN" --clients 64 --jobs "$LAT_JOBS" \
		--collect)
	cpu1=$(server_cpu)
	s=$(printf '%s\n' "$out" | grep '^submit')
	l=$(printf '%s\n' "$out" | grep '^latency')
	echo "  [3] $LAT_JOBS jobs, 64 clients, run $r: $s"
	echo "  [3]   $l server_cpu_s=$(minus "$cpu1" "$cpu0")"
	field jobs_per_s "$s" >>"$OUT/lat_rate.txt"
	field ack_p50_ms "$s" >>"$OUT/lat_ack_p50.txt"
	field ack_p99_ms "$s" >>"$OUT/lat_ack_p99.txt"
	field ack_max_ms "$s" >>"$OUT/lat_ack_max.txt"
	for k in p50_ms p90_ms p99_ms max_ms all_started_s all_done_s; do
		field "$k" "$l" >>"$OUT/lat_$k.txt"
	done
	stop_server
	r=$((r + 1))
done
T3=$(($(now_ms) - T))

# ---------------------------------------------------------------- 4 --
T=$(now_ms)
: >"$OUT/pass.log"
if want 4; then
	"$PASS" --cluster "$CLUSTER" --jobs 10000 --runs $((RUNS > 5 ? RUNS : 5)) | tee "$OUT/pass.log" |
		sed 's/^/  [4] /'
fi
T4=$(($(now_ms) - T))
held=$(grep '^pass_held' "$OUT/pass.log" || true)
T5=0
if want 5 && [ "${BENCH_LONG_BATCHES:-8}" -gt 0 ]; then
	T=$(now_ms)
	start_server
	b=0
	while [ "$b" -lt "${BENCH_LONG_BATCHES:-8}" ]; do
		line=$("$SUB" --addr "$ADDR" --token "$XPOOL_TOKEN" --clients 64 --jobs 10000 \
			--first $((b * 10000)))
		b=$((b + 1))
		echo "  [5] one server, batch $b ($((b * 10000)) jobs so far): $line"
		echo "$(field jobs_per_s "$line") $(field ack_max_ms "$line")" >>"$OUT/long.txt"
	done
	stop_server
	T5=$(($(now_ms) - T))
fi
rel=$(grep '^pass_release' "$OUT/pass.log" || true)

secs() { div "$1" 1000 1; }
cat <<EOF | tee "$OUT/summary.txt"
== controller figures (xpool; median (min..max) of $RUNS runs; EMULATED launch)
figure                                                      xpool
HTTP submit into a full cluster, 1 client (jobs/s)          $(stat3 "$OUT/http_full_c1.txt")
HTTP submit into a full cluster, 8 clients (jobs/s)         $(stat3 "$OUT/http_full_c8.txt")
HTTP submit into a full cluster, 64 clients (jobs/s)        $(stat3 "$OUT/http_full_c64.txt")   target >= 3500
  ack latency p50 / p99 at 64 clients (ms)                  $(stat3 "$OUT/http_full_c64_ack_p50.txt") / $(stat3 "$OUT/http_full_c64_ack_p99.txt")
drain of $HTTP_JOBS queued jobs after release: all started (s)   $(stat3 "$OUT/drain_started.txt")
drain of $HTTP_JOBS queued jobs after release: all done (s)      $(stat3 "$OUT/drain_done.txt")
sequential CLI, $CLI_JOBS xpool submit processes (jobs/s)      $(stat3 "$OUT/cli_rate.txt")
  all $CLI_JOBS started / done after the first submit (s)      $(stat3 "$OUT/cli_all_started_s.txt") / $(stat3 "$OUT/cli_all_done_s.txt")
  submit-to-start p50 / p90 / p99 / max (ms)                $(stat3 "$OUT/cli_p50_ms.txt") / $(stat3 "$OUT/cli_p90_ms.txt") / $(stat3 "$OUT/cli_p99_ms.txt") / $(stat3 "$OUT/cli_max_ms.txt")
submit-to-start, $LAT_JOBS jobs from 64 clients: p50 (ms)       $(stat3 "$OUT/lat_p50_ms.txt")
  p90 / p99 / max (ms)                                      $(stat3 "$OUT/lat_p90_ms.txt") / $(stat3 "$OUT/lat_p99_ms.txt") / $(stat3 "$OUT/lat_max_ms.txt")   target p99 < 200
  submit rate while jobs run (jobs/s); all done (s)         $(stat3 "$OUT/lat_rate.txt"); $(stat3 "$OUT/lat_all_done_s.txt")
  client ack p50 / p99 / max (ms)                           $(stat3 "$OUT/lat_ack_p50.txt") / $(stat3 "$OUT/lat_ack_p99.txt") / $(stat3 "$OUT/lat_ack_max.txt")
scheduling pass, 10000 pending, cluster held full (ms)      $(field median_ms "$held") ($(field min_ms "$held")..$(field max_ms "$held")), placed $(field placed "$held")
scheduling pass, 10000 pending, just released (ms)          $(field median_ms "$rel") ($(field min_ms "$rel")..$(field max_ms "$rel")), placed $(field placed "$rel")
one server, batches of 10000 (jobs/s, slowest ack ms)     $(awk '{ printf "%s%.0f/%.0f", (NR > 1 ? ", " : ""), $1, $2 }' "$OUT/long.txt" 2>/dev/null)
time: [1] $(secs $T1) s, [2] $(secs $T2) s, [3] $(secs $T3) s, [4] $(secs $T4) s, [5] $(secs $T5) s, all $(secs $(($(now_ms) - T_ALL))) s
EOF

if [ "${BENCH_SLURM:-0}" = 1 ]; then
	"$(dirname "$0")/controller_slurm.sh"
fi
