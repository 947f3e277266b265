#!/bin/sh
# cli_limits: CPU and memory limits that hold on this machine's cgroups (v1
# or v2), through a real `xpool dev` and its local agent:
#  - a task that allocates 400 MiB under --memory 64Mi is killed by the
#    kernel and the job fails with reason oom, exit code 137 (SIGKILL), in
#    `xpool job` and `xpool jobs`; one that stays under its limit succeeds;
#  - `--cpu 1` gets one CPU of its own: `nproc` in the task prints 1
#    (where cpusets are available);
#  - the tasks' cgroups are gone once their exits are reported.
# Skips (exit 77, ctest's SKIP_RETURN_CODE) when `xpool dev` is absent or
# this machine's cgroups are not writable (dev then runs its agent with
# limits off and says so), or when swap is on but not accounted.
# usage: cli_limits.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
XP=$1 SRC=$3
HOG=$(dirname "$XP")/xp-memhog

[ -x "$HOG" ] || { echo "FAIL: $HOG is missing (built with the tests)"; exit 1; }
. "$SRC/tests/devlib.sh"
need_dev
start_dev --cluster "$SRC/examples/clusters/small.yaml"
if grep -q '^local agent: CPU and memory limits off' "$T/dev.out"; then
	echo "SKIP: cgroups are not writable here: $(grep '^local agent: CPU and memory limits off' "$T/dev.out")"
	exit 77
fi
grep -q '^local agent: CPU and memory limits: cgroup v[12] at ' "$T/dev.out" ||
	{ echo "FAIL: dev did not say which limits hold: $(cat "$T/dev.out")"; exit 1; }

# the local agent's node: source "agent", ready
agent_node
LOG=$T/data/agent.log
if ! grep -q 'limits: cgroup v[12] at .*(memory+swap' "$LOG" && awk 'NR > 1' /proc/swaps | grep -q .; then
	echo "SKIP: swap is on and the memory cgroup does not account it: $(grep 'limits:' "$LOG")"
	exit 77
fi
run node "$NODE"
grep -q '^Labels:.*limits=cgroup-v[12]' "$T/out" || fail "node label limits: $(cat "$T/out")"

submitted() { sed -n 's/^job \([0-9]*\) submitted.*/\1/p' "$T/out"; }

# over its memory limit: the kernel kills it, the job says oom
run submit --node "$NODE" --cpu 500m --memory 64Mi -- "$HOG" 400
expect 0 "submit the 400 MiB task"
J1=$(submitted)
# within it: the same program succeeds
run submit --node "$NODE" --cpu 500m --memory 64Mi -- "$HOG" 16
J2=$(submitted)
# one whole CPU: nproc sees one
run submit --node "$NODE" --cpu 1 --memory 64Mi -- nproc
J3=$(submitted)
if wait_state "$J1" failed; then
	run job "$J1"
	grep -q '^Reason: *oom: replica 0 went over its memory limit of 64 MiB$' "$T/out" ||
		fail "job $J1 reason: $(cat "$T/out")"
	grep -q '^Exit code: *137 (SIGKILL)$' "$T/out" || fail "job $J1 exit code: $(cat "$T/out")"
	run jobs
	grep -q "^$J1 .* failed .*oom: replica 0 went over its memory limit" "$T/out" ||
		fail "jobs REASON of $J1: $(cat "$T/out")"
	run job "$J1" -o json
	grep -q '"end_reason": "oom"' "$T/out" || fail "job $J1 end_reason: $(cat "$T/out")"
fi
if wait_state "$J2" succeeded; then
	run logs "$J2"
	grep -q '^xp-memhog: holding 16 MiB$' "$T/out" || fail "job $J2 output: $(cat "$T/out")"
fi
if ! grep -q 'limits: cgroup v[12] at .*, cpuset [0-9]' "$LOG"; then
	echo "note: no cpusets here ($(grep 'limits:' "$LOG")): nproc not checked"
elif wait_state "$J3" succeeded; then
	run logs "$J3"
	[ "$(cat "$T/out")" = 1 ] || fail "nproc under --cpu 1 printed '$(cat "$T/out")', want 1"
fi

# their cgroups go when their exits are reported (60 s at most)
for j in "$J1" "$J2" "$J3"; do
	name=$(sed -n "s/.*job=$j replica=0 attempt=1: started pid [0-9]* in cgroup \([^ ]*\)$/\1/p" "$LOG")
	[ -n "$name" ] || { fail "job $j: the agent did not say which cgroup: $(cat "$LOG")"; continue; }
	gone() { ! ls -d /sys/fs/cgroup/memory/xpool/"$1" /sys/fs/cgroup/xpool/"$1" >/dev/null 2>&1; }
	until_ok 60 gone "$name" || fail "cgroup $name of job $j is still there"
done

[ "$fails" = 0 ] || { echo "--- the agent said:"; cat "$LOG"; exit 1; }
echo "cli_limits: all passed (agent node $NODE, $(sed -n 's/.*limits: \(cgroup v[12]\).*/\1/p' "$LOG" | head -n 1))"
