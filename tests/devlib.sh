# devlib.sh: shared by the cli_*.sh tests that drive a real `xpool dev`.
# Source it after setting XP (the binary); it sets T (a temp dir removed on
# exit), PID (the dev server, stopped by its PID on exit), and gives:
#   start_dev ARGS...   start `xpool dev --data $T/data --listen 127.0.0.1:0
#                       ARGS...`, wait until it answers, export XPOOL_ADDR
#                       and XPOOL_TOKEN (exits 1 when it does not come up)
#   stop_server         SIGTERM the dev server and wait for it
#   run VERB ARGS...    $T/out gets stdout, $T/err stderr, $rc the status
#   run_as TOKEN VERB.. the same with another token
#   expect STATUS WHAT  the last run exited with STATUS, else a failure
#   fail WHAT           count a failure; $fails is the count
T=$(mktemp -d)
PID=
fails=0
stop_server() {
	if [ -n "$PID" ]; then
		kill "$PID" 2>/dev/null
		wait "$PID" 2>/dev/null
		PID=
	fi
}
trap 'stop_server; rm -rf "$T"' EXIT
trap 'exit 1' INT TERM HUP
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
run() {
	"$XP" "$@" >"$T/out" 2>"$T/err"
	rc=$?
}
run_as() {
	tok=$1
	shift
	XPOOL_TOKEN=$tok "$XP" "$@" >"$T/out" 2>"$T/err"
	rc=$?
}
expect() {
	[ "$rc" = "$1" ] || fail "$2: exit $rc, want $1; stdout: $(head -c 400 "$T/out"); stderr: $(cat "$T/err")"
}
# a config of our own: nothing from the user running the tests leaks in
HOME=$T/home
export HOME
unset XPOOL_ADDR XPOOL_TOKEN

start_dev() {
	: >"$T/dev.out"
	"$XP" dev --data "$T/data" --listen 127.0.0.1:0 "$@" >"$T/dev.out" 2>"$T/dev.err" &
	PID=$!
	i=0
	while ! grep -q '^admin token:' "$T/dev.out" || ! grep -q '^address:' "$T/dev.out"; do
		if ! kill -0 "$PID" 2>/dev/null; then
			PID=
			echo "FAIL: xpool dev exited: $(cat "$T/dev.err")"
			exit 1
		fi
		i=$((i + 1))
		if [ "$i" -gt 300 ]; then
			echo "FAIL: xpool dev printed no address and admin token in 30 s"
			exit 1
		fi
		sleep 0.1
	done
	XPOOL_ADDR=$(sed -n 's/^address: *//p' "$T/dev.out" | head -n 1)
	XPOOL_TOKEN=$(sed -n 's/^admin token: *//p' "$T/dev.out" | head -n 1)
	export XPOOL_ADDR XPOOL_TOKEN
	# serving: wait until the store is replayed and queries answer
	i=0
	until "$XP" queues >/dev/null 2>&1; do
		i=$((i + 1))
		[ "$i" -le 300 ] || { echo "FAIL: the controller at $XPOOL_ADDR does not answer in 30 s"; exit 1; }
		sleep 0.1
	done
}
