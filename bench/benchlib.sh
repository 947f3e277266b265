# bench/benchlib.sh: the setup the controller benchmarks share. Set BUILD
# and BENCH (the script's name, for messages and the temp folder's) and
# source it. TMP is then a fresh folder, removed on exit after the server
# (and whatever $BENCH_CLEANUP says) is stopped, and it gives:
#   bench_bins FILE...  copy $BUILD/FILE into $TMP for each; exit 1 naming a
#                       missing one (a bench must not rebuild under itself)
#   stop_server         SIGTERM $SERVER_PID and wait for it, then eval
#                       $BENCH_AFTER_STOP (e.g. remove the server's data)
TMP=$(mktemp -d "/tmp/xpool-bench-$BENCH.XXXXXX")
SERVER_PID=""
BENCH_CLEANUP=${BENCH_CLEANUP:-}
BENCH_AFTER_STOP=${BENCH_AFTER_STOP:-}

stop_server() {
	if [ -n "$SERVER_PID" ]; then
		kill -TERM "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
		SERVER_PID=""
	fi
	eval "${BENCH_AFTER_STOP:-:}"
}
bench_cleanup() {
	eval "${BENCH_CLEANUP:-:}"
	stop_server
	rm -rf "$TMP"
}
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

bench_bins() {
	for f; do
		[ -x "$BUILD/$f" ] || {
			echo "bench/$BENCH.sh: $BUILD/$f is missing: run make first" >&2
			exit 1
		}
		cp "$BUILD/$f" "$TMP/"
	done
}
