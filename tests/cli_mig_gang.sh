#!/bin/sh
# cli_mig_gang: gangs of MIG slices and the MIG mode leave through a real
# `xpool dev` with two emulated nodes of two A100-80GB in mode mig:
#  - two `xpool submit --replicas 3 --colocate node --mig 3g.40gb` run
#    each on one node, each replica its own slice (the job's allocations
#    and `xpool devices --mig`); then a gang of 2 x 3g on one node fits no
#    node (one 3g left on each): none of its replicas is placed and
#    `xpool explain` says one replica fits but not all, while the same
#    gang spread out runs at once; the colocated one starts, whole, once
#    a first gang is cancelled (its three slices freed together);
#  - a spread gang of 4 x 7g.80gb takes the four GPUs at once;
#  - `xpool nodes set NODE --mig-mode-change allow|deny` is journaled and
#    shown (`xpool node NODE -o json`), a bad value is refused (exit 2)
#    and an unknown node answers 404 (exit 1).
# Skips (exit 77) when `xpool dev` is absent.
# usage: cli_mig_gang.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
XP=$1 SRC=$3

. "$SRC/tests/devlib.sh"
need_dev
cat >"$T/cluster.yaml" <<'YAML'
version: 1
nodes:
  - name: ga
    cpu: 32
    memory: 256Gi
    devices:
      - {type: gpu, vendor: NVIDIA, model: A100-SXM4-80GB, count: 2, memory: 80Gi, mode: mig}
  - name: gb
    cpu: 32
    memory: 256Gi
    devices:
      - {type: gpu, vendor: NVIDIA, model: A100-SXM4-80GB, count: 2, memory: 80Gi, mode: mig}
YAML
start_dev --cluster "$T/cluster.yaml"

submitted() { sed -n 's/^job \([0-9]*\) submitted.*/\1/p' "$T/out"; }

slices() { grep -c "\"size\": $1" "$T/out"; } # in a job's allocations only
one_node() { [ "$(grep -o '"node": "g[ab]"' "$T/out" | sort -u | wc -l)" = 1 ]; }

# two gangs of 3 x 3g.40gb on one node each: a node's two GPUs have four 3g placements
for i in 1 2; do
	run submit --replicas 3 --colocate node --mig 3g.40gb --duration 1h -- sleep 3600
	expect 0 "submit gang $i of 3 x 3g.40gb on one node"
	eval "G$i=\$(submitted)"
done
for G in $G1 $G2; do
	wait_state "$G" running
	run job "$G" -o json
	[ "$(slices 4)" = 3 ] || fail "gang $G: not 3 slices: $(cat "$T/out")"
	one_node || fail "gang $G: not on one node: $(cat "$T/out")"
done
run devices --mig
[ "$(grep -c "3g.40gb .*$G1/" "$T/out")" = 3 ] || fail "devices --mig: not 3 slices of $G1: $(cat "$T/out")"

# 2 x 3g on one node: each node has one 3g left, so none of it is placed; the
# same gang spread out takes the two that are left (the colocated one does not block it)
run submit --replicas 2 --colocate node --mig 3g.40gb --duration 1h -- sleep 3600
expect 0 "submit a colocated gang of 2"
G3=$(submitted)
run submit --replicas 2 --mig 3g.40gb --duration 1h -- sleep 3600
expect 0 "submit a spread gang of 2"
G4=$(submitted)
wait_state "$G4" running
run job "$G4" -o json
[ "$(slices 4)" = 2 ] || fail "gang $G4: not 2 slices: $(cat "$T/out")"
wait_line "$G3" '^State: *pending'
run job "$G3" -o json
[ "$(slices 4)" = 0 ] || fail "gang $G3: a replica was placed: $(cat "$T/out")"
run cancel "$G4"
run explain "$G3"
grep -q 'fit one replica but not all 2' "$T/out" || fail "explain $G3: $(cat "$T/out")"
run cancel "$G1"
expect 0 "cancel $G1"
wait_state "$G3" running
run job "$G3" -o json
[ "$(slices 4)" = 2 ] || fail "gang $G3: not 2 slices: $(cat "$T/out")"
one_node || fail "gang $G3: not on one node: $(cat "$T/out")"
run cancel "$G2"
run cancel "$G3"

run submit --replicas 4 --mig 7g.80gb --duration 1h -- sleep 3600
expect 0 "submit a gang of 4 x 7g.80gb"
G5=$(submitted)
wait_state "$G5" running
run job "$G5" -o json
[ "$(slices 8)" = 4 ] || fail "gang $G5: not 4 slices: $(cat "$T/out")"

# the admin's leave for MIG mode changes
run node ga -o json
grep -q '"mig_mode_change": "deny"' "$T/out" || fail "node ga: not deny by default: $(cat "$T/out")"
run nodes set ga --mig-mode-change allow
expect 0 "nodes set ga --mig-mode-change allow"
grep -q 'node ga: MIG mode changes allowed' "$T/out" || fail "nodes set: $(cat "$T/out")"
run node ga -o json
grep -q '"mig_mode_change": "allow"' "$T/out" || fail "node ga: not allow: $(cat "$T/out")"
run node ga
grep -q '^MIG modes: *allow' "$T/out" || fail "node ga: no 'MIG modes: allow': $(cat "$T/out")"
run nodes set ga --mig-mode-change maybe
expect 2 "nodes set --mig-mode-change maybe"
run nodes set nosuch --mig-mode-change deny
expect 1 "nodes set nosuch"
run nodes set ga --mig-mode-change deny
expect 0 "nodes set ga --mig-mode-change deny"
run node ga -o json
grep -q '"mig_mode_change": "deny"' "$T/out" || fail "node ga: not deny again: $(cat "$T/out")"

[ "$fails" = 0 ] || { echo "--- xpool dev said:"; cat "$T/dev.err"; exit 1; }
echo "cli_mig_gang: all passed"
