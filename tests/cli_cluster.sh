#!/bin/sh
# cli_cluster: `xpool cluster` - the product brief's descriptor loads as
# written, errors name file:line: path, and -o json loads back to the same
# cluster. usage: cli_cluster.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
XP=$1 SRC=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

cat >"$T/brief.yaml" <<'YAML'
resources:
  - type: GPU
    vendor: NVIDIA
    compute_capability: "8.0"
    memory_bandwidth: 600GB/s
    interconnect: NVLink
  - type: DPU
    offload_engines: [storage, network, security]
    rdma_capability: 200Gbps
YAML
"$XP" cluster -f "$T/brief.yaml" >"$T/out" 2>&1 || fail "the brief's example does not load: $(cat "$T/out")"
grep -q "1 nodes, 2 devices" "$T/out" || fail "brief summary: $(cat "$T/out")"

"$XP" cluster -f "$SRC/examples/clusters/small.yaml" >"$T/small.txt" || fail "small.yaml does not load"
grep -q "^12 nodes, 45 devices" "$T/small.txt" || fail "small.yaml summary: $(head -1 "$T/small.txt")"
"$XP" cluster -f "$SRC/examples/clusters/small.yaml" -o json >"$T/small.json" || fail "-o json"
"$XP" cluster -f "$T/small.json" >"$T/small2.txt" || fail "the JSON output does not load back"
cmp -s "$T/small.txt" "$T/small2.txt" || fail "JSON round trip changed the cluster"

printf 'nodes:\n  - name: a\n    cpu: 4\n    devices:\n      - type: gpu\n        memroy: 80Gi\n' >"$T/typo.yaml"
"$XP" cluster -f "$T/typo.yaml" >"$T/out" 2>&1 && fail "a misspelt key was accepted"
grep -q "typo.yaml:6: nodes\[0\].devices\[0\]" "$T/out" || fail "typo error lacks file:line: path: $(cat "$T/out")"
printf '{"nodes": [{"name": "a", "memory": -5}]}' >"$T/neg.json"
"$XP" cluster -f "$T/neg.json" >"$T/out" 2>&1 && fail "negative memory accepted"
grep -q "nodes\[0\].memory" "$T/out" || fail "json error lacks the path: $(cat "$T/out")"
"$XP" cluster >"$T/out" 2>&1; [ $? = 2 ] || fail "missing -f is not a usage error"
"$XP" cluster -f "$T/brief.yaml" -o xml >"$T/out" 2>&1; [ $? = 2 ] || fail "-o xml accepted"
"$XP" cluster --help | grep -q "usage: xpool cluster" || fail "--help"

[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "cli_cluster: all checks passed"
