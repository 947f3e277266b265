#!/bin/sh
# cli_ha_etcd_nospace: etcd's NOSPACE alarm under the HA controllers (issue
# 23, "etcd failures"). One real etcd member with a 1 MiB backend quota, a
# leader and a follower (`xpool server --store etcd://... --lease 2s`).
#  - Submits fill etcd until it raises NOSPACE: from then on every request
#    to the leader is refused at once with etcd's reason ("database space
#    exceeded"), none acknowledged; the follower still answers reads.
#  - etcd restarted with room and the alarm disarmed: service recovers, and
#    every job acknowledged before is there.
# usage: cli_ha_etcd_nospace.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
XP=$1 SRC=$3
SUB=$(dirname "$XP")/bench/controller/xp_bench_submit
. "$SRC/tests/devlib.sh"
. "$SRC/tests/etcdlib.sh"
[ -x "$SUB" ] || { echo "FAIL: $SUB missing (built with the benchmarks)"; exit 1; }
etcd_test_setup
ETCD_EXTRA="--quota-backend-bytes 1048576"
etcd_start 1 || exit 1
ha_pair ns || exit 1

# fill etcd: some of these are refused once the alarm is raised
line=$("$SUB" --addr "127.0.0.1:$PORT_A" --token-file "$T/A/admin.token" --clients 4 --jobs 4000 2>"$T/sub.err")
echo "filling: $line"
acked=$(echo "$line" | sed -n 's/.* errors=\([0-9]*\) .*/\1/p')
acked=$((4000 - acked))
XPOOL_ADDR="http://127.0.0.1:$PORT_A"
export XPOOL_ADDR
refused() {
	"$XP" submit --cpu 1 --name late -- true >"$T/late.out" 2>&1 && return 1
	grep -q "space exceeded" "$T/late.out"
}
until_ok 60 refused || fail "no refusal naming etcd's NOSPACE: $(cat "$T/late.out")"
echo "NOSPACE: $(cat "$T/late.out")"
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
n_jobs() { n=$("$XP" jobs --all --limit 1000 | awk 'NR > 1' | wc -l); [ "$n" -gt "$acked" ]; }
until_ok 10 n_jobs || fail "$n jobs listed, but $acked were acknowledged (and one after)"
echo "recovered: $n jobs listed for $acked acknowledged before the alarm"
[ $fails -eq 0 ] || exit 1
echo "ok"
