#!/bin/sh
# bench/ha.sh BUILD [rate] [failover] [design]: the HA store on etcd (docs/results/ha.md).
#   rate      durable submits/s from 64 clients (xp_bench_submit, 5,000 jobs a
#             run) into one `xpool server`, with the journal in SQLite and in
#             etcd (one member on this machine, fsync on), RUNS runs of each,
#             interleaved; medians and the ratio.
#   failover  two `xpool server --store etcd --lease 2s` and 64 clients
#             submitting with idempotency keys through both addresses
#             (xp_bench_failover), each pausing HA_PACE_MS (200) after each
#             acknowledgement; HA_CYCLES (100) times the leader is killed
#             (-9) at a random moment and started again as a follower. Then
#             every acknowledged key is checked (its job is there, under its
#             id) and the jobs counted (none doubled). Takeover: from the kill
#             to the first submit acknowledged after it; median and max.
#   design    the two state designs of the issue on one fresh etcd member each
#             run (xp_bench_hastore): (a) the journal in etcd, as built, and
#             (b) live jobs as etcd keys with finished ones archived to local
#             SQLite; 64 producers, HA_DESIGN_JOBS (10,000) jobs of which a
#             tenth stay live, with 0 and with 100,000 finished jobs kept from
#             before (the server's --max-finished default); RUNS runs each,
#             medians of events/s, load seconds and etcd's database size.
# etcd members and controllers are started on free loopback ports and
# stopped by PID. Absolute figures depend on the machine: compare the two
# stores of one run.
set -u
BUILD=${1:-build}
shift 2>/dev/null || true
PARTS=${*:-rate failover design}
XP=$BUILD/xpool
SUB=$BUILD/bench/controller/xp_bench_submit
HS=$BUILD/bench/store/xp_bench_hastore
DJOBS=${HA_DESIGN_JOBS:-10000}
FO=$BUILD/bench/controller/xp_bench_failover
RUNS=${RUNS:-3}
CYCLES=${HA_CYCLES:-100}
CLIENTS=${HA_CLIENTS:-64}
PACE=${HA_PACE_MS:-200} # each client waits this long after each acknowledgement
SRC=$(cd "$(dirname "$0")/.." && pwd)
XPOOL_TOKEN= # devlib.sh's helpers, and its T (removed on exit)
. "$SRC/tests/devlib.sh"
. "$SRC/tests/etcdlib.sh"
command -v etcd >/dev/null 2>&1 || [ -x /usr/bin/etcd ] || {
	echo "bench/ha.sh: etcd is not installed (scripts/deps.sh installs etcd-server)"
	exit 0
}
SPIDS= FOPID=
cleanup() {
	[ -n "$FOPID" ] && kill "$FOPID" 2>/dev/null
	for p in $SPIDS; do kill "$p" 2>/dev/null; done
	for p in $SPIDS $FOPID; do wait "$p" 2>/dev/null; done
	ctl_stop_all
	etcd_stop
	rm -rf "$T"
}
trap cleanup EXIT
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }
field() { echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
etcd_start 1 || exit 1

# ---------------------------------------------------------------- rate --
rate() {
	free_port
	port=$FREE_PORT
	r=1
	while [ "$r" -le "$RUNS" ]; do
		for store in sqlite etcd; do
			rm -rf "$T/d"
			set --
			[ "$store" = etcd ] && set -- --store "$ETCD_URL/rate-$r"
			"$XP" server --data "$T/d" --listen "127.0.0.1:$port" "$@" >"$T/s.out" 2>"$T/s.err" &
			sp=$!
			SPIDS=$sp
			until_ok 60 test -s "$T/d/admin.token" || { echo "no admin token: $(cat "$T/s.err")"; exit 1; }
			line=$("$SUB" --addr "127.0.0.1:$port" --token-file "$T/d/admin.token" --clients 64 --jobs 5000)
			echo "  [rate] $store run $r: $line"
			field jobs_per_s "$line" >>"$T/rate_$store"
			kill "$sp"
			wait "$sp"
			SPIDS=
		done
		r=$((r + 1))
	done
	s=$(median <"$T/rate_sqlite")
	e=$(median <"$T/rate_etcd")
	echo "durable submits/s, 64 clients, median of $RUNS: SQLite $s, etcd $e (etcd/SQLite $(echo "$e $s" | awk '{ printf "%.2f", $1 / $2 }')); goal for etcd >= 5000"
}

# ------------------------------------------------------------ failover --
acked() { wc -l <"$T/acked.log"; }
acked_past() { [ "$(acked)" -ge "$1" ]; }
failover() {
	ha_pair failover || exit 1
	: >"$T/acked.log"
	"$FO" --addr "http://127.0.0.1:$PORT_A,http://127.0.0.1:$PORT_B" --token-file "$T/A/admin.token" \
		--clients "$CLIENTS" --pace-ms "$PACE" --stop-file "$T/stop" --out "$T/acked.log" >"$T/fo.out" 2>&1 &
	FOPID=$!
	L=A F=B
	: >"$T/kills"
	c=1
	while [ "$c" -le "$CYCLES" ]; do
		until_ok 60 acked_past $(($(acked) + CLIENTS)) || { echo "cycle $c: no progress"; break; }
		sleep "0.$(awk -v s="$$$c" 'BEGIN { srand(s); printf "%03d", int(rand() * 1000) }')"
		eval "victim=\$CPID_$L"
		echo "$(($(date +%s%N) / 1000000))" >>"$T/kills"
		kill -9 "$victim"
		wait "$victim" 2>/dev/null
		eval "fp=\$PORT_$F"
		until_ok 60 role_is "$fp" leader || { echo "cycle $c: $F did not take over"; break; }
		ctl_start "$L" failover
		eval "lp=\$PORT_$L"
		until_ok 120 role_is "$lp" follower || { echo "cycle $c: $L did not follow again"; break; }
			x=$L L=$F F=$x
		c=$((c + 1))
	done
	until_ok 60 acked_past $(($(acked) + CLIENTS)) # the last takeover's first acks
	touch "$T/stop"
	wait "$FOPID"
	FOPID=
	echo "  [failover] $(cat "$T/fo.out")"
	v=$("$FO" --addr "http://127.0.0.1:$PORT_A,http://127.0.0.1:$PORT_B" --token-file "$T/A/admin.token" --verify "$T/acked.log" 2>&1)
	echo "  [failover] $v"
	# takeover: each kill to the first acknowledgement of a request sent after it (only
	# the next leader can have answered that one)
	awk -v kf="$T/kills" '
		BEGIN { while ((getline k < kf) > 0) kill[++n] = k }
		{ for (j = 1; j <= n; j++)
			if ($3 >= kill[j] && (j == n || $3 < kill[j + 1]) && (!(j in t) || $4 - kill[j] < t[j]))
				t[j] = $4 - kill[j] }
		END { for (j = 1; j <= n; j++) print (j in t) ? t[j] : -1 }' "$T/acked.log" >"$T/takeover"
	med=$(median <"$T/takeover")
	max=$(sort -n "$T/takeover" | tail -n 1)
	echo "kill the leader, $(wc -l <"$T/kills") cycles, $CLIENTS clients: $(field keys "$v") acknowledged submits, $(field lost_or_changed "$v") lost or changed, $(field jobs "$v") jobs; takeover (kill to the first acknowledged submit) median $med ms, max $max ms (goal <= 3000 with a 2 s lease)"
}

# -------------------------------------------------------------- design --
design() {
	for kept in 0 100000; do
		r=1
		while [ "$r" -le "$RUNS" ]; do
			for d in a b; do
				etcd_stop
				rm -rf "$T/etcd"
				etcd_start 1 || exit 1
				line=$("$HS" -e "$ETCD_URL" -m "$d" -n "$DJOBS" -l $((DJOBS / 10)) -f "$kept" 2>&1)
				echo "  [design] run $r: $line"
				echo "$line" | awk '{ for (i = 1; i < NF; i++) v[$i] = $(i + 1)
					print v["events_per_s"], v["load_seconds"], v["etcd_db_bytes"] }' >>"$T/design_${d}_$kept"
			done
			r=$((r + 1))
		done
		for d in a b; do
			set -- $(cut -d' ' -f1 "$T/design_${d}_$kept" | median) \
				$(cut -d' ' -f2 "$T/design_${d}_$kept" | median) \
				$(cut -d' ' -f3 "$T/design_${d}_$kept" | median)
			echo "design ($d), $kept finished jobs kept: events/s $1, load ${2} s, etcd database $(($3 / 1048576)) MiB (medians of $RUNS)"
			eval "ev_$d=$1"
		done
		echo "design (b)/(a) events/s with $kept kept: $(echo "$ev_b $ev_a" | awk '{ printf "%.2f", $1 / $2 }')"
	done
}

for part in $PARTS; do
	case $part in
	rate) rate ;;
	failover) failover ;;
	design) design ;;
	*) echo "bench/ha.sh: unknown part $part" ;;
	esac
done
