#!/bin/sh
# `make run-sim`: replay the OpenB default trace under the FGD paper's
# protocol with the six published policies and 10 seeds, and print ours
# beside the published results.
set -eu
BUILD=${1:-build}
OPENB=${XPOOL_OPENB:-../shared/traces/openb}
if [ ! -f "$OPENB/openb_node_list_gpu_node.csv" ]; then
	echo "make run-sim: the OpenB trace is not at $OPENB; set XPOOL_OPENB to its folder" >&2
	exit 1
fi
exec "$BUILD/xpool" sim openb --nodes "$OPENB/openb_node_list_gpu_node.csv" \
	--pods "$OPENB/openb_pod_list_default.csv" --policy paper --seeds 42-51 \
	--out out/run --published "$OPENB/fgd_expected_results"
