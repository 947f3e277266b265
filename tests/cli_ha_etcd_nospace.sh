#!/bin/sh
# cli_ha_etcd_nospace: etcd's NOSPACE alarm under the HA controllers (issue
# 23, "etcd failures"). One real etcd member with a 1 MiB backend quota, a
# leader and a follower (`xpool server --store etcd://... --lease 2s`).
#  - 4 clients submitting with idempotency keys (xp_bench_failover, each
#    retrying a refused submit with its key) fill etcd until it raises
#    NOSPACE: from then on every request to the leader is refused at once
#    with etcd's reason ("database space exceeded"); the follower still
#    answers reads.
#  - etcd restarted with room and the alarm disarmed: service recovers, the
#    retried submits are acknowledged, and every acknowledged key names the
#    job it was acknowledged with, with exactly as many jobs as keys.
# usage: cli_ha_etcd_nospace.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
XP=$1 SRC=$3
FO=$(dirname "$XP")/bench/controller/xp_bench_failover
. "$SRC/tests/devlib.sh"
. "$SRC/tests/etcdlib.sh"
[ -x "$FO" ] || { echo "FAIL: $FO missing (built with the benchmarks)"; exit 1; }
etcd_test_setup
ETCD_EXTRA="--quota-backend-bytes 1048576"
etcd_start 1 || exit 1
ha_pair ns || exit 1

# fill etcd: 4 clients submit with idempotency keys, each retrying a refused
# submit with its key until acknowledged (xp_bench_failover), until the alarm
ADDRS="http://127.0.0.1:$PORT_A,http://127.0.0.1:$PORT_B"
"$FO" --addr "$ADDRS" --token-file "$T/A/admin.token" --clients 4 --stop-file "$T/stop" \
	--out "$T/acked.log" >"$T/fo.out" 2>&1 &
FOPID=$!
ETCD_TEST_CLEANUP='[ -z "$FOPID" ] || { kill "$FOPID" 2>/dev/null; wait "$FOPID" 2>/dev/null; }'
XPOOL_ADDR="http://127.0.0.1:$PORT_A"
export XPOOL_ADDR
refused() {
	"$XP" submit --cpu 1 --name late -- true >"$T/late.out" 2>&1 && return 1
	grep -q "space exceeded" "$T/late.out"
}
until_ok 60 refused || fail "no refusal naming etcd's NOSPACE: $(cat "$T/late.out")"
echo "NOSPACE: $(cat "$T/late.out")"
touch "$T/stop" # the clients stop once the key each is retrying is acknowledged
acked=$(wc -l <"$T/acked.log")
XPOOL_ADDR="http://127.0.0.1:$PORT_B" "$XP" queues >/dev/null 2>&1 || fail "the follower stopped answering reads"

# room again: a bigger quota, the alarm disarmed
etcd_stop
ETCD_EXTRA="--quota-backend-bytes 67108864"
etcd_restart_member 0
set -- $ETCD_CP
alarms() { curl -s -m 2 -X POST "http://127.0.0.1:$1/v3/maintenance/alarm" -d '{"action":"GET"}' >"$T/alarms"; }
until_ok 60 alarms "$1" || fail "etcd did not come back" # (/health says false while an alarm is on)
member=$(sed -n 's/.*"memberID":"\([0-9]*\)".*/\1/p' "$T/alarms")
[ -n "$member" ] || fail "no NOSPACE alarm to disarm: $(cat "$T/alarms")"
curl -s -X POST "http://127.0.0.1:$1/v3/maintenance/alarm" \
	-d "{\"action\":\"DEACTIVATE\",\"memberID\":\"$member\",\"alarm\":\"NOSPACE\"}" >/dev/null
XPOOL_ADDR="http://127.0.0.1:$PORT_A,http://127.0.0.1:$PORT_B"
submit_after() { "$XP" submit --cpu 1 --name after -- true >"$T/after.out" 2>&1; }
until_ok 90 submit_after || fail "no submit acknowledged after the alarm was disarmed: $(cat "$T/after.out")"
fo_done() { ! kill -0 "$FOPID" 2>/dev/null; }
until_ok 90 fo_done || fail "the clients' last retried submits were not acknowledged after the alarm"
wait "$FOPID"
FOPID=
# every key acknowledged (before, and the ones retried through the alarm) names its job,
# and there are exactly as many jobs as keys
v=$("$FO" --addr "$ADDRS" --token-file "$T/A/admin.token" --verify "$T/acked.log" 2>&1) ||
	fail "after the alarm: $v"
echo "recovered: $acked submits acknowledged before the alarm; $v"
[ $fails -eq 0 ] || exit 1
echo "ok"
