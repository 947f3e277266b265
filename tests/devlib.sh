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
#   until_ok SECS CMD.. run CMD until it succeeds: 0, or 1 when SECS of wall
#                       time passed first (a deadline, not a pace: a busy
#                       machine only makes it look more often)
#   agent_node          wait (60 s at most) until the local agent's node is
#                       ready; NODE gets its name (exits 1 when it is not)
#   wait_state JOB ST   until `xpool job JOB` is in state ST (60 s), else a failure
#   wait_line JOB RE    until `xpool job JOB` prints a line matching RE (60 s)
#   need_dev            exit 77 (skipped, saying why) when this xpool has no
#                       `dev` verb
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
need_dev() {
	"$XP" dev --help >/dev/null 2>&1 && return 0
	echo "SKIP: xpool dev not available"
	exit 77
}
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

until_ok() {
	secs=$1
	shift
	end=$(($(date +%s) + secs))
	until "$@"; do
		[ "$(date +%s)" -lt "$end" ] || return 1
		sleep 0.1
	done
}

agent_ready() {
	run nodes
	NODE=$(awk '$3 == "agent" && $2 == "ready" { print $1 }' "$T/out")
	[ -n "$NODE" ]
}
agent_node() {
	until_ok 60 agent_ready ||
		{ echo "FAIL: no agent node became ready in 60 s: $(cat "$T/out"); $(cat "$T/dev.err")"; exit 1; }
}

# job_matches JOB RE [FLAGS]: `xpool job JOB FLAGS` prints a line matching RE
job_matches() { "$XP" job "$1" ${3:-} 2>/dev/null | grep -q "$2"; }
wait_state() {
	until_ok 60 job_matches "$1" "\"state\": \"$2\"" "-o json" ||
		{ fail "job $1 did not become $2: $("$XP" job "$1" 2>&1)"; return 1; }
}
wait_line() {
	until_ok 60 job_matches "$1" "$2" ||
		{ fail "job $1: no line '$2' in 60 s: $("$XP" job "$1" 2>&1)"; return 1; }
}

# dev printed its address and token (exits 1 when it died instead)
dev_up() {
	if ! kill -0 "$PID" 2>/dev/null; then
		PID=
		echo "FAIL: xpool dev exited: $(cat "$T/dev.err")"
		exit 1
	fi
	grep -q '^admin token:' "$T/dev.out" && grep -q '^address:' "$T/dev.out"
}

start_dev() {
	: >"$T/dev.out"
	"$XP" dev --data "$T/data" --listen 127.0.0.1:0 "$@" >"$T/dev.out" 2>"$T/dev.err" &
	PID=$!
	until_ok 60 dev_up || {
		echo "FAIL: xpool dev printed no address and admin token in 60 s"
		exit 1
	}
	XPOOL_ADDR=$(sed -n 's/^address: *//p' "$T/dev.out" | head -n 1)
	XPOOL_TOKEN=$(sed -n 's/^admin token: *//p' "$T/dev.out" | head -n 1)
	case $XPOOL_TOKEN in # a restart names the file it is in
	"in "*) XPOOL_TOKEN=$(cat "${XPOOL_TOKEN#in }") ;;
	esac
	export XPOOL_ADDR XPOOL_TOKEN
	# serving: wait until the store is replayed and queries answer
	until_ok 60 "$XP" queues >/dev/null 2>&1 ||
		{ echo "FAIL: the controller at $XPOOL_ADDR does not answer in 60 s"; exit 1; }
}
