#!/bin/sh
# cli_ha_etcd_quorum: the HA controllers when etcd loses members (issue 23,
# "etcd failures"). Three real etcd members on loopback ports, two
# `xpool server --store etcd://m0,m1,m2 --lease 2s`.
#  - One member killed (-9): service goes on: 10 submits in a row are
#    acknowledged.
#  - A second member killed (quorum lost): writes answer 503 (or are not
#    taken: the leader steps down and stops listening), none is acknowledged;
#    a follower still answers reads, flagged X-Xpool-Stale: true.
#  - Both members back: service recovers (a submit is acknowledged within
#    60 s), and every job acknowledged before is still there.
# usage: cli_ha_etcd_quorum.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
XP=$1 SRC=$3
. "$SRC/tests/devlib.sh"
. "$SRC/tests/etcdlib.sh"
etcd_test_setup
etcd_start 3 || exit 1
ha_pair q || exit 1
XPOOL_ADDR="http://127.0.0.1:$PORT_A,http://127.0.0.1:$PORT_B"
export XPOOL_ADDR
headers() { # PORT: the reply headers of a read there
	curl -s -m 5 -D - -o /dev/null -H "Authorization: Bearer $XPOOL_TOKEN" \
		"http://127.0.0.1:$1/v1/queues" | tr -d '\r'
}
submit() { "$XP" submit --cpu 1 --name "$1" --idempotency-key "$1" -- true >"$T/sub.out" 2>&1; }
ok=0
for i in 1 2 3 4 5; do until_ok 30 submit "before-$i" && ok=$((ok + 1)); done
[ $ok -eq 5 ] || fail "only $ok of 5 submits before any failure"

# one member lost: service goes on
etcd_stop_member 0
ok=0
for i in 1 2 3 4 5 6 7 8 9 10; do until_ok 30 submit "one-lost-$i" && ok=$((ok + 1)); done
[ $ok -eq 10 ] || fail "one member lost: $ok of 10 submits acknowledged: $(cat "$T/sub.out")"
echo "one of three members lost: $ok of 10 submits acknowledged"

# quorum lost: no write is acknowledged; the follower's reads say stale
etcd_stop_member 1
stale() { headers "$PORT_B" | grep -qi '^x-xpool-stale: true$'; }
until_ok 60 stale || fail "the follower's reads are not flagged stale without quorum: $(headers "$PORT_B")"
acked=0
for i in 1 2 3; do
	if submit "no-quorum-$i"; then acked=$((acked + 1)); fi
	echo "no quorum, submit $i: $(head -n 1 "$T/sub.out")"
done
[ $acked -eq 0 ] || fail "$acked submits acknowledged without quorum"
grep -q "503\|unavailable\|no leader\|cannot reach\|may lead no more\|wait for etcd" "$T/sub.out" ||
	fail "a write without quorum: '$(cat "$T/sub.out")', want a 503"

# quorum back: service recovers, nothing acknowledged is lost
etcd_restart_member 0
etcd_restart_member 1
until_ok 90 submit "after" || fail "no submit acknowledged within 90 s of quorum's return: $(cat "$T/sub.out")"
# (a follower may answer the read, up to a poll behind the leader: wait for it)
listed() { "$XP" jobs --all --limit 1000 | grep -q " $1 "; }
for k in before-1 before-5 one-lost-1 one-lost-10 after; do
	until_ok 10 listed "$k" || fail "job $k is gone"
done
[ $fails -eq 0 ] || exit 1
echo "ok"
