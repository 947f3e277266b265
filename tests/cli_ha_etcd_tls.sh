#!/bin/sh
# cli_ha_etcd_tls: the controllers' journal in an etcd that serves its
# clients over TLS (`--store etcds://... --etcd-ca FILE`), with a CA and
# certificate the test makes (xp-tls-certs). A leader and a follower come
# up and a submit is acknowledged and seen by the follower; a controller
# given another CA does not lead or follow, and says why (the certificate's
# verification) while it waits.
# usage: cli_ha_etcd_tls.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
XP=$1 SRC=$3
. "$SRC/tests/devlib.sh"
. "$SRC/tests/etcdlib.sh"
etcd_test_setup
ETCD_TLS=1
etcd_start 1 || exit 1
case $ETCD_URL in etcds://*) ;; *) echo "FAIL: not an etcds:// address: $ETCD_URL"; exit 1 ;; esac
CTL_EXTRA="--etcd-ca $T/etcd/ca.pem"
ha_pair tls || exit 1
XPOOL_ADDR="http://127.0.0.1:$PORT_A,http://127.0.0.1:$PORT_B"
export XPOOL_ADDR
"$XP" submit --cpu 1 --name over-tls -- true >"$T/sub.out" 2>&1 || fail "submit: $(cat "$T/sub.out")"
seen() { XPOOL_ADDR="http://127.0.0.1:$PORT_B" "$XP" jobs | grep -q over-tls; }
until_ok 30 seen || fail "the follower does not show the job"

# another CA: no lead, no follow, and the reason said
"$XP-tls-certs" ca "$T/other.pem" "$T/other.key" other-ca 2>/dev/null ||
	"$(dirname "$XP")/xp-tls-certs" ca "$T/other.pem" "$T/other.key" other-ca
CTL_EXTRA="--etcd-ca $T/other.pem"
ctl_refused "with the wrong CA" "verif\|not trusted\|issuer"
grep -q -- "--etcd-ca" "$T/C.err" || fail "the reason does not name --etcd-ca: $(cat "$T/C.err")"
[ $fails -eq 0 ] || exit 1
echo "ok"
