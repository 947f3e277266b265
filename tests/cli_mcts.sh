#!/bin/sh
# cli_mcts: the controller's batch search (issue 24; docs/design/batch-cycle.md)
# through a real `xpool dev` on loopback, one emulated node of 8 GPUs:
#  - --optimise and --budget reject bad values naming the flag, and a
#    policy without a batch optimiser; the config file takes both keys;
#  - --optimise mcts --budget 10ms serves and searches (/metrics);
#  - with the config keys optimise: mcts, budget: 1s, a job of 8 GPUs (B) and one of 4
#    (A, ahead of it) wait behind a job holding the node (C); when C is
#    cancelled both are planned in one batch: B starts, A waits, and
#    `xpool explain A` says the search placed another job first, naming B;
#  - with --optimise none (greedy xpool) the same steps start A instead.
# Behaviour only: no timing is asserted.
# usage: cli_mcts.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
XP=$1 SRC=$3

. "$SRC/tests/devlib.sh"
need_dev

cat >"$T/one.yaml" <<'YAML'
version: 1
nodes:
  - name: g8
    cpu: 64
    memory: 256Gi
    devices:
      - {type: gpu, vendor: NVIDIA, model: A100-SXM4-80GB, count: 8, memory: 80Gi}
YAML

# flags: refused with the flag and the reason; bad WANT1 WANT2 FLAGS...
bad() {
	w1=$1 w2=$2
	shift 2
	"$XP" dev --data "$T/bad" --listen 127.0.0.1:0 --no-agent --cluster "$T/one.yaml" "$@" \
		>"$T/out" 2>"$T/err" </dev/null &
	bp=$!
	# a refused flag exits at once; a server that came up is a failure
	until_ok 30 sh -c "! kill -0 $bp 2>/dev/null"
	if kill -0 "$bp" 2>/dev/null; then
		kill "$bp"
		wait "$bp"
		fail "dev $* came up"
		return
	fi
	wait "$bp"
	rc=$?
	[ "$rc" = 2 ] || fail "dev $*: exit $rc, want 2: $(cat "$T/err")"
	grep -q -- "$w1" "$T/err" || fail "dev $*: no '$w1' in: $(cat "$T/err")"
	grep -q -- "$w2" "$T/err" || fail "dev $*: no '$w2' in: $(cat "$T/err")"
}
bad "--optimise: expected mcts or none" "magic" --optimise magic
bad "--budget: expected rollouts" "10parsecs" --optimise mcts --budget 10parsecs
bad "--budget" "100000" --optimise mcts --budget 100001
bad "--budget: expected rollouts" "0ms" --optimise mcts --budget 0ms
bad "--budget: goes with --optimise mcts" "budget" --budget 10ms
bad "--optimise mcts: " "--policy bestfit has no batch optimiser" --optimise mcts --policy bestfit

submitted() { sed -n 's/^job \([0-9]*\) submitted.*/\1/p' "$T/out"; }
is_pending() { "$XP" job "$1" -o json 2>/dev/null | grep -q '"state": "pending"'; }

# C holds the node; A (4 GPUs) then B (8 GPUs) wait; C goes: one batch
scenario() {
	run submit --gpus 8 --cpu 1 --memory 1Gi --name C
	expect 0 "submit C"
	C=$(submitted)
	wait_state "$C" running || return 1
	run submit --gpus 4 --cpu 1 --memory 1Gi --name A
	A=$(submitted)
	run submit --gpus 8 --cpu 1 --memory 1Gi --name B
	B=$(submitted)
	until_ok 60 is_pending "$A" && until_ok 60 is_pending "$B" ||
		fail "A and B are not both pending behind C"
	run cancel "$C"
	expect 0 "cancel C"
}

# --budget 10ms: it serves, searches and says how many rollouts it gives a search
start_dev --no-agent --cluster "$T/one.yaml" --optimise mcts --budget 10ms
run submit --gpus 2 --cpu 1 --memory 1Gi
expect 0 "submit under --budget 10ms"
wait_state "$(submitted)" running
metrics() {
	curl -fsS -H "Authorization: Bearer $XPOOL_TOKEN" "$XPOOL_ADDR/metrics" >"$T/metrics"
}
search_seen() { metrics && grep -q '^xpool_search_batches_total [1-9]' "$T/metrics"; }
until_ok 60 search_seen || fail "--budget 10ms: no search on /metrics: $(grep search "$T/metrics")"
grep -q '^xpool_search_budget_rollouts [1-9]' "$T/metrics" ||
	fail "--budget 10ms: no rollouts budget on /metrics: $(grep search "$T/metrics")"
stop_server
rm -rf "$T/data"

# the keys in a config file; a time budget generous enough that even a slow
# (sanitizer) build gives each search more than the greedy plan
printf 'optimise: mcts\nbudget: 1s\n' >"$T/config.yaml"
start_dev --no-agent --cluster "$T/one.yaml" --config "$T/config.yaml"
scenario
if wait_state "$B" running; then
	run job "$A" -o json
	grep -q '"state": "pending"' "$T/out" || fail "A should wait: $(cat "$T/out")"
	grep -q '"pending_reason": "Search"' "$T/out" || fail "A's reason: $(cat "$T/out")"
	run explain "$A"
	expect 0 "explain A"
	grep -q "^job $A is pending (Search)" "$T/out" || fail "explain A: $(cat "$T/out")"
	grep -q "batch search placed 1 other job of its batch instead (job $B first)" "$T/out" ||
		fail "explain A names B: $(cat "$T/out")"
	run explain "$A" -o json
	grep -q "\"first\": $B" "$T/out" || fail "explain -o json search.first: $(cat "$T/out")"
	run jobs
	grep -q "^$A .*Search" "$T/out" || fail "jobs REASON of A: $(cat "$T/out")"
	# B ends: A starts
	run cancel "$B"
	wait_state "$A" running
fi
stop_server
rm -rf "$T/data"

# greedy: the same steps start A (ahead in the order), B waits
start_dev --no-agent --cluster "$T/one.yaml" --optimise none --policy xpool
scenario
if wait_state "$A" running; then
	run job "$B" -o json
	grep -q '"state": "pending"' "$T/out" || fail "greedy: B should wait: $(cat "$T/out")"
	grep -q '"pending_reason": "Search"' "$T/out" && fail "greedy: B says Search"
fi
stop_server

[ "$fails" = 0 ] || exit 1
echo "cli_mcts: all passed"
