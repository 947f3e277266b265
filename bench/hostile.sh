#!/bin/sh
# bench/hostile.sh BUILD: part 9 of `make bench` (issue 19). Runs
# tests/test_hostile (a controller on loopback under each hostile request,
# a reader through the owner every 10 ms) BENCH_RUNS (3) times and prints,
# per attack, the median (min..max) over the runs of the read's p99 during
# that attack, and the reads it had. The goal: under 100 ms.
set -eu
BUILD=${1:-build}
RUNS=${BENCH_RUNS:-3}
T=$(mktemp -d /tmp/xpool-bench-hostile.XXXXXX)
trap 'rm -rf "$T"' EXIT
[ -x "$BUILD/tests/test_hostile" ] || { echo "bench/hostile.sh: $BUILD/tests/test_hostile is missing: run make first" >&2; exit 1; }
i=1
while [ "$i" -le "$RUNS" ]; do
	"$BUILD/tests/test_hostile" >"$T/run$i.txt" 2>/dev/null || echo "   (run $i: test_hostile failed; its figures still count)"
	i=$((i + 1))
done
cat "$T"/run*.txt | sed -n 's/^read p99 during \(.*\): \(-*[0-9]*\) ms (\([0-9]*\) reads.*/\1|\2|\3/p' >"$T/all.txt"
cut -d'|' -f1 "$T/all.txt" | awk '!seen[$0]++' | while read -r attack; do
	# a run where the attack was over before one read finished has no p99
	grep -F "$attack|" "$T/all.txt" | cut -d'|' -f2 | grep -v '^-' | sort -n >"$T/p.txt" || true
	n=$(wc -l <"$T/p.txt")
	reads=$(grep -F "$attack|" "$T/all.txt" | cut -d'|' -f3 | tr '\n' ' ')
	if [ "$n" = 0 ]; then
		printf '   %-36s over before one read finished (reads per run: %s)\n' "$attack" "$reads"
		continue
	fi
	med=$(sed -n "$(((n + 1) / 2))p" "$T/p.txt")
	printf '   %-36s read p99 %s ms (%s..%s) over the %s runs with a read; reads per run: %s\n' \
		"$attack" "$med" "$(head -1 "$T/p.txt")" "$(tail -1 "$T/p.txt")" "$n" "$reads"
done
grep -h '^reads:' "$T"/run*.txt | sed 's/^/   whole run: /'
