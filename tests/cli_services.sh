#!/bin/sh
# cli_services: services through a real `xpool dev`, its local agent, the
# test service (xp-svc-http) as replicas and a real HAProxy (issue 22):
#  - bad definitions are refused naming the field (min > max, a template
#    that sets replicas, a readiness path without '/', a port another
#    service has, a kind that is not service, an unknown key, a scale
#    outside min..max);
#  - a service's replica gets a port from its agent (XPOOL_PORT), passes
#    its HTTP readiness check and becomes an endpoint;
#  - `xpool service proxy-config` is a configuration HAProxy accepts, and
#    `xpool service proxy-sync` fills its slots: requests through HAProxy
#    reach every replica;
#  - scaling 1 -> 4 -> 1 under a closed-loop load of 8 clients through
#    HAProxy fails 0 requests: a replica leaving is drained first;
#  - a replica that keeps exiting is restarted with a back-off and the
#    service says why (status failing, the exit code) - it never loops
#    silently;
#  - a controller restart keeps the service and its count; delete cancels
#    the replicas.
# Skips (77) when haproxy is not installed (scripts/deps.sh installs it).
# usage: cli_services.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
XP=$1 SRC=$3
BIN=$(dirname "$XP")
SVC=$BIN/xp-svc-http LOAD=$BIN/xp-svc-load
if ! command -v haproxy >/dev/null 2>&1; then
	echo "SKIP: haproxy is not installed (scripts/deps.sh installs it)"
	exit 77
fi
[ -x "$SVC" ] && [ -x "$LOAD" ] || { echo "FAIL: $SVC or $LOAD missing (built with the tests)"; exit 1; }
. "$SRC/tests/devlib.sh"
HAP= SYNC= LOADPID=
cleanup() {
	for p in $LOADPID $SYNC $HAP; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	stop_server
	rm -rf "$T"
}
trap cleanup EXIT
start_dev --cluster "$SRC/examples/clusters/small.yaml"
agent_node

# a port nothing listens on, for the proxy's frontend
PORT=$((20000 + $$ % 9000))
while curl -s -o /dev/null "http://127.0.0.1:$PORT/"; [ $? -ne 7 ]; do PORT=$((PORT + 1)); done

# ---- bad definitions: refused, the field named, nothing created ----
bad() { # FIELD YAML
	printf '%s\n' "$2" >"$T/bad.yaml"
	run service create "$T/bad.yaml"
	[ "$rc" -ne 0 ] && grep -q "$1" "$T/err" || fail "bad service ($1): rc $rc: $(cat "$T/err")"
}
bad 'replicas: min (3) is above max (2)' "kind: service
name: b
replicas: {min: 3, max: 2}
template: {command: [true]}"
bad 'template.replicas' "kind: service
name: b
template: {command: [true], replicas: 2}"
bad "readiness.http: expected a path starting with '/'" "kind: service
name: b
readiness: {http: healthz}
template: {command: [true]}"
bad 'kind: expected service' "kind: job
name: b
template: {command: [true]}"
bad 'colour: unknown key' "kind: service
name: b
colour: red
template: {command: [true]}"
bad 'template: a service needs a template' "kind: service
name: b"

cat >"$T/web.yaml" <<EOF
kind: service
name: web
replicas: {min: 1, max: 4}
port: $PORT
readiness: {http: /healthz, period: 200ms}
drain: 1s
template:
  node: $NODE
  resources: {cpu: 100m, memory: 64}
  command: [$SVC]
EOF
run service create "$T/web.yaml"
expect 0 "service create web"
bad "port: $PORT is service web's" "kind: service
name: other
port: $PORT
template: {command: [true]}"
run services
[ "$(grep -c . "$T/out")" -eq 2 ] || fail "a refused service was created: $(cat "$T/out")"

ready_count() { "$XP" service endpoints web -o json 2>/dev/null | jq -e ".endpoints | length == $1" >/dev/null; }
until_ok 60 ready_count 1 || fail "web has no ready endpoint: $("$XP" service get web 2>&1)"
EP=$("$XP" service endpoints web -o json | jq -r '.endpoints[0] | "\(.address):\(.port)"')
curl -sf "http://$EP/" | grep -q '^job=' || fail "the replica at $EP does not answer"
run service scale web 9
[ "$rc" -ne 0 ] && grep -q 'replicas: expected 1..4' "$T/err" || fail "scale 9 of 1..4: $(cat "$T/err")"

# ---- HAProxy, configured and kept in step ----
run service proxy-config --socket "$T/hap.sock" --bind 127.0.0.1 --slots 8
expect 0 "proxy-config"
cp "$T/out" "$T/hap.cfg"
haproxy -c -f "$T/hap.cfg" >"$T/hapcheck" 2>&1 || fail "haproxy -c: $(cat "$T/hapcheck")"
haproxy -f "$T/hap.cfg" -db >"$T/hap.log" 2>&1 &
HAP=$!
until_ok 30 test -S "$T/hap.sock" || fail "haproxy did not start: $(cat "$T/hap.log")"
"$XP" service proxy-sync --socket "$T/hap.sock" --interval 100ms >"$T/sync.log" 2>&1 &
SYNC=$!
through() { curl -sf "http://127.0.0.1:$PORT/" | grep -q '^job='; }
until_ok 30 through || fail "no answer through haproxy: $(cat "$T/sync.log" "$T/hap.log")"

: >"$T/stop"
rm -f "$T/stop"
"$LOAD" 127.0.0.1 "$PORT" 8 600 "$T/stop" >"$T/load.out" 2>"$T/load.err" &
LOADPID=$!
run service scale web 4 --reason "test: more"
expect 0 "scale 4"
until_ok 60 ready_count 4 || fail "web did not reach 4 ready: $("$XP" service get web 2>&1)"
synced() { [ "$(grep -c ' ready$' "$T/sync.log")" -ge "$1" ]; }
until_ok 30 synced 4 || fail "proxy-sync did not add 4: $(cat "$T/sync.log")"
# every replica answers through the proxy
seen() { for i in 1 2 3 4 5 6 7 8; do curl -sf "http://127.0.0.1:$PORT/"; done | sort -u | grep -c '^job=' | grep -q '^4$'; }
until_ok 30 seen || fail "requests through haproxy do not reach all 4 replicas"
run service scale web 1 --reason "test: less"
expect 0 "scale 1"
gone() { [ "$(grep -c ' removed$' "$T/sync.log")" -ge 3 ] && ready_count 1; }
until_ok 60 gone || fail "scale-down did not finish: $(cat "$T/sync.log")"
cancelled() { [ "$("$XP" jobs --state cancelled -o json | jq '[.jobs[] | select(.name == "web-v1")] | length')" -ge 3 ]; }
until_ok 60 cancelled || fail "the drained replicas were not stopped"
: >"$T/stop"
wait "$LOADPID"
lrc=$?
LOADPID=
read -r _ sent _ okn _ failed <"$T/load.out"
echo "load through haproxy while scaling 1 -> 4 -> 1: $sent requests, $failed failed"
[ "$lrc" -eq 0 ] && [ "${failed:-1}" -eq 0 ] && [ "${sent:-0}" -gt 100 ] ||
	fail "requests failed while scaling: $(cat "$T/load.out" "$T/load.err")"

# ---- a replica that keeps exiting: back-off, and the reason shown ----
cat >"$T/crash.yaml" <<EOF
kind: service
name: crash
template:
  node: $NODE
  resources: {cpu: 100m, memory: 64}
  command: "exit 3"
EOF
run service create "$T/crash.yaml"
expect 0 "service create crash"
failing() { "$XP" service get crash -o json | jq -e '.status == "failing" and (.message | test("exited with code 3"))' >/dev/null; }
until_ok 90 failing || fail "crash-looping service not reported: $("$XP" service get crash -o json)"
run service get crash
grep -q 'failing' "$T/out" || fail "service get crash: $(cat "$T/out")"

# ---- a controller restart keeps the services and their counts ----
stop_server
start_dev --cluster "$SRC/examples/clusters/small.yaml"
agent_node
run service get web -o json
jq -e '.replicas.desired == 1 and .version == 1' "$T/out" >/dev/null || fail "after restart: $(cat "$T/out")"
until_ok 60 ready_count 1 || fail "web not ready again after the restart"

run service delete web
expect 0 "service delete web"
grep -q 'service web deleted' "$T/out" || fail "delete: $(cat "$T/out")"
run service get web
[ "$rc" -ne 0 ] && grep -q 'no service web' "$T/err" || fail "web still there: $(cat "$T/out" "$T/err")"
run service delete crash
expect 0 "service delete crash"

if [ "$fails" -gt 0 ]; then
	echo "cli_services: $fails failure(s)"
	exit 1
fi
echo "cli_services: ok"
