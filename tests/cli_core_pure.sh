#!/bin/sh
# cli_core_pure: ARCHITECTURE.md contract 1 - the core does no I/O, reads
# no clock, starts no thread and allocates through the util layer - and
# issue 19's pure state layer: src/core parses no documents, so it includes
# no YAML, no document tree and no descriptor code (src/descriptor; the
# parsers are at the edge, src/edge). Fails naming the file and line of any
# forbidden call or include under src/core.
#
# Not forbidden yet: <jansson.h>. Journal records are decoded and written
# by the record codec outside the core (src/edge/codec.c, records.c), but
# snapshots (snapshot.c and the services', meter's and elastic jobs' parts
# of them), the meter's reports and the canonical writers of specs,
# queues, services and prices (spec.c, svcspec.c, queuespec.c, prices.c)
# are still JSON inside src/core/state (docs/design/controller.md, "The
# pure state and the record codec"). This test prints the files that
# still include it.
# usage: cli_core_pure.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
SRC=$3/src/core
[ -d "$SRC" ] || { echo "cli_core_pure: no $SRC"; exit 1; }
pat='\b(fopen|fread|fwrite|fprintf|printf|puts|open|read|write|time|clock|clock_gettime|gettimeofday|pthread_[a-z_]+|malloc|calloc|realloc|rand|srand|random|getenv|exit|abort|system|popen|sleep|usleep)[[:space:]]*\('
hits=$(grep -rnE "$pat" "$SRC" --include='*.c' --include='*.h' | grep -vE '^\S+:[0-9]+:\s*(\*|/\*|//)')
if [ -n "$hits" ]; then
	echo "forbidden calls in the pure core (src/core):"
	echo "$hits"
	exit 1
fi
inc='^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^>"]*/)?(yaml\.h|descriptor/[^>"]*|descriptor\.h|tree\.h|json_tree\.h|yaml_tree\.h)[>"]'
hits=$(grep -rnE "$inc" "$SRC" --include='*.c' --include='*.h')
if [ -n "$hits" ]; then
	echo "forbidden includes in the pure core (src/core: no YAML, document tree or descriptor;"
	echo "documents are parsed at the edge, src/edge):"
	echo "$hits"
	exit 1
fi
left=$(grep -rlE '^[[:space:]]*#[[:space:]]*include[[:space:]]*<jansson\.h>' "$SRC" --include='*.c' --include='*.h' | sed "s|^$3/||" | sort | tr '\n' ' ')
echo "cli_core_pure: src/core makes no I/O, clock, thread or raw allocation calls, and includes no YAML, document tree or descriptor"
[ -z "$left" ] || echo "cli_core_pure: still including <jansson.h> (snapshots, reports and canonical writers as JSON; issue 19): $left"
