#!/bin/sh
# `make fuzz`: every parser harness of tests/fuzz under libFuzzer
# (docs/design/fuzzing.md).
#   1. configures build-fuzz/ with clang and XP_FUZZ (the libraries with
#      -fsanitize=fuzzer-no-link,address,undefined, the harnesses with
#      -fsanitize=fuzzer,address,undefined) and builds only the harnesses;
#   2. runs each for FUZZ_SECONDS (default 60) over its seed corpus
#      (tests/fuzz/corpus/NAME, read, never written) writing what it finds
#      to build-fuzz/new/NAME (emptied first) and any crash, leak, timeout
#      or out-of-memory input to build-fuzz/crashes/NAME/;
#   3. prints a table: harness, seconds, execs, execs/s, new corpus entries,
#      crashes; exits 1 if any harness crashed.
# FUZZ_ONLY="jobspec units" runs only those; FUZZ_CC picks the compiler
# (default clang-14, else clang). Logs: build-fuzz/log/NAME.log.
set -eu
cd "$(dirname "$0")/.."
SECS=${FUZZ_SECONDS:-60}
BUILD=${FUZZ_BUILD:-build-fuzz}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
CC=${FUZZ_CC:-$(command -v clang-14 || command -v clang || echo clang)}
CORPUS=tests/fuzz/corpus

mkdir -p "$BUILD/log"
echo "fuzz: building the harnesses with $CC into $BUILD/ (log: $BUILD/log/build.log)"
{ cmake -S . -B "$BUILD" -DCMAKE_C_COMPILER="$CC" -DXP_FUZZ=ON &&
	cmake --build "$BUILD" -j "$JOBS" --target fuzz_all; } >"$BUILD/log/build.log" 2>&1 ||
	{ tail -30 "$BUILD/log/build.log"; exit 1; }

names=${FUZZ_ONLY:-$(ls "$CORPUS")}
final_stat() { sed -n "s/^stat::$1: *//p" "$2" | tail -1; }
table="$BUILD/log/table.txt"
printf '%-12s %7s %12s %9s %5s %7s\n' harness seconds execs execs/s new crashes >"$table"
failed=0
for n in $names; do
	bin="$BUILD/tests/fuzz/fuzz_$n"
	[ -x "$bin" ] || { echo "fuzz: no harness fuzz_$n" >&2; exit 1; }
	rm -rf "$BUILD/new/$n"
	mkdir -p "$BUILD/new/$n" "$BUILD/crashes/$n"
	before=$(ls "$BUILD/crashes/$n" | wc -l)
	echo "fuzz: fuzz_$n for ${SECS} s"
	start=$(date +%s)
	rc=0
	"$bin" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$BUILD/crashes/$n/" "$BUILD/new/$n" "$CORPUS/$n" \
		>"$BUILD/log/$n.log" 2>&1 || rc=$?
	took=$(($(date +%s) - start))
	crashes=$(($(ls "$BUILD/crashes/$n" | wc -l) - before))
	if [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ]; then
		crashes=1 # died without leaving an input: the log says why
	fi
	[ "$crashes" -eq 0 ] || { failed=1; grep -m3 -E 'ERROR|fuzz: property|SUMMARY' "$BUILD/log/$n.log" >&2 || true; }
	printf '%-12s %7s %12s %9s %5s %7s\n' "$n" "$took" "$(final_stat number_of_executed_units "$BUILD/log/$n.log")" \
		"$(final_stat average_exec_per_sec "$BUILD/log/$n.log")" "$(ls "$BUILD/new/$n" | wc -l)" \
		"$crashes" >>"$table"
done
echo "== fuzz: $(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
cat "$table"
if [ "$failed" -ne 0 ]; then
	echo "fuzz: crashes: inputs in $BUILD/crashes/NAME/ (run: $BUILD/tests/fuzz/fuzz_NAME FILE)" >&2
	exit 1
fi
