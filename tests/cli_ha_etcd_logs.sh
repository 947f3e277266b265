#!/bin/sh
# cli_ha_etcd_logs: job output survives a failover. Agents upload output to
# the leader, which keeps it in its own DATA/logs; a follower that takes
# over lacks what the old leader took. An agent (given both controllers'
# addresses) that meets a higher epoch sends the output of its recently
# ended tasks again (--output-resend), and the new leader keeps what it
# lacked - once: a second failover adds nothing twice.
#  - a job ends on the agent and its output is read through the leader A;
#  - A is killed (-9): B leads, and `xpool logs` through B shows the whole
#    output of the job that ended before the failover;
#  - A comes back as a follower: a log read sent to it goes on to the leader
#    (307), since the output lives on the leader's disk;
#  - B is killed: A leads again and shows the output exactly once.
# usage: cli_ha_etcd_logs.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
XP=$1 SRC=$3
. "$SRC/tests/devlib.sh" # T, fail, until_ok (its dev server is not used)
. "$SRC/tests/etcdlib.sh"
APID=
ETCD_TEST_CLEANUP='[ -n "$APID" ] && kill "$APID" 2>/dev/null && wait "$APID" 2>/dev/null'
etcd_test_setup
etcd_start 1 || exit 1
CTL_EXTRA="--heartbeat 500ms"
ha_pair logs || exit 1
ADDRS="http://127.0.0.1:$PORT_A,http://127.0.0.1:$PORT_B"
printf 'nodes:\n  - name: host-0\n    cpu: 4\n    memory: 8Gi\n' >"$T/devices.yaml"
"$XP" agent --server "$ADDRS" --token-file "$T/A/admin.token" --node-name host-0 \
	--devices "$T/devices.yaml" --work "$T/work" --no-limits --stop-tasks >"$T/agent.log" 2>&1 &
APID=$!
XPOOL_ADDR=$ADDRS
export XPOOL_ADDR
node_up() { "$XP" nodes -o json 2>/dev/null | jq -e '.nodes[] | select(.name == "host-0" and .state == "ready")' >/dev/null; }
until_ok 60 node_up || { fail "the agent's node is not ready: $(tail -5 "$T/agent.log")"; exit 1; }

# a job that ends before the failover, with 2,000 lines of output
id=$("$XP" submit --cpu 1 --name out --node host-0 -- sh -c 'seq 1 2000 | sed "s/^/line /"' |
	sed -n 's/^job \([0-9]*\) .*/\1/p')
[ -n "$id" ] || { fail "submit"; exit 1; }
state() { "$XP" job "$id" -o json 2>/dev/null | jq -r .state; }
whole() { # ADDR: the job's output through ADDR is the 2,000 lines, once
	XPOOL_ADDR=$1 "$XP" logs "$id" >"$T/logs.out" 2>"$T/logs.err" &&
		[ "$(wc -l <"$T/logs.out")" -eq 2000 ] && [ "$(tail -n 1 "$T/logs.out")" = "line 2000" ]
}
until_ok 60 sh -c "[ \"\$(\"$XP\" job $id -o json 2>/dev/null | jq -r .state)\" = succeeded ]" ||
	fail "job $id did not succeed: $(state)"
until_ok 30 whole "$ADDRS" || fail "the output through the leader A: $(wc -l <"$T/logs.out") lines $(cat "$T/logs.err")"

# kill_to OLD NEW: OLD killed (-9), NEW leads and has the job's whole output, once
kill_to() {
	eval "victim=\$CPID_$1 port=\$PORT_$2"
	kill -9 "$victim"
	wait "$victim" 2>/dev/null
	eval "CPID_$1="
	until_ok 60 role_is "$port" leader || { fail "$2 did not take over from $1"; return 1; }
	until_ok 60 whole "http://127.0.0.1:$port" ||
		fail "$1 killed: the new leader $2 has $(wc -l <"$T/logs.out") lines of $id's 2,000: $(cat "$T/logs.err")"
}

# A killed: B leads and has the output
kill_to A B
grep -q "sent again" "$T/agent.log" || fail "the agent did not say it sent output again"

# A back as a follower: a log read sent to it goes on to the leader
ctl_start A logs
until_ok 60 role_is "$PORT_A" follower || fail "A did not follow again"
code=$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' -H "Authorization: Bearer $XPOOL_TOKEN" \
	"http://127.0.0.1:$PORT_A/v1/jobs/$id/logs")
[ "$code" = "307 http://127.0.0.1:$PORT_B/v1/jobs/$id/logs" ] ||
	fail "a log read on the follower: '$code', want a 307 to the leader"

# B killed: A leads again, with the output once (what it had, and not twice)
kill_to B A
echo "output after two failovers: $(wc -l <"$T/logs.out") lines of 2,000; agent: $(grep -m 1 "sent again" "$T/agent.log")"
[ $fails -eq 0 ] || exit 1
echo "ok"
