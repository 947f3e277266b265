#!/bin/sh
# Soak the crash test: many SIGKILL rounds of 64 concurrent submitters
# against a real `xpool server` (tests/test_crash.c), default 50 rounds.
#   bench/soak_crash.sh [BUILD] [ROUNDS]
set -eu
BUILD=${1:-build}
XP_CRASH_ROUNDS=${2:-50} "$BUILD/tests/test_crash"
