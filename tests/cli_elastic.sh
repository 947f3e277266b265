#!/bin/sh
# cli_elastic: an elastic job through the CLI on `xpool dev` with one
# emulated node of 4 GPUs (no agent). `xpool submit --replicas 2..4` beside
# a fixed 2-GPU job starts at 2; `xpool job` shows "2 of 2..4"; the fixed
# job cancelled, it grows to 4; a job of higher priority makes it shrink to
# 2, not be preempted; `xpool explain` says its size and why, `xpool events`
# has the resizes; a bad range is refused naming replicas.min.
# usage: cli_elastic.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
XP=$1
. "$3/tests/devlib.sh"

cat >"$T/cluster.yaml" <<'EOF'
version: 1
nodes:
  - name: gpu-0
    cpu: 16
    memory: 64Gi
    devices:
      - {type: gpu, vendor: NVIDIA, model: A100-SXM4-80GB, count: 4, memory: 80Gi}
EOF
start_dev --no-agent --cluster "$T/cluster.yaml"

run submit -q --replicas 2 --gpus 1 --cpu 1 --memory 1Gi --name fixed
expect 0 "submit the fixed job"
A=$(cat "$T/out")
wait_state "$A" running
run submit -q --replicas 2..4 --gpus 1 --cpu 1 --memory 1Gi --name train
expect 0 "submit --replicas 2..4"
E=$(cat "$T/out")
wait_line "$E" "Replicas: *2 of 2\.\.4 (epoch 0, 0 resizes"

run cancel "$A"
expect 0 "cancel the fixed job"
wait_line "$E" "Replicas: *4 of 2\.\.4 (epoch 1, 1 resizes; last: grow"

run submit -q --replicas 2 --gpus 1 --cpu 1 --memory 1Gi --priority 10 --name urgent
expect 0 "submit the urgent job"
H=$(cat "$T/out")
wait_state "$H" running
wait_line "$E" "Replicas: *2 of 2\.\.4 (epoch 2, 2 resizes; last: shrink: job $H"
run job "$E" -o json
grep -q '"preemptions": 0' "$T/out" || fail "the elastic job was preempted: $(cat "$T/out")"
grep -q '"min": 2' "$T/out" || fail "the job JSON lacks elastic.min: $(cat "$T/out")"

run explain "$E"
expect 0 "explain"
grep -q "2 of 2..4 replicas, epoch 2, 2 resizes; last: shrink" "$T/out" ||
	fail "explain: $(cat "$T/out")"
run events --since 0 -o json
grep -c '"job.resized"' "$T/out" | grep -qx 2 || fail "events: $(grep -c job.resized "$T/out") resizes"

run submit --replicas 4..2 --gpus 1
[ "$rc" != 0 ] || fail "--replicas 4..2 was taken"
grep -q "replicas.min" "$T/err" || fail "the refusal does not name replicas.min: $(cat "$T/err")"

[ "$fails" -eq 0 ] || exit 1
echo "cli_elastic: ok"
