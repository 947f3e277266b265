#!/bin/sh
# Regenerates the tables of docs/results/openb.md from a full run:
#   build/xpool sim openb --pods all --policy paper --seeds 42-51 --out out/openb
#   bench/openb_report.sh build/xpool out/openb > docs/results/openb-tables.md
set -eu
XP=${1:-build/xpool}
OURS=${2:-out/openb}
PUB=${XPOOL_OPENB:-../shared/traces/openb}/fgd_expected_results

echo "### Unallocated GPU % at 100% and 130% arrived, all 17 workloads x 6 policies"
echo
"$XP" sim compare --ours "$OURS" --published "$PUB" --format markdown --points 100,130
echo
echo "### Fragmentation ratio (% of idle GPU) on the default trace, by arrived %"
echo
"$XP" sim compare --ours "$OURS" --published "$PUB" --format markdown --series ratio \
	--points 0,50,70,90 | sed -n '1,2p;/^| default /p'
echo
echo "### Fragmentation amount (% of GPU capacity) on the default trace, by arrived %"
echo
"$XP" sim compare --ours "$OURS" --published "$PUB" --format markdown --series frag \
	--points 0,50,80,100 | sed -n '1,2p;/^| default /p'
echo
echo "### Gate summary over every series and point above"
echo
for s in "unalloc 100,130" "ratio 0,50,70,90" "frag 0,50,80,100"; do
	set -- $s
	"$XP" sim compare --ours "$OURS" --published "$PUB" --series "$1" --points "$2" |
		tail -1 | sed "s/^/- $1 at $2: /"
done
