#!/bin/sh
# cli_dev: `xpool dev` starts one real agent for this machine beside the
# emulated nodes. Its node registers from real discovery (hwloc), a job
# pinned to it really runs (output, exit code, XPOOL_* variables), and
# stopping `xpool dev` stops the agent and the tasks it still runs: nothing
# is left behind (processes, cgroups). Skips (exit 77, ctest's SKIP_RETURN_CODE) when `xpool dev` is absent.
# usage: cli_dev.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
XP=$1 SRC=$3

. "$SRC/tests/devlib.sh"
need_dev
# bad server flags: exit 2 naming the flag, nothing started, no data written
for bad in "--alert-webhook ftp://x|--alert-webhook: expected an http" \
	"--alert-interval 0|--alert-interval: expected a duration" \
	"--alert-repeat soon|--alert-repeat: expected a duration" \
	"--lost-after 1ms|--lost-after: expected a duration" \
	"--overcommit-memory gpu=0.5|--overcommit-memory: 'gpu=0.5': expected a factor from 1 to 10"; do
	flag=${bad%%|*} want=${bad#*|}
	# shellcheck disable=SC2086
	"$XP" server --data "$T/bad" --listen 127.0.0.1:0 $flag >"$T/out" 2>"$T/err"
	rc=$?
	[ "$rc" = 2 ] && grep -q -- "$want" "$T/err" || fail "server $flag: exit $rc, $(cat "$T/err")"
	[ -e "$T/bad/xpool.db" ] && fail "server $flag wrote a store"
done
# bad agent device flags: exit 2 naming the flag
for bad in "--device-mode sliced|--device-mode: expected shared, whole or timeslice" \
	"--timeslice-replicas 4|--timeslice-replicas: expected 1 to 32 with --device-mode timeslice, got '4' without it" \
	"--device-mode timeslice --timeslice-replicas 33|--timeslice-replicas: expected 1 to 32" \
	"--overcommit-memory 0.5|--overcommit-memory: expected a factor from 1 to 10"; do
	flag=${bad%%|*} want=${bad#*|}
	# shellcheck disable=SC2086
	"$XP" agent --server 127.0.0.1:1 --token-file /dev/null --work "$T/badagent" $flag >"$T/out" 2>"$T/err"
	rc=$?
	[ "$rc" = 2 ] && grep -q -- "$want" "$T/err" || fail "agent $flag: exit $rc, $(cat "$T/err")"
done
start_dev --cluster "$SRC/examples/clusters/small.yaml"

# the local agent's node: source "agent", ready
agent_node
grep -q "^local agent: pid [0-9]" "$T/dev.out" || fail "dev did not say it started an agent: $(cat "$T/dev.out")"
[ "$(stat -c %a "$T/data/admin.token")" = 600 ] || fail "admin.token is mode $(stat -c %a "$T/data/admin.token"), want 600"
# the host agent joined with a bootstrap token: its own node's credential,
# kept 0600, is the only token it holds (scope node, for $NODE alone)
for f in bootstrap.token agent/node.credential; do
	[ "$(stat -c %a "$T/data/$f" 2>/dev/null)" = 600 ] || fail "$f: mode $(stat -c %a "$T/data/$f" 2>&1), want 600"
done
grep -q '^xpn_' "$T/data/agent/node.credential" || fail "the agent's credential is not a node credential"
run tokens -o json
grep -q "\"node\": \"$NODE\"" "$T/out" || fail "no node-scoped token for $NODE: $(cat "$T/out")"
run node "$NODE"
grep -q '^Source: *agent$' "$T/out" || fail "node $NODE source: $(cat "$T/out")"
grep -q '^Heartbeat: *[0-9.]*s ago$' "$T/out" || fail "node $NODE heartbeat: $(cat "$T/out")"

# a real run: output, stderr, the exit code, the allocation's variables
run submit --node "$NODE" --cpu 100m --memory 64Mi -- \
	sh -c 'echo "out job=$XPOOL_JOB_ID node=$XPOOL_NODE"; echo oops >&2; exit 3'
expect 0 "submit pinned to $NODE"
J1=$(sed -n 's/^job \([0-9]*\) submitted.*/\1/p' "$T/out")
if wait_state "$J1" failed; then
	run job "$J1"
	grep -q '^Exit code: *3' "$T/out" || fail "exit code 3: $(cat "$T/out")"
	grep -q "^  0  *$NODE " "$T/out" || fail "allocation on $NODE: $(cat "$T/out")"
	run logs "$J1"
	expect 0 "logs"
	grep -q "^out job=$J1 node=$NODE\$" "$T/out" || fail "stdout of the task: $(cat "$T/out")"
	run logs "$J1" --stderr
	grep -q '^oops$' "$T/out" || fail "stderr of the task: $(cat "$T/out") $(cat "$T/err")"
fi

# two replicas: their output one section each, in order, read by the
# HTTP worker from the uploaded files
run submit --node "$NODE" --replicas 2 --cpu 100m --memory 64Mi -- sh -c 'echo "replica $XPOOL_REPLICA"'
expect 0 "submit two replicas"
J3=$(sed -n 's/^job \([0-9]*\) submitted.*/\1/p' "$T/out")
if wait_state "$J3" succeeded; then
	run logs "$J3"
	expect 0 "logs of two replicas"
	printf '==> replica 0 on %s <==\nreplica 0\n==> replica 1 on %s <==\nreplica 1\n' "$NODE" "$NODE" >"$T/want"
	cmp -s "$T/out" "$T/want" || fail "logs of two replicas: $(cat "$T/out")"
fi

# a task still running when dev stops is stopped with it
run submit --node "$NODE" --cpu 100m --memory 64Mi -- sh -c "echo \$\$ > $T/sleeper.pid; exec sleep 300"
J2=$(sed -n 's/^job \([0-9]*\) submitted.*/\1/p' "$T/out")
wait_state "$J2" running
until_ok 60 test -s "$T/sleeper.pid"
SLEEPER=$(cat "$T/sleeper.pid" 2>/dev/null)
[ -n "$SLEEPER" ] && kill -0 "$SLEEPER" 2>/dev/null || fail "the task did not start: $(cat "$T/dev.err")"
kill "$PID"
wait "$PID"
status=$?
PID=
[ "$status" = 0 ] || fail "xpool dev exited $status on SIGTERM"
if [ -n "$SLEEPER" ] && kill -0 "$SLEEPER" 2>/dev/null; then
	fail "task pid $SLEEPER outlived xpool dev"
	kill -9 "$SLEEPER"
fi
pgrep -f "$T/data/agent" >/dev/null && fail "a process of the agent outlived xpool dev: $(pgrep -fa "$T/data/agent")"
# nor their cgroups (where limits held: the agent's log names them)
for name in $(sed -n 's/.*: started pid [0-9]* in cgroup \([^ ]*\)$/\1/p' "$T/data/agent.log"); do
	for d in /sys/fs/cgroup/memory/xpool /sys/fs/cgroup/cpu/xpool /sys/fs/cgroup/cpuset/xpool /sys/fs/cgroup/xpool; do
		[ -d "$d/$name" ] && fail "cgroup $d/$name outlived xpool dev"
	done
done

[ "$fails" = 0 ] || { echo "--- xpool dev said:"; cat "$T/dev.err"; exit 1; }
echo "cli_dev: all passed (agent node $NODE)"
