#!/bin/sh
# cli_mig: MIG slices through a real `xpool dev` with an emulated node whose
# two A100-80GB GPUs are in mode mig, and a node with a GPU without MIG:
#  - `xpool submit --mig any --device-memory 15Gi` gets the smallest profile
#    that fits (1g.20gb), shown in the job's allocation and in
#    `xpool devices --mig` (slices, instance, job); one that cannot be
#    placed says why in `xpool explain`;
#  - refused at submit, naming the field: any without a size, an unknown
#    profile (valid ones listed), a profile no node offers, any that no
#    profile covers, MIG on a GPU model without partitions;
#  - beside them, the other sharing modes in `xpool devices`: a T4
#    time-sliced into 3 replicas takes 3 one-GPU jobs and not a 4th, and
#    says what is not isolated.
# Skips (exit 77) when `xpool dev` is absent.
# usage: cli_mig.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
XP=$1 SRC=$3

. "$SRC/tests/devlib.sh"
need_dev
cat >"$T/cluster.yaml" <<'YAML'
version: 1
nodes:
  - name: mig
    cpu: 32
    memory: 256Gi
    devices:
      - {type: gpu, vendor: NVIDIA, model: A100-SXM4-80GB, count: 2, memory: 80Gi, mode: mig}
  - name: plain
    cpu: 32
    memory: 256Gi
    devices:
      - {type: gpu, vendor: NVIDIA, model: L4, count: 1, memory: 24Gi}
  - name: ts
    cpu: 32
    memory: 64Gi
    devices:
      - {type: gpu, vendor: NVIDIA, model: T4, memory: 16Gi, timeslice: {replicas: 3}}
YAML
start_dev --cluster "$T/cluster.yaml"

submitted() { sed -n 's/^job \([0-9]*\) submitted.*/\1/p' "$T/out"; }

run submit --mig any --device-memory 15Gi --duration 1h -- sleep 3600
expect 0 "submit --mig any --device-memory 15Gi"
J=$(submitted)
wait_state "$J" running
run job "$J" -o json
grep -q '"profile": "1g.20gb"' "$T/out" || fail "job $J: no 1g.20gb slice: $(cat "$T/out")"
run devices --mig
expect 0 "devices --mig"
grep -q '^MIG mig GPU 0 (A100-SXM4-80GB): slices \[' "$T/out" || fail "devices --mig header: $(cat "$T/out")"
grep -q "1g.20gb .*reserved *$J/0" "$T/out" || fail "devices --mig: no 1g.20gb with job $J: $(cat "$T/out")"
run devices --mig -o json
grep -q '"slices": "' "$T/out" || fail "devices --mig -o json: $(head -c 600 "$T/out")"
grep -q '"model": "L4"' "$T/out" && fail "devices --mig lists the L4"

# two whole-GPU slices by size: GPU 1 takes one, the other waits and says why
for i in 1 2; do
	run submit --mig any --device-memory 70Gi --duration 1h -- sleep 3600
	expect 0 "submit --mig any --device-memory 70Gi ($i)"
done
J2=$(submitted)
wait_line "$J2" '^State: *pending'
run explain "$J2"
grep -q 'MIG any (1 milli, 71680 MiB): none of the 2 GPUs offering it has a free placement' "$T/out" ||
	fail "explain $J2: $(cat "$T/out")"

# time-slicing: 3 replicas of the T4, each a third, the 4th job waits
for i in 1 2 3 4; do
	run submit --gpus 1 --node ts --duration 1h -- sleep 3600
	expect 0 "submit --gpus 1 --node ts ($i)"
done
J4=$(submitted)
wait_line "$J4" '^State: *pending'
run jobs -o json
[ "$(grep -c '"state": "running"' "$T/out")" -ge 3 ] || fail "timeslice: 3 replicas not running: $(cat "$T/out")"
run devices --node ts
grep -q 'timeslice x3 (not isolated: memory, compute)' "$T/out" || fail "devices --node ts: $(cat "$T/out")"
grep -q ' 1m  ' "$T/out" || fail "devices --node ts: free should be 1m (3 x 333): $(cat "$T/out")"

refused() { # WHAT FIELD TEXT ARGS...
	what=$1 field=$2 text=$3
	shift 3
	run submit "$@" -- true
	[ "$rc" != 0 ] || fail "$what: accepted"
	grep -q "$field" "$T/err" || fail "$what: no field $field: $(cat "$T/err")"
	grep -q "$text" "$T/err" || fail "$what: no '$text': $(cat "$T/err")"
}
refused "any without a size" resources.devices.mig "any needs a size" --mig any
refused "unknown profile" resources.devices.mig.profile "unknown MIG profile '3g.99gb' (valid: 1g.5gb" --mig 3g.99gb
refused "profile nobody offers" resources.devices.mig.profile "offered: 1g.10gb" --mig 3g.20gb
refused "any too large" resources.devices.mig "no MIG profile of a registered node has" --mig any --device-memory 100Gi
refused "a model without MIG" resources.devices.mig "MIG partitions" --mig 3g.40gb --model L4

[ "$fails" = 0 ] || { echo "--- xpool dev said:"; cat "$T/dev.err"; exit 1; }
echo "cli_mig: all passed"
