#!/bin/sh
# cli_services_restart: a controller restart in the middle of a rolling
# update, with the replicas running on (issue 22, "Restart"). A real
# `xpool server` and a separate real `xpool agent` (which keeps its tasks
# while the controller is away); the test service as replicas.
#  - a service at 2 replicas of version 1; an update to version 2 whose
#    replicas never pass their check holds the rollout (max_unavailable 0);
#  - the controller is stopped and started again on the same data and port;
#  - afterwards the same version-1 replica jobs still run and serve (none
#    lost, none added), the rollout is still held, and once version 2 gets
#    ready it finishes: exactly 2 replicas of version 2, every replica job
#    of the service accounted for (2 of version 1 replaced, 2 of version 2;
#    a third version-2 job only if one was replaced).
# usage: cli_services_restart.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
XP=$1 SRC=$3
BIN=$(dirname "$XP")
SVC=$BIN/xp-svc-http
[ -x "$SVC" ] || { echo "FAIL: $SVC missing (built with the tests)"; exit 1; }
. "$SRC/tests/devlib.sh" # T, fail, until_ok (its dev server is not used)
SPID= APID=
cleanup() {
	[ -n "$APID" ] && kill "$APID" 2>/dev/null && wait "$APID" 2>/dev/null # --stop-tasks
	[ -n "$SPID" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
PORT=$((25000 + $$ % 9000))
while curl -s -o /dev/null "http://127.0.0.1:$PORT/"; [ $? -ne 7 ]; do PORT=$((PORT + 1)); done
export XPOOL_ADDR="http://127.0.0.1:$PORT"
server() {
	"$XP" server --data "$T/data" --listen "127.0.0.1:$PORT" --heartbeat 500ms \
		>>"$T/server.log" 2>&1 &
	SPID=$!
	ready() { curl -sf "$XPOOL_ADDR/readyz" >/dev/null && [ -s "$T/data/admin.token" ]; }
	until_ok 60 ready || { echo "FAIL: the server did not start: $(tail -5 "$T/server.log")"; exit 1; }
	XPOOL_TOKEN=$(cat "$T/data/admin.token")
	export XPOOL_TOKEN
}
server
printf 'nodes:\n  - name: host-0\n    cpu: 4\n    memory: 8Gi\n' >"$T/devices.yaml"
"$XP" agent --server "$XPOOL_ADDR" --token-file "$T/data/admin.token" --node-name host-0 \
	--devices "$T/devices.yaml" --work "$T/work" --no-limits --stop-tasks \
	--ports 33000-33999 >"$T/agent.log" 2>&1 &
APID=$!
node_up() { "$XP" nodes -o json 2>/dev/null | jq -e '.nodes[] | select(.name == "host-0" and .state == "ready")' >/dev/null; }
until_ok 60 node_up || { echo "FAIL: the agent's node is not ready: $(tail -5 "$T/agent.log")"; exit 1; }

svcdef() { # VERSION [UNREADY-FILE]
	cat <<EOF
kind: service
name: web
replicas: 2
readiness: {http: /healthz, period: 200ms}
drain: 500ms
template:
  node: host-0
  resources: {cpu: 100m, memory: 64}
  command: [$SVC]
  env: {SVC_VERSION: "$1", SVC_UNREADY: "${2:-$T/none}"}
EOF
}
versions() { "$XP" service endpoints web -o json 2>/dev/null | jq -r '[.endpoints[].version] | map(tostring) | join(",")'; }
jobs_of() { "$XP" jobs --all -o json | jq -r "[.jobs[] | select(.name == \"web-v$1\" and .state == \"$2\") | .id] | sort | map(tostring) | join(\",\")"; }
svcdef 1 >"$T/v1.yaml"
"$XP" service create "$T/v1.yaml" >/dev/null || fail "service create"
v1() { [ "$(versions)" = "1,1" ]; }
until_ok 60 v1 || fail "version 1 not serving: $(versions)"
: >"$T/unready"
svcdef 2 "$T/unready" >"$T/v2.yaml"
"$XP" service update web "$T/v2.yaml" >/dev/null || fail "service update"
held() { "$XP" service get web -o json | jq -e '.version == 2 and .status == "progressing"' >/dev/null && [ "$(versions)" = "1,1" ] && [ -n "$(jobs_of 2 running)" ]; }
until_ok 60 held || fail "the rollout is not held: $(versions) $("$XP" service get web -o json | jq -c '{status, message}')"
old=$(jobs_of 1 running)
new=$(jobs_of 2 running)

# the controller goes away and comes back; the agent and its replicas stay
kill "$SPID" && wait "$SPID"
SPID=
server
until_ok 60 node_up || fail "the node is not back"
after() { [ "$(versions)" = "1,1" ] && "$XP" service get web -o json | jq -e '.version == 2 and .status == "progressing"' >/dev/null; }
until_ok 60 after || fail "after the restart: $(versions) $("$XP" service get web -o json | jq -c '{status, message, jobs}')"
[ "$(jobs_of 1 running)" = "$old" ] || fail "version 1's replicas changed across the restart: $old -> $(jobs_of 1 running)"
[ "$(jobs_of 2 running)" = "$new" ] || fail "version 2's replicas changed across the restart: $new -> $(jobs_of 2 running)"

rm -f "$T/unready"
done2() { [ "$(versions)" = "2,2" ] && "$XP" service get web -o json | jq -e '.status == "ready"' >/dev/null; }
until_ok 60 done2 || fail "the rollout did not finish: $(versions) $("$XP" service get web -o json | jq -c '{status, message}')"
count() { "$XP" jobs --all -o json | jq "[.jobs[] | select($1)] | length"; }
replaced() { [ "$(count '.name == "web-v1" and .state == "cancelled"')" = 2 ]; }
# the last old replica is drained, then cancelled
until_ok 30 replaced || fail "version 1: $(count '.name == "web-v1" and .state == "cancelled"') replicas replaced, want 2"
n2=$(count '.name == "web-v2"')
[ "$n2" = 2 ] || fail "version 2: $n2 replica jobs, want 2 (none duplicated by the restart)"
if [ "$fails" -gt 0 ]; then
	echo "--- server"; tail -20 "$T/server.log"; echo "--- agent"; tail -20 "$T/agent.log"
	echo "cli_services_restart: $fails failure(s)"
	exit 1
fi
echo "cli_services_restart: version 1's replicas $old ran through the restart; version 2 finished"
