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
#  - a rolling update (max_surge 1, max_unavailable 0), a canary at 50 %
#    and a rollback under the same load fail 0 requests, and HAProxy
#    serves both versions during the canary; a version that never gets
#    ready leaves the old replicas in place;
#  - a controller restart keeps the services, their counts and the rollout
#    in progress, which then finishes with no replica duplicated; delete
#    cancels the replicas.
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
HAP= SYNC= LOADPID= STREAM=
cleanup() {
	for p in $LOADPID $SYNC $HAP $STREAM; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
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
PORT2=$((PORT + 1))
while curl -s -o /dev/null "http://127.0.0.1:$PORT2/"; [ $? -ne 7 ]; do PORT2=$((PORT2 + 1)); done
cat >"$T/auto.yaml" <<EOF
kind: service
name: auto
replicas: {min: 1, max: 4}
port: $PORT2
readiness: {http: /healthz, period: 200ms}
drain: 1s
autoscale: {metric: inflight, target: 2, period: 500ms, down_window: 3s, predict: 30s}
template:
  node: $NODE
  resources: {cpu: 100m, memory: 64}
  command: [$SVC]
  env: {SVC_MS: "100"}
EOF
run service create "$T/auto.yaml"
expect 0 "service create auto"
bad 'autoscale.metric' "kind: service
name: b
replicas: {min: 1, max: 2}
autoscale: {metric: gpu_temp, target: 1}
template: {command: [true]}"
bad 'autoscale.target: expected a number above 0' "kind: service
name: b
replicas: {min: 1, max: 2}
autoscale: {metric: rps, target: 0}
template: {command: [true]}"
bad "port: $PORT is service web's" "kind: service
name: other
port: $PORT
template: {command: [true]}"
run services
[ "$(grep -c . "$T/out")" -eq 3 ] || fail "a refused service was created: $(cat "$T/out")"

ready_count() { "$XP" service endpoints "${2:-web}" -o json 2>/dev/null | jq -e ".endpoints | length == $1" >/dev/null; }
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
# a long poll on the endpoints answers when they change, before its 30 s
V=$("$XP" service endpoints web -o json | jq .version)
curl -sf -H "Authorization: Bearer $XPOOL_TOKEN" \
	"$XPOOL_ADDR/v1/services/web/endpoints?since=$V&wait=30" >"$T/poll.out" &
POLL=$!
# and a stream of them: the first event now, one for each change
curl -sN -H "Authorization: Bearer $XPOOL_TOKEN" -H "Accept: text/event-stream" \
	"$XPOOL_ADDR/v1/services/web/endpoints" >"$T/stream.out" 2>/dev/null &
STREAM=$!
streamed() { [ "$(grep -c '^event: endpoints' "$T/stream.out")" -ge "$1" ]; }
until_ok 20 streamed 1 || fail "the endpoints stream sent no first event"
run service scale web 4 --reason "test: more"
expect 0 "scale 4"
polled() { ! kill -0 "$POLL" 2>/dev/null; }
until_ok 20 polled || fail "the endpoints' long poll did not answer on a change"
wait "$POLL"
jq -e ".version > $V" "$T/poll.out" >/dev/null || fail "the long poll's answer: $(cat "$T/poll.out")"
four() { grep '^data: ' "$T/stream.out" | tail -n 1 | sed 's/^data: //' | jq -e '.endpoints | length == 4' >/dev/null; }
until_ok 60 four || fail "the endpoints stream did not follow the scale-up: $(tail -c 400 "$T/stream.out")"
kill "$STREAM" 2>/dev/null
wait "$STREAM" 2>/dev/null
until_ok 60 ready_count 4 || fail "web did not reach 4 ready: $("$XP" service get web 2>&1)"
synced() { [ "$(grep -c ' ready$' "$T/sync.log")" -ge "$1" ]; }
until_ok 30 synced 4 || fail "proxy-sync did not add 4: $(cat "$T/sync.log")"
# the minimum (1) is protected from reclaim; the replicas above it borrow
prot=$("$XP" jobs -o json | jq '[.jobs[] | select(.name == "web-v1" and .state == "running" and .spec.qos == "protected")] | length')
[ "$prot" = 1 ] || fail "web at 4 of min 1: $prot protected replicas, want 1"
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

# ---- a rolling update, a canary, a rollback, under load through HAProxy ----
webdef() { # VERSION [EXTRA-ENV]
	sed -e "s|command: \[$SVC\]|command: [$SVC]\n  env: {SVC_VERSION: \"$1\"${2:-}}|" "$T/web.yaml"
}
versions() { "$XP" service endpoints web -o json | jq -r '[.endpoints[].version] | map(tostring) | join(",")'; }
rm -f "$T/stop"
"$LOAD" 127.0.0.1 "$PORT" 8 600 "$T/stop" >"$T/load3.out" 2>"$T/load3.err" &
LOADPID=$!
run service scale web 2
expect 0 "scale 2"
until_ok 60 ready_count 2 || fail "web not at 2 before the update"
# version 2 with no surge: one old replica drained at a time, then replaced
{ webdef 2; echo "update: {max_surge: 0, max_unavailable: 1}"; } >"$T/web2.yaml"
run service update web "$T/web2.yaml"
expect 0 "service update web (version 2, max_surge 0)"
rolled() { [ "$(versions)" = "2,2" ] && "$XP" service get web -o json | jq -e '.status == "ready"' >/dev/null; }
until_ok 90 rolled || fail "the rolling update did not finish: $("$XP" service get web 2>&1)"
through_v() { curl -sf "http://127.0.0.1:$PORT/" | grep -q "version=$1"; }
until_ok 30 through_v 2 || fail "haproxy does not serve version 2"
# a canary: version 3 on 1 replica beside the 2 of version 2, half the traffic
webdef 3 >"$T/web3.yaml"
run service update web "$T/web3.yaml" --canary 1 --weight 50
expect 0 "service update web --canary 1 --weight 50"
webdef 9 >"$T/web9.yaml"
run service update web "$T/web9.yaml"
[ "$rc" -ne 0 ] && grep -q 'canary: version 3 is held as a canary' "$T/err" ||
	fail "another version during a canary: rc $rc $(cat "$T/err")"
canary_up() { [ "$(versions | tr ',' '\n' | sort | tr '\n' ' ')" = "2 2 3 " ]; }
until_ok 60 canary_up || fail "the canary did not come up beside the old version: $(versions)"
run service get web -o json
jq -e '.status == "canary" and .version == 3' "$T/out" >/dev/null || fail "canary status: $(cat "$T/out")"
"$XP" service endpoints web -o json | jq -e '[.endpoints[] | select(.version == 3) | .weight] == [256]' >/dev/null ||
	fail "the canary's weight: $("$XP" service endpoints web -o json)"
both() { for i in 1 2 3 4 5 6 7 8 9 10 11 12; do curl -sf "http://127.0.0.1:$PORT/"; done | grep -o 'version=[0-9]' | sort -u | tr '\n' ' ' | grep -q 'version=2 version=3'; }
until_ok 30 both || fail "haproxy does not split the traffic between versions 2 and 3"
run service rollback web
expect 0 "service rollback web"
back() { [ "$(versions)" = "2,2" ] && "$XP" service get web -o json | jq -e '.status == "ready" and .version == 2' >/dev/null; }
until_ok 60 back || fail "the rollback did not come back to version 2: $(versions) $("$XP" service get web 2>&1)"
: >"$T/stop"
wait "$LOADPID"
lrc=$?
LOADPID=
read -r _ sent _ okn _ failed <"$T/load3.out"
echo "load through haproxy during a rolling update, a canary and a rollback: $sent requests, $failed failed"
[ "$lrc" -eq 0 ] && [ "${failed:-1}" -eq 0 ] || fail "requests failed during the update: $(cat "$T/load3.out" "$T/load3.err")"
# a version that never gets ready: the old replicas stay (max_unavailable 0)
webdef 4 ", SVC_UNREADY: \"$T/unready\"" >"$T/web4.yaml"
: >"$T/unready"
run service update web "$T/web4.yaml"
expect 0 "service update web (version 4, not ready)"
stuck() { "$XP" service get web -o json | jq -e '.status == "progressing" and .version == 4 and (.message | test("rolling out version 4"))' >/dev/null && [ "$(versions)" = "2,2" ]; }
until_ok 60 stuck || fail "an unready version took the old replicas away: $(versions) $("$XP" service get web -o json)"

# ---- the autoscaler: 8 clients, 100 ms a request, 2 in flight a replica wanted ----
until_ok 60 ready_count 1 auto || fail "auto has no ready endpoint: $("$XP" service get auto 2>&1)"
through2() { curl -sf "http://127.0.0.1:$PORT2/" | grep -q '^job='; }
until_ok 30 through2 || fail "no answer from auto through haproxy: $(cat "$T/sync.log")"
rm -f "$T/stop"
t0=$(date +%s%N)
"$LOAD" 127.0.0.1 "$PORT2" 8 600 "$T/stop" >"$T/load2.out" 2>"$T/load2.err" &
LOADPID=$!
ready_atleast() { "$XP" service endpoints auto -o json 2>/dev/null | jq -e ".endpoints | length >= $1" >/dev/null; }
until_ok 60 ready_atleast 2 || fail "auto did not grow under load: $("$XP" service get auto 2>&1)"
t1=$(date +%s%N)
echo "autoscaler: load step to a second ready replica in $(( (t1 - t0) / 1000000 )) ms"
grown() { "$XP" service get auto -o json | jq -e '.replicas.desired == 4 and .replicas.ready == 4' >/dev/null; }
until_ok 60 grown || fail "auto did not reach 4 under 8 clients: $("$XP" service get auto 2>&1)"
: >"$T/stop"
wait "$LOADPID"
lrc=$?
LOADPID=
shrunk() { "$XP" service get auto -o json | jq -e '.replicas.desired == 1' >/dev/null; }
until_ok 60 shrunk || fail "auto did not come back to 1 without load: $("$XP" service get auto 2>&1)"
read -r _ sent _ okn _ failed <"$T/load2.out"
echo "load through haproxy while autoscaling 1 -> 4 -> 1: $sent requests, $failed failed"
[ "$lrc" -eq 0 ] && [ "${failed:-1}" -eq 0 ] || fail "requests failed while autoscaling: $(cat "$T/load2.out" "$T/load2.err")"
run service get auto
grep -q 'autoscaler: inflight .* measured, .* forecast 30s ahead) .* -> 4 replicas' "$T/out" &&
	grep -q 'autoscaler: inflight .* -> 1 replicas' "$T/out" ||
	fail "the scalings and their reasons are not shown: $(cat "$T/out")"

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

# ---- replicas that run but do not pass their check: said, not silent;
# the check a shell command (XPOOL_PORT in its environment) ----
cat >"$T/never.yaml" <<EOF
kind: service
name: never
readiness: {command: "curl -sf -o /dev/null http://127.0.0.1:\$XPOOL_PORT/healthz", period: 200ms}
template:
  node: $NODE
  resources: {cpu: 100m, memory: 64}
  command: [$SVC]
  env: {SVC_UNREADY: "$T/never-unready"}
EOF
: >"$T/never-unready"
run service create "$T/never.yaml"
expect 0 "service create never"
unready_said() { "$XP" service get never -o json | jq -e '.status == "progressing" and (.message | test("1 running replica\\(s\\) not ready: the readiness command"))' >/dev/null; }
until_ok 60 unready_said || fail "replicas that never get ready are not reported: $("$XP" service get never -o json)"
rm -f "$T/never-unready"
until_ok 60 ready_count 1 never || fail "the readiness command never passed: $("$XP" service get never -o json)"
run service delete never
expect 0 "service delete never"

# ---- a controller restart keeps the services and their counts ----
stop_server
start_dev --cluster "$SRC/examples/clusters/small.yaml"
agent_node
run service get web -o json
jq -e '.replicas.desired == 2 and .version == 4' "$T/out" >/dev/null || fail "after restart: $(cat "$T/out")"
# the rollout resumes: still held while version 4 is not ready, then done
until_ok 60 stuck || fail "after the restart the rollout did not hold: $(versions) $("$XP" service get web -o json | jq -c "{status,message,version,replicas,jobs}") $("$XP" jobs --all 2>&1 | tail -8)"
rm -f "$T/unready"
done4() { [ "$(versions)" = "4,4" ] && "$XP" service get web -o json | jq -e '.status == "ready" and (.jobs | length) == 2' >/dev/null; }
until_ok 90 done4 || fail "the rollout did not finish after the restart: $(versions) $("$XP" service get web 2>&1)"

run service delete web
expect 0 "service delete web"
grep -q 'service web deleted' "$T/out" || fail "delete: $(cat "$T/out")"
run service get web
[ "$rc" -ne 0 ] && grep -q 'no service web' "$T/err" || fail "web still there: $(cat "$T/out" "$T/err")"
run service delete crash
expect 0 "service delete crash"
run service delete auto
expect 0 "service delete auto"

if [ "$fails" -gt 0 ]; then
	echo "cli_services: $fails failure(s)"
	exit 1
fi
echo "cli_services: ok"
