#!/bin/sh
# `make run`: the main job - a controller with emulated nodes (xpool dev)
# on a fresh data directory, serving on 127.0.0.1:7700 until interrupted.
# It prints the address and the admin token; from a second terminal:
#   export XPOOL_ADDR=127.0.0.1:7700 XPOOL_TOKEN=<the token>
#   build/xpool submit --gpus 2 --duration 1m -- python train.py
#   build/xpool jobs; build/xpool explain 1; build/xpool nodes
# The FGD reproduction the simulator runs is `make run-sim`.
set -eu
BUILD=${1:-build}
exec "$BUILD/xpool" dev --listen "${XPOOL_LISTEN:-127.0.0.1:7700}" \
	--cluster "${XPOOL_CLUSTER:-examples/clusters/mixed.yaml}"
