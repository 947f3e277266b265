#!/bin/sh
# cli_ha_etcd_three: the layout of docs/deploy.md - three etcd members and
# three controllers (A, B, C) on one prefix - under 4 clients that submit
# with idempotency keys through all three addresses.
#  1. Kill the leader (-9): one of the two followers takes over, and the
#     other follows the new leader and shows what it acknowledged.
#  2. Kill one etcd member and then the new leader: the last controller
#     takes over on the two members left.
#  3. Bring back the member and both controllers: they follow.
#  At the end every acknowledged key names its job and there are exactly as
#  many jobs as keys (none lost, none doubled).
# usage: cli_ha_etcd_three.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
XP=$1 SRC=$3
. "$SRC/tests/devlib.sh" # T, fail, until_ok (its dev server is not used)
. "$SRC/tests/etcdlib.sh"
ha_clients_setup
etcd_start 3 || exit 1
ha_pair three || exit 1
free_port
PORT_C=$FREE_PORT
ctl_start C three
until_ok 60 role_is "$PORT_C" follower || { fail "C does not follow: $(cat "$T/C.err")"; exit 1; }
ADDRS="http://127.0.0.1:$PORT_A,http://127.0.0.1:$PORT_B,http://127.0.0.1:$PORT_C"
# LEADER: the name of the one controller of A B C that says it leads ("" when none or several)
who_leads() {
	LEADER= n=0
	for c in A B C; do
		eval "kill -0 \${CPID_$c:-0} 2>/dev/null" || continue
		if eval "role_is \$PORT_$c leader"; then
			LEADER=$c n=$((n + 1))
		fi
	done
	[ $n -eq 1 ] || LEADER=
	[ -n "$LEADER" ]
}
follows() { eval "role_is \$PORT_$1 follower"; }
# kill the leader; wait for a submit acknowledged and one leader among the rest
kill_leader() {
	who_leads || { fail "$1: no single leader before the kill"; return 1; }
	old=$LEADER
	n0=$(wc -l <"$T/acked")
	until_ok 60 acked_at_least $((n0 + 8)) || { fail "$1: no submits before the kill"; return 1; }
	eval "victim=\$CPID_$old"
	t0=$(now_ms)
	kill -9 "$victim"
	wait "$victim" 2>/dev/null
	eval "CPID_$old="
	until_ok 60 probe || {
		fail "$1: no submit acknowledged within 60 s of killing $old"
		for c in A B C; do echo "== $c" && tail -n 5 "$T/$c.err"; done
		return 1
	}
	t1=$(now_ms)
	until_ok 60 who_leads || { fail "$1: no single leader after killing $old"; return 1; }
	echo "$1: $old killed, $LEADER leads, a submit acknowledged $((t1 - t0)) ms after the kill"
}

: >"$T/acked"
for i in 1 2 3 4; do
	ha_submitter "$i" &
	SUBS="$SUBS $!"
done

# 1. the leader killed: one follower leads, the other follows it and is hot
kill_leader "kill 1" || exit 1
FIRST=$old
for c in A B C; do [ "$c" = "$FIRST" ] || [ "$c" = "$LEADER" ] || OTHER=$c; done
until_ok 60 follows "$OTHER" || fail "$OTHER does not follow the new leader $LEADER"
last=$(tail -n 1 "$T/acked" | cut -d' ' -f2)
eval "oport=\$PORT_$OTHER"
has_last() { XPOOL_ADDR="http://127.0.0.1:$oport" "$XP" job "$last" >/dev/null 2>&1; }
until_ok 60 has_last || fail "the follower $OTHER does not show job $last"

# 2. one etcd member lost, then the new leader: the last controller leads on two members
etcd_stop_member 0
until_ok 60 probe || fail "no submit acknowledged with one etcd member down"
kill_leader "kill 2" || exit 1
[ "$LEADER" = "$OTHER" ] || fail "kill 2: $LEADER leads, want $OTHER"

# 3. all back: the member and both controllers; they follow
etcd_restart_member 0
for c in A B C; do
	eval "p=\${CPID_$c:-}"
	[ -n "$p" ] || ctl_start "$c" three
done
for c in A B C; do
	[ "$c" = "$LEADER" ] && continue
	until_ok 60 follows "$c" || fail "$c did not follow again: $(tail -n 3 "$T/$c.err")"
done
n0=$(wc -l <"$T/acked")
until_ok 60 acked_at_least $((n0 + 8)) || fail "no submits after everything came back"

touch "$T/stop"
until_ok 60 sh -c "for p in $SUBS; do kill -0 \$p 2>/dev/null && exit 1; done; exit 0" || {
	touch "$T/stop2"
	fail "the submitters did not finish"
}
SUBS=
ha_check_keys 24
echo "three controllers: $keys acknowledged submits over 2 kills and a lost etcd member, $bad lost or changed, $jobs jobs"
[ $fails -eq 0 ] || exit 1
echo "ok"
