#!/bin/sh
# cli_time_limit: a job past its time limit, through a real `xpool dev`:
#  - on the local agent's node (`--time-limit 2s -- sleep 60`): the job
#    ends failed with reason time_limit at once, and its exit code becomes
#    what the agent saw when it stopped the task: 143 (SIGTERM); `xpool
#    job` and `xpool jobs` show both;
#  - on an emulated node: failed, reason time_limit, 143 (SIGTERM) too.
# No new job state: failed, with the reason (Slurm shows TIMEOUT).
# Skips (exit 77, ctest's SKIP_RETURN_CODE) when `xpool dev` is absent.
# usage: cli_time_limit.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
XP=$1 SRC=$3

. "$SRC/tests/devlib.sh"
need_dev
start_dev --cluster "$SRC/examples/clusters/small.yaml"

# the local agent's node: source "agent", ready
agent_node

submitted() { sed -n 's/^job \([0-9]*\) submitted.*/\1/p' "$T/out"; }

# the local agent's node: the controller ends it, the agent's SIGTERM
# report brings the exit code
run submit --node "$NODE" --cpu 100m --memory 64Mi --time-limit 2s -- sleep 60
expect 0 "submit with --time-limit 2s"
J1=$(submitted)
# an emulated node (the example cluster's GPUs)
run submit --gpus 1 --duration 1h --time-limit 1s -- sleep 3600
expect 0 "submit to an emulated node"
J2=$(submitted)
for j in "$J1" "$J2"; do
	wait_line "$j" '^State: *failed$' || continue
	wait_line "$j" '^Exit code: *143 (SIGTERM)$' || continue
	run job "$j"
	grep -q '^Reason: *time_limit: time limit [12]s exceeded$' "$T/out" ||
		fail "job $j reason: $(cat "$T/out")"
	run job "$j" -o json
	grep -q '"end_reason": "time_limit"' "$T/out" || fail "job $j end_reason: $(cat "$T/out")"
	grep -q '"signal": 15' "$T/out" || fail "job $j signal: $(cat "$T/out")"
	run jobs
	grep -q "^$j .* failed .*time_limit: time limit" "$T/out" || fail "jobs REASON of $j: $(cat "$T/out")"
done
run job "$J1"
grep -q "^  0  *$NODE " "$T/out" || fail "job $J1 ran on $NODE: $(cat "$T/out")"
grep -q 'exited 143 (signal 15)' "$T/data/agent.log" || fail "the agent's log: $(cat "$T/data/agent.log")"

[ "$fails" = 0 ] || { echo "--- xpool dev said:"; cat "$T/dev.err"; echo "--- the agent:"; cat "$T/data/agent.log"; exit 1; }
echo "cli_time_limit: all passed (agent node $NODE)"
