#!/bin/sh
# cli_core_pure: ARCHITECTURE.md contract 1 - the core does no I/O, reads
# no clock, starts no thread and allocates through the util layer. Fails
# naming the file and line of any forbidden call under src/core.
# usage: cli_core_pure.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
SRC=$3/src/core
pat='\b(fopen|fread|fwrite|fprintf|printf|puts|open|read|write|time|clock|clock_gettime|gettimeofday|pthread_[a-z_]+|malloc|calloc|realloc|rand|srand|random|getenv|exit|abort|system|popen|sleep|usleep)[[:space:]]*\('
hits=$(grep -rnE "$pat" "$SRC" --include='*.c' --include='*.h' | grep -vE '^\S+:[0-9]+:\s*(\*|/\*|//)')
if [ -n "$hits" ]; then
	echo "forbidden calls in the pure core (src/core):"
	echo "$hits"
	exit 1
fi
echo "cli_core_pure: src/core makes no I/O, clock, thread or raw allocation calls"
