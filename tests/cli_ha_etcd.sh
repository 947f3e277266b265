#!/bin/sh
# cli_ha_etcd: controllers that take over from each other through etcd
# (issue 23). A real etcd member on loopback ports and two real `xpool
# server --store etcd://... --lease 2s` processes on one etcd prefix.
#  - Kill the leader (-9) at a random moment, 3 cycles, while 4 clients
#    submit with idempotency keys through both addresses (A,B) and retry a
#    failed submit with the same key: the standby takes over, and at the end
#    every acknowledged key names the job it was acknowledged with, and
#    there are exactly as many jobs as keys (none lost, none doubled).
#    The takeover time (kill to the first acknowledged submit) is printed,
#    not asserted: make bench measures it (bench/ha.sh).
#  - SIGSTOP the leader until the standby leads, send it a submit, SIGCONT:
#    that write is refused and never lands; the old leader steps down and
#    stands by.
# usage: cli_ha_etcd.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
XP=$1 SRC=$3
. "$SRC/tests/devlib.sh" # T, fail, until_ok (its dev server is not used)
. "$SRC/tests/etcdlib.sh"
ha_clients_setup
etcd_start 1 || exit 1
# a body etcd could not take in one record is refused at start, not at the first such request
"$XP" server --data "$T/big" --store "$ETCD_URL/big" --body-limit 2000000 >"$T/big.out" 2>&1
[ $? -eq 2 ] && grep -q "at most 786432 bytes with --store etcd" "$T/big.out" ||
	fail "--body-limit over etcd's limit was not refused: $(cat "$T/big.out")"
ha_pair ha-test || exit 1
ADDRS="http://127.0.0.1:$PORT_A,http://127.0.0.1:$PORT_B"
leads() { eval "role_is \$PORT_$1 leader"; }
follows() { eval "role_is \$PORT_$1 follower"; }


: >"$T/acked"
for i in 1 2 3 4; do
	ha_submitter "$i" &
	SUBS="$SUBS $!"
done
LEADER=A STANDBY=B
for cycle in 1 2 3; do
	n0=$(wc -l <"$T/acked")
	until_ok 60 acked_at_least $((n0 + 8)) ||
		{ fail "cycle $cycle: no submits acknowledged before the kill"; break; }
	sleep "0.$(($$ * cycle % 9))" # a moment that is not the same each cycle
	eval "victim=\$CPID_$LEADER"
	t0=$(now_ms)
	kill -9 "$victim"
	wait "$victim" 2>/dev/null
	until_ok 60 probe || { fail "cycle $cycle: no submit acknowledged within 60 s of the kill"; break; }
	t1=$(now_ms)
	echo "cycle $cycle: $LEADER killed, $STANDBY acknowledged a submit $((t1 - t0)) ms later"
	until_ok 60 leads "$STANDBY" || fail "cycle $cycle: $STANDBY does not answer"
	ctl_start "$LEADER" ha-test # back as a follower
	until_ok 60 follows "$LEADER" || fail "cycle $cycle: $LEADER did not follow again"
	x=$LEADER LEADER=$STANDBY STANDBY=$x
done
touch "$T/stop"
n0=$(wc -l <"$T/acked")
until_ok 60 sh -c "for p in $SUBS; do kill -0 \$p 2>/dev/null && exit 1; done; exit 0" || {
	touch "$T/stop2"
	fail "the submitters did not finish"
}
SUBS=

ha_check_keys 24
echo "failover: $keys acknowledged submits over 3 kills, $bad lost or changed, $jobs jobs"

# the follower is hot: it shows what the leader acknowledged, and sends writes on
eval "fport=\$PORT_$STANDBY"
last=$(tail -n 1 "$T/acked" | cut -d' ' -f2)
follower_has() { XPOOL_ADDR="http://127.0.0.1:$fport" "$XP" job "$last" >/dev/null 2>&1; }
until_ok 60 follower_has || fail "the follower $STANDBY does not show job $last"
code=$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' -X POST -H "Authorization: Bearer $XPOOL_TOKEN" \
	-H 'Content-Type: application/json' -d '{}' "http://127.0.0.1:$fport/v1/jobs")
eval "lport=\$PORT_$LEADER"
[ "$code" = "307 http://127.0.0.1:$lport/v1/jobs" ] || fail "a write to the follower: '$code', want a 307 to the leader"

# SIGSTOP: the paused leader's write never lands
eval "paused=\$CPID_$LEADER port=\$PORT_$LEADER"
kill -STOP "$paused"
until_ok 60 leads "$STANDBY" || fail "$STANDBY did not take over from the paused $LEADER"
XPOOL_ADDR="http://127.0.0.1:$port" "$XP" submit --cpu 1 --name stale-write -- true \
	>"$T/stale.out" 2>&1 &
stale=$!
# the client is connected (the paused process's kernel accepted it): an established
# connection to the port in /proc/net/tcp (remote address field, state 01)
hexport=$(printf '%04X' "$port")
connected() { awk -v p=":$hexport" '$3 ~ p"$" && $4 == "01" { f = 1 } END { exit !f }' /proc/net/tcp; }
until_ok 30 connected || fail "the stale submit did not connect to the paused leader"
kill -CONT "$paused"
wait "$stale"
src=$?
[ $src -ne 0 ] || fail "the paused leader acknowledged a write after it lost the lead: $(cat "$T/stale.out")"
until_ok 60 grep -q "stepped down" "$T/$LEADER.err" || fail "the paused leader did not step down"
until_ok 60 follows "$LEADER" || fail "the paused leader did not follow again"
if XPOOL_ADDR="http://127.0.0.1:$(eval echo \$PORT_$STANDBY)" "$XP" jobs --all --limit 1000 | grep -q stale-write; then
	fail "the paused leader's write landed"
fi
echo "sigstop: the paused leader's submit: $(head -n 1 "$T/stale.out")"
[ $fails -eq 0 ] || exit 1
echo "ok"
