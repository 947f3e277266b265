#!/bin/sh
# cli_tls: TLS on every connection (issue 23, docs/design/tls.md), with a
# real controller on loopback:
#   - `xpool dev --tls`: its CA and certificate in DATA/tls (keys 0600),
#     the CLI with that CA submits, reads, follows the event stream (SSE);
#     the host agent joins over TLS with a bootstrap token, then runs a job
#     with its node credential and uploads its output (logs);
#   - plain HTTP to the TLS port gets no HTTP answer;
#   - a client with another CA is refused, naming the failed check;
#   - `xpool server --tls-cert/--tls-key` with a certificate for another
#     name: the host name check refuses it; the right name works;
#   - bad --tls-cert/--tls-key: a clear error naming the file, exit 1.
# Certificates are made here (xp-tls-certs, the controller's own code).
# usage: cli_tls.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
XP=$1 SRC=$3
CERTS=$(dirname "$XP")/xp-tls-certs

if ! "$XP" dev --help 2>/dev/null | grep -q -- '--tls '; then
	echo "SKIP: xpool dev --tls not available"
	exit 77
fi
. "$SRC/tests/devlib.sh"

# the CLI checks the controller against the dev CA from the first call on
XPOOL_CA=$T/data/tls/ca.pem
export XPOOL_CA
start_dev --tls --cluster "$SRC/examples/clusters/small.yaml"
case $XPOOL_ADDR in
https://127.0.0.1:*) ;;
*) fail "dev --tls printed address '$XPOOL_ADDR', want https://127.0.0.1:PORT" ;;
esac
HOSTPORT=${XPOOL_ADDR#https://}
for f in tls/ca.key tls/server.key client.config; do
	[ "$(stat -c %a "$T/data/$f" 2>/dev/null)" = 600 ] || fail "$f: mode $(stat -c %a "$T/data/$f" 2>&1), want 600"
done
grep -q "^addr: $XPOOL_ADDR\$" "$T/data/client.config" || fail "client.config: $(cat "$T/data/client.config")"
grep -q "XPOOL_CA=$XPOOL_CA" "$T/dev.out" || fail "dev did not print XPOOL_CA: $(cat "$T/dev.out")"

# (1) the CLI over TLS: the printed client config works as the user's
mkdir -p "$HOME/.config/xpool"
cp "$T/data/client.config" "$HOME/.config/xpool/config"
sed -i "s|^token_file: admin.token|token_file: $T/data/admin.token|; s|^ca: tls/|ca: $T/data/tls/|" "$HOME/.config/xpool/config"
(unset XPOOL_ADDR XPOOL_TOKEN XPOOL_CA && "$XP" nodes >"$T/out" 2>"$T/err")
rc=$?
expect 0 "nodes with DATA/client.config as the config file"
"$XP" events --follow >"$T/events.out" 2>"$T/events.err" &
EVPID=$!
# a long poll parked on the controller (a suspended TLS connection) until
# the submit below wakes it
run events --since 0
LAST=$(awk 'NR > 1 { s = $1 } END { print s }' "$T/out")
"$XP" events --since "$LAST" --wait 60 >"$T/poll.out" 2>"$T/poll.err" &
POLLPID=$!
run submit --cpu 100m --memory 64Mi -- true
expect 0 "submit over TLS"
J0=$(sed -n 's/^job \([0-9]*\) submitted.*/\1/p' "$T/out")
run job "$J0"
expect 0 "job $J0 over TLS"
ev_seen() { grep -q "job.submitted *job/$J0\b\|job.submitted.*\b$J0\b" "$T/events.out"; }
until_ok 60 ev_seen || fail "the event stream over TLS did not show job $J0: $(cat "$T/events.out" "$T/events.err")"
kill "$EVPID" 2>/dev/null
wait "$EVPID" 2>/dev/null
# it woke with what came after LAST (another event may come first: then
# the submit is read from the log)
wait "$POLLPID"
prc=$?
[ "$prc" = 0 ] && [ "$(awk -v l="$LAST" 'NR > 1 && $1 > l' "$T/poll.out" | wc -l)" -ge 1 ] ||
	fail "the long poll over TLS: exit $prc, $(cat "$T/poll.out" "$T/poll.err")"
in_log() { "$XP" events --since "$LAST" 2>/dev/null | grep -q "job.submitted *job/$J0\b"; }
until_ok 60 in_log || fail "job $J0 is not in the event log after $LAST"

# (4) the host agent joined over TLS with a bootstrap token and holds its
# node's credential; a job pinned to it runs and its output comes back
agent_node
grep -q '^xpn_' "$T/data/agent/node.credential" || fail "the agent holds no node credential"
grep -q -- "--ca\|https" "$T/data/agent.log" && grep -qi "verif" "$T/data/agent.log" &&
	fail "the agent logged a TLS failure: $(cat "$T/data/agent.log")"
run submit --node "$NODE" --cpu 100m --memory 64Mi -- sh -c 'echo "tls job=$XPOOL_JOB_ID"'
expect 0 "submit pinned to $NODE"
J1=$(sed -n 's/^job \([0-9]*\) submitted.*/\1/p' "$T/out")
if wait_state "$J1" succeeded; then
	run logs "$J1"
	grep -q "^tls job=$J1\$" "$T/out" || fail "the job's output over TLS: $(cat "$T/out") $(cat "$T/err")"
fi

# (2) plain HTTP to the TLS port: no HTTP answer
curl -sS -m 10 -o "$T/plain.out" -D "$T/plain.hdr" "http://$HOSTPORT/healthz" 2>"$T/plain.err"
crc=$?
[ "$crc" != 0 ] && ! grep -q '^HTTP/' "$T/plain.hdr" 2>/dev/null ||
	fail "plain HTTP to the TLS port: curl exit $crc, headers $(cat "$T/plain.hdr" 2>/dev/null)"
run nodes --addr "http://$HOSTPORT"
[ "$rc" != 0 ] && grep -q "an https:// controller?" "$T/err" || fail "xpool over http:// to the TLS port: exit $rc, $(cat "$T/err")"

# (3) a client trusting another CA is refused, naming the check
"$CERTS" ca "$T/other-ca.pem" "$T/other-ca.key" "another CA" || fail "xp-tls-certs ca"
XPOOL_CA=$T/other-ca.pem "$XP" nodes >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 1 ] && grep -q "failed verification against $T/other-ca.pem: .*issuer is unknown" "$T/err" ||
	fail "another CA: exit $rc, $(cat "$T/err")"
# an unreadable CA file: named, with the reason
run nodes --ca "$T/nope.pem"
[ "$rc" != 0 ] && grep -q "$T/nope.pem: No such file" "$T/err" || fail "--ca missing file: exit $rc, $(cat "$T/err")"
stop_server

# (5) xpool server --tls-cert/--tls-key, a certificate for "localhost"
# only: https://localhost verifies, https://127.0.0.1 is refused on its name
"$CERTS" cert "$T/data/tls/ca.pem" "$T/data/tls/ca.key" "$T/lh.pem" "$T/lh.key" localhost || fail "xp-tls-certs cert"
[ "$(stat -c %a "$T/lh.key")" = 600 ] || fail "the server key is mode $(stat -c %a "$T/lh.key")"
"$XP" server --data "$T/srv" --listen 127.0.0.1:0 --tls-cert "$T/lh.pem" --tls-key "$T/lh.key" >"$T/srv.out" 2>"$T/srv.err" &
PID=$!
srv_up() { grep -qs '^address: https://' "$T/srv.out"; }
until_ok 60 srv_up || { fail "xpool server --tls-cert printed no https address: $(cat "$T/srv.out" "$T/srv.err")"; exit 1; }
PORT=$(sed -n 's/^address: https:\/\/127.0.0.1:\([0-9]*\)$/\1/p' "$T/srv.out")
XPOOL_TOKEN=$(cat "$T/srv/admin.token")
export XPOOL_TOKEN
XPOOL_ADDR=https://localhost:$PORT
export XPOOL_ADDR
until_ok 60 "$XP" queues >/dev/null 2>"$T/err" || fail "https://localhost with a localhost certificate: $(cat "$T/err")"
run queues --addr "https://127.0.0.1:$PORT"
[ "$rc" = 1 ] && grep -q "failed verification.*does not match" "$T/err" ||
	fail "a certificate for localhost at 127.0.0.1: exit $rc, $(cat "$T/err")"
stop_server

# bad --tls-cert/--tls-key: exit 1 naming the file and the reason
for bad in "$T/none.pem $T/lh.key|--tls-cert: $T/none.pem: No such file" \
	"$T/lh.pem $T/none.key|--tls-key: $T/none.key: No such file" \
	"$T/lh.pem $T/other-ca.key|is not the key of --tls-cert" \
	"$T/lh.key $T/lh.key|--tls-cert"; do
	set -- ${bad%%|*}
	want=${bad#*|}
	"$XP" server --data "$T/bad" --listen 127.0.0.1:0 --tls-cert "$1" --tls-key "$2" >"$T/out" 2>"$T/err"
	rc=$?
	[ "$rc" = 1 ] && grep -q -- "$want" "$T/err" || fail "server --tls-cert $1 --tls-key $2: exit $rc, $(cat "$T/err")"
done
"$XP" server --data "$T/bad" --listen 127.0.0.1:0 --tls-cert "$T/lh.pem" >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" != 0 ] && grep -q -- "--tls-key: give --tls-cert and --tls-key together" "$T/err" || fail "--tls-cert alone: exit $rc, $(cat "$T/err")"

# --tls is dev's; with --tls-cert it is one or the other: exit 2, nothing written
"$XP" server --data "$T/bad2" --listen 127.0.0.1:0 --tls >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 2 ] && grep -q -- "--tls: xpool dev only" "$T/err" || fail "server --tls: exit $rc, $(cat "$T/err")"
"$XP" dev --data "$T/bad2" --listen 127.0.0.1:0 --tls --tls-cert "$T/lh.pem" --tls-key "$T/lh.key" --policy nope >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 2 ] && grep -q -- "--tls: it makes its own certificate" "$T/err" || fail "dev --tls --tls-cert: exit $rc, $(cat "$T/err")"
"$XP" dev --data "$T/bad2" --listen 127.0.0.1:0 --tls --policy nope >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 2 ] && [ ! -e "$T/bad2" ] || fail "dev --tls with a bad flag: exit $rc, wrote $(ls -R "$T/bad2" 2>&1)"

[ "$fails" = 0 ] || { echo "--- xpool dev said:"; cat "$T/dev.err"; exit 1; }
echo "cli_tls: all passed (agent node $NODE over TLS)"
