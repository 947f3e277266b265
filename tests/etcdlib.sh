# etcdlib.sh: etcd members for the HA tests and benchmarks, on loopback
# ports, started and stopped by PID. Source after devlib.sh (T, until_ok).
#   etcd_start N         start an N-member cluster (1 or 3) in $T/etcd;
#                        ETCD_URL=etcd://127.0.0.1:P1,...; ETCD_PIDS; ETCD_CP
#                        (client ports) and ETCD_NAMES; returns 1 when it
#                        does not come up in 60 s
#   etcd_stop_member I   SIGKILL member I (0-based)
#   etcd_restart_member I  start member I again on its data
#   etcd_stop            stop every member
#   free_port            a TCP port nothing listens on (in $FREE_PORT)
#   ctl_start NAME PREFIX  start `$XP server` NAME: data $T/NAME, listening on
#                        $PORT_NAME, the store $ETCD_URL/PREFIX, a 2 s lease;
#                        CPID_NAME its pid; output in $T/NAME.out, .err
#   role_is PORT ROLE    the controller on PORT answers a read as ROLE
#                        (X-Xpool-Role: leader or follower; $XPOOL_TOKEN)
#   ctl_stop_all         SIGKILL every controller ctl_start started
#   ha_pair PREFIX       controllers A (the leader: it bootstraps the store;
#                        XPOOL_TOKEN exported from its admin.token) and B (a
#                        follower) on free ports PORT_A, PORT_B; says why and
#                        returns 1 when one does not come up in 60 s
#   etcd_test_setup      for a test script: exit 77 (skipped, saying why) when
#                        etcd is not installed; on exit, run $ETCD_TEST_CLEANUP
#                        (if set), stop the controllers and etcd, remove $T
# ETCD_EXTRA: more flags for the members started from then on. ETCD_TLS=1
# before etcd_start: the members serve clients over TLS with a certificate
# from a CA of the test's own ($T/etcd/ca.pem, made by xp-tls-certs beside
# $XP); ETCD_URL is then etcds://... ETCD_MTLS=1 as well: the members also
# ask every client for a certificate of that CA (--client-cert-auth).
# CTL_EXTRA: more flags for ctl_start.
etcd_bin=$(command -v etcd || echo /usr/bin/etcd)
ETCD_PIDS=
free_port() {
	FREE_PORT=$((10000 + ($$ * 7 + ${FREE_SEQ:-0} * 13) % 20000)) # below the ephemeral ports
	FREE_SEQ=$((${FREE_SEQ:-0} + 1))
	while curl -s -o /dev/null "http://127.0.0.1:$FREE_PORT/"; [ $? -ne 7 ]; do
		FREE_PORT=$((FREE_PORT + 1))
	done
}
etcd_member_cmd() { # I: start member I in the background
	i=$1
	set -- $ETCD_CP
	shift "$i"
	cp=$1
	set -- $ETCD_PP
	shift "$i"
	pp=$1
	"$etcd_bin" --logger zap --log-level error --name "m$i" --data-dir "$T/etcd/m$i" \
		--listen-client-urls "$ETCD_SCHEME://127.0.0.1:$cp" --advertise-client-urls "$ETCD_SCHEME://127.0.0.1:$cp" \
		$ETCD_TLS_FLAGS \
		--listen-peer-urls "http://127.0.0.1:$pp" --initial-advertise-peer-urls "http://127.0.0.1:$pp" \
		--initial-cluster "$ETCD_CLUSTER" --initial-cluster-state new \
		--experimental-enable-lease-checkpoint \
		--heartbeat-interval 50 --election-timeout 500 ${ETCD_EXTRA:-} \
		>>"$T/etcd/m$i.log" 2>&1 &
	eval "ETCD_PID_$i=$!"
}
etcd_healthy() {
	curl -s -m 2 ${ETCD_CURL_CA:-} "$ETCD_SCHEME://127.0.0.1:$1/health" | grep -q '"health":"true"'
}
etcd_all_healthy() {
	for p in $ETCD_CP; do etcd_healthy "$p" || return 1; done
}
ETCD_SCHEME=http ETCD_TLS_FLAGS= ETCD_CURL_CA=
etcd_start() {
	n=$1
	mkdir -p "$T/etcd"
	if [ "${ETCD_TLS:-0}" = 1 ]; then
		certs=$(dirname "$XP")/xp-tls-certs
		"$certs" ca "$T/etcd/ca.pem" "$T/etcd/ca.key" etcd-test-ca &&
			"$certs" cert "$T/etcd/ca.pem" "$T/etcd/ca.key" "$T/etcd/m.pem" "$T/etcd/m.key" \
				127.0.0.1 localhost || return 1
		ETCD_SCHEME=https
		ETCD_TLS_FLAGS="--cert-file $T/etcd/m.pem --key-file $T/etcd/m.key"
		ETCD_CURL_CA="--cacert $T/etcd/ca.pem"
		if [ "${ETCD_MTLS:-0}" = 1 ]; then
			ETCD_TLS_FLAGS="$ETCD_TLS_FLAGS --client-cert-auth --trusted-ca-file $T/etcd/ca.pem"
			ETCD_CURL_CA="$ETCD_CURL_CA --cert $T/etcd/m.pem --key $T/etcd/m.key"
		fi
	fi
	ETCD_CP= ETCD_PP= ETCD_CLUSTER= ETCD_URL=
	i=0
	while [ "$i" -lt "$n" ]; do
		free_port
		c=$FREE_PORT
		free_port
		p=$FREE_PORT
		ETCD_CP="$ETCD_CP $c"
		ETCD_PP="$ETCD_PP $p"
		ETCD_CLUSTER="${ETCD_CLUSTER:+$ETCD_CLUSTER,}m$i=http://127.0.0.1:$p"
		ETCD_URL="${ETCD_URL:+$ETCD_URL,}127.0.0.1:$c"
		i=$((i + 1))
	done
	ETCD_URL="etcd$([ "$ETCD_SCHEME" = https ] && echo s)://$ETCD_URL"
	ETCD_N=$n
	i=0
	while [ "$i" -lt "$n" ]; do
		etcd_member_cmd "$i"
		i=$((i + 1))
	done
	until_ok 60 etcd_all_healthy || {
		echo "etcd did not come up: $(tail -n 5 "$T"/etcd/*.log)"
		return 1
	}
}
etcd_pid() { eval "echo \${ETCD_PID_$1:-}"; }
etcd_stop_member() {
	p=$(etcd_pid "$1")
	[ -n "$p" ] && kill -9 "$p" 2>/dev/null && wait "$p" 2>/dev/null
	eval "ETCD_PID_$1="
}
etcd_restart_member() { etcd_member_cmd "$1"; }
etcd_stop() {
	i=0
	while [ "$i" -lt "${ETCD_N:-0}" ]; do
		p=$(etcd_pid "$i")
		[ -n "$p" ] && kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
		eval "ETCD_PID_$i="
		i=$((i + 1))
	done
}

CTL_NAMES=
ctl_start() {
	eval "port=\$PORT_$1"
	"$XP" server --data "$T/$1" --listen "127.0.0.1:$port" --store "$ETCD_URL/$2" \
		--lease 2s ${CTL_EXTRA:-} >>"$T/$1.out" 2>>"$T/$1.err" &
	eval "CPID_$1=$!"
	case " $CTL_NAMES " in *" $1 "*) ;; *) CTL_NAMES="$CTL_NAMES $1" ;; esac
}
role_is() {
	curl -s -m 5 -D - -o /dev/null -H "Authorization: Bearer $XPOOL_TOKEN" \
		"http://127.0.0.1:$1/v1/queues" | tr -d '\r' | grep -qi "^x-xpool-role: $2\$"
}
ctl_stop_all() {
	for n in $CTL_NAMES; do
		eval "p=\${CPID_$n:-}"
		[ -n "$p" ] && kill -9 "$p" 2>/dev/null && wait "$p" 2>/dev/null
		eval "CPID_$n="
	done
}
ha_pair() {
	free_port
	PORT_A=$FREE_PORT
	free_port
	PORT_B=$FREE_PORT
	ctl_start A "$1"
	until_ok 60 test -s "$T/A/admin.token" || { echo "FAIL: A did not lead: $(cat "$T/A.err")"; return 1; }
	XPOOL_TOKEN=$(cat "$T/A/admin.token")
	export XPOOL_TOKEN
	until_ok 60 role_is "$PORT_A" leader || { echo "FAIL: A does not lead: $(cat "$T/A.err")"; return 1; }
	ctl_start B "$1"
	until_ok 60 role_is "$PORT_B" follower || { echo "FAIL: B does not follow: $(cat "$T/B.err")"; return 1; }
}
etcd_test_setup() {
	if ! command -v etcd >/dev/null 2>&1 && [ ! -x /usr/bin/etcd ]; then
		echo "SKIP: etcd is not installed (scripts/deps.sh installs etcd-server)"
		exit 77
	fi
	trap 'eval "${ETCD_TEST_CLEANUP:-:}"; ctl_stop_all; etcd_stop; rm -rf "$T"' EXIT
}

# ctl_refused WHAT PATTERN: a controller C started with $CTL_EXTRA that etcd
# will not let in (WHAT: "with the wrong CA") neither leads nor follows, and
# says why in words matching PATTERN (grep -i) while it waits.
ctl_refused() {
	free_port
	PORT_C=$FREE_PORT
	ctl_start C refused
	REFUSED_WHY=$2
	said() { grep -qi "$REFUSED_WHY" "$T/C.err"; }
	until_ok 60 said || fail "a controller $1 did not say why: $(cat "$T/C.err")"
	role_is "$PORT_C" leader && fail "a controller $1 leads"
	role_is "$PORT_C" follower && fail "a controller $1 follows"
	echo "$1: $(grep -i -m 1 "$2" "$T/C.err")"
}

# ha_clients_setup: for a test that runs ha_submitter in the background
# (their pids in SUBS): they are stopped on exit; then etcd_test_setup.
ha_clients_setup() {
	SUBS=
	ETCD_TEST_CLEANUP='for p in $SUBS; do kill "$p" 2>/dev/null; done; for p in $SUBS; do wait "$p" 2>/dev/null; done'
	etcd_test_setup
}

# Clients with idempotency keys, for the failover tests. ha_submitter I
# submits keys cI-1, cI-2, ... through $ADDRS until $T/stop exists, each
# retried until acknowledged (or $T/stop2), appending "KEY ID" to $T/acked.
# ha_check_keys MIN: every acknowledged key still names its job, and there
# are exactly as many submitter jobs as keys (none lost, none doubled);
# sets keys, bad and jobs. probe: one submit through $ADDRS.
ha_submitter() {
	i=$1 j=0
	while [ ! -e "$T/stop" ]; do
		j=$((j + 1))
		until XPOOL_ADDR=$ADDRS "$XP" submit --cpu 1 --name "c$i" --idempotency-key "c$i-$j" \
			-- true >"$T/sub$i.out" 2>"$T/sub$i.err"; do
			[ -e "$T/stop2" ] && return
			sleep 0.05
		done
		id=$(sed -n 's/^job \([0-9]*\) .*/\1/p' "$T/sub$i.out")
		echo "c$i-$j $id" >>"$T/acked"
		sleep 0.05 # a steady trickle, not a flood: the check re-asks every key
	done
}
acked_at_least() { [ "$(wc -l <"$T/acked")" -ge "$1" ]; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
probe() { XPOOL_ADDR=$ADDRS "$XP" submit --cpu 1 --name probe -- true >/dev/null 2>&1; }
ha_check_keys() {
	keys=$(wc -l <"$T/acked")
	[ "$keys" -ge "$1" ] || fail "only $keys submits acknowledged"
	bad=0
	while read -r key id; do
		out=$(XPOOL_ADDR=$ADDRS "$XP" submit --cpu 1 --name "${key%-*}" --idempotency-key "$key" \
			-- true 2>&1)
		case $out in
		"job $id already submitted with this idempotency key"*) ;;
		*) bad=$((bad + 1)); [ $bad -le 3 ] && fail "key $key was acknowledged as job $id; now: $out" ;;
		esac
	done <"$T/acked"
	[ $bad -eq 0 ] || fail "$bad of $keys acknowledged keys lost or changed"
	count_jobs() { jobs=$(XPOOL_ADDR=$ADDRS "$XP" jobs --all --limit 1000 | awk 'NR > 1 && $2 ~ /^c[0-9]$/' | wc -l); }
	all_there() { count_jobs; [ "$jobs" -ge "$keys" ]; }
	until_ok 10 all_there # (a follower may answer the read, up to a poll behind)
	count_jobs
	[ "$jobs" -eq "$keys" ] || fail "$jobs submitter jobs for $keys acknowledged keys (lost or doubled)"
}
