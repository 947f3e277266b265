#!/bin/sh
# bench/tls.sh: what TLS costs on the request path, plain HTTP beside TLS
# in the same run (docs/design/tls.md, "Cost").
#   - durable submits/s: xp_bench_submit, BENCH_TLS_CLIENTS (16) kept-alive
#     clients, BENCH_TLS_JOBS (2000) jobs per run, to an `xpool server`
#     on http:// and to one on https:// (same flags, fsync on), runs
#     alternating; the median of BENCH_RUNS (3) each, and the ratio; and
#     the server's CPU (user + system) per submit, which a machine shared
#     with other work disturbs less than the rate;
#   - one CLI call (`xpool queues`, a new process and connection: a
#     full TLS handshake and GnuTLS loaded): the median wall time of 20
#     calls each.
# Not part of `make bench`: it runs in about a minute on 2 cores.
# usage: bench/tls.sh [BUILD]
set -eu
BUILD=${1:-build}
RUNS=${BENCH_RUNS:-3}
CLIENTS=${BENCH_TLS_CLIENTS:-16}
JOBS=${BENCH_TLS_JOBS:-2000}
XP=$BUILD/xpool
SUB=$BUILD/bench/controller/xp_bench_submit
CERTS=$BUILD/xp-tls-certs
for f in "$XP" "$SUB" "$CERTS"; do
	[ -x "$f" ] || { echo "bench/tls.sh: $f is missing: run make first" >&2; exit 1; }
done
TMP=$(mktemp -d)
PIDS=""
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$CERTS" ca "$TMP/ca.pem" "$TMP/ca.key" "bench CA"
"$CERTS" cert "$TMP/ca.pem" "$TMP/ca.key" "$TMP/srv.pem" "$TMP/srv.key" 127.0.0.1 localhost

# start NAME [FLAGS]: an xpool server on a free port; ADDR_NAME gets its address
start() {
	name=$1
	shift
	"$XP" server --data "$TMP/$name" --listen 127.0.0.1:0 "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" &
	PIDS="$PIDS $!"
	eval "PID_$name=$!"
	end=$(($(date +%s) + 60))
	until grep -qs '^address: ' "$TMP/$name.out"; do
		[ "$(date +%s)" -lt "$end" ] || { echo "bench/tls.sh: $name did not start: $(cat "$TMP/$name.err")" >&2; exit 1; }
		sleep 0.1
	done
	eval "ADDR_$name=$(sed -n 's/^address: //p' "$TMP/$name.out")"
}
start plain
start tls --tls-cert "$TMP/srv.pem" --tls-key "$TMP/srv.key"
# shellcheck disable=SC2154
echo "plain: $ADDR_plain  tls: $ADDR_tls  ($CLIENTS clients, $JOBS jobs a run, $RUNS runs)"

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# CPU ticks (user + system) a process has used so far
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)
first=1
for r in $(seq 1 "$RUNS"); do
	for name in plain tls; do
		eval "addr=\$ADDR_$name pid=\$PID_$name"
		c0=$(ticks "$pid")
		# shellcheck disable=SC2154
		"$SUB" --addr "$addr" --token-file "$TMP/$name/admin.token" --ca "$TMP/ca.pem" \
			--clients "$CLIENTS" --jobs "$JOBS" --first "$first" >"$TMP/sub.out"
		rate=$(sed -n 's/.* jobs_per_s=\([0-9.]*\).*/\1/p' "$TMP/sub.out")
		cpu=$(awk -v t="$(($(ticks "$pid") - c0))" -v hz="$HZ" -v n="$JOBS" 'BEGIN { printf "%.1f", t / hz * 1e6 / n }')
		echo "run $r $name: $rate submits/s, server CPU $cpu us a submit"
		echo "$rate" >>"$TMP/$name.rates"
		echo "$cpu" >>"$TMP/$name.cpu"
	done
	first=$((first + JOBS))
done
P=$(median <"$TMP/plain.rates")
S=$(median <"$TMP/tls.rates")
echo "durable submits/s, median of $RUNS: plain $P, tls $S, tls/plain $(awk -v a="$S" -v b="$P" 'BEGIN { printf "%.3f", a / b }')"
P=$(median <"$TMP/plain.cpu")
S=$(median <"$TMP/tls.cpu")
echo "server CPU per submit, median of $RUNS: plain $P us, tls $S us, tls/plain $(awk -v a="$S" -v b="$P" 'BEGIN { printf "%.3f", a / b }')"

# one CLI call: a new process, a new connection (and for https:// a handshake)
for name in plain tls; do
	eval "addr=\$ADDR_$name"
	for i in $(seq 1 20); do
		t0=$(date +%s%N)
		XPOOL_ADDR=$addr XPOOL_CA=$TMP/ca.pem XPOOL_TOKEN=$(cat "$TMP/$name/admin.token") \
			"$XP" queues >/dev/null
		echo $((($(date +%s%N) - t0) / 1000))
	done | median >"$TMP/$name.cli"
done
echo "one CLI call (xpool queues), median of 20: plain $(cat "$TMP/plain.cli") us, tls $(cat "$TMP/tls.cli") us"
