#!/bin/sh
# cli_ha_etcd_mtls: etcd members that ask every client for a certificate
# (--client-cert-auth, the layout of docs/deploy.md). Two controllers that
# show one (`--etcd-cert/--etcd-key`, signed by the test's CA) lead and
# follow, and a submit is acknowledged and seen by the follower; a
# controller without a certificate neither leads nor follows, and says why
# while it waits. Flags that do not go together are refused at the start,
# naming the flag.
# usage: cli_ha_etcd_mtls.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
XP=$1 SRC=$3
. "$SRC/tests/devlib.sh"
. "$SRC/tests/etcdlib.sh"
etcd_test_setup
ETCD_TLS=1 ETCD_MTLS=1
etcd_start 1 || exit 1
certs=$(dirname "$XP")/xp-tls-certs
"$certs" cert "$T/etcd/ca.pem" "$T/etcd/ca.key" "$T/c.pem" "$T/c.key" xpool-controller ||
	fail "cannot make the controllers' certificate"

# refused at the start, naming the flag
refused() { # WANT FLAGS...
	want=$1
	shift
	if "$XP" server --data "$T/r" --listen 127.0.0.1:1 "$@" >"$T/r.out" 2>&1; then
		fail "accepted: $*"
	elif ! grep -q -- "$want" "$T/r.out"; then
		fail "$*: the error does not name $want: $(cat "$T/r.out")"
	fi
}
refused "--etcd-cert and --etcd-key" --store "$ETCD_URL" --etcd-ca "$T/etcd/ca.pem" --etcd-cert "$T/c.pem"
refused "--etcd-cert goes with --store etcds://" --store "etcd://127.0.0.1:1" --etcd-cert "$T/c.pem" --etcd-key "$T/c.key"
refused "client key" --store "$ETCD_URL" --etcd-ca "$T/etcd/ca.pem" --etcd-cert "$T/c.pem" --etcd-key "$T/nothing.key"

CTL_EXTRA="--etcd-ca $T/etcd/ca.pem --etcd-cert $T/c.pem --etcd-key $T/c.key"
ha_pair mtls || exit 1
XPOOL_ADDR="http://127.0.0.1:$PORT_A,http://127.0.0.1:$PORT_B"
export XPOOL_ADDR
"$XP" submit --cpu 1 --name over-mtls -- true >"$T/sub.out" 2>&1 || fail "submit: $(cat "$T/sub.out")"
seen() { XPOOL_ADDR="http://127.0.0.1:$PORT_B" "$XP" jobs | grep -q over-mtls; }
until_ok 30 seen || fail "the follower does not show the job"

# no client certificate: etcd refuses the handshake; no lead, no follow, the reason said
CTL_EXTRA="--etcd-ca $T/etcd/ca.pem"
ctl_refused "without a certificate" "tls\|certificate\|handshake"
[ $fails -eq 0 ] || exit 1
echo "ok"
