#!/bin/sh
# cli_core_pure: ARCHITECTURE.md contract 1 - the core does no I/O, reads
# no clock, starts no thread and allocates through the util layer - and
# issue 19's pure state layer: src/core parses no documents, so it includes
# no YAML, no document tree and no descriptor code (src/descriptor; the
# parsers are at the edge, src/edge). Fails naming the file and line of any
# forbidden call or include under src/core.
#
# Not forbidden yet: <jansson.h>. Records and snapshots are still decoded
# and written as JSON inside src/core/state (apply.c, snapshot.c, state.c,
# service.c, meter.c, retention.c and the canonical writers of spec.c,
# svcspec.c, queuespec.c, prices.c); the record codec at the store boundary
# (docs/design/controller.md, "The pure state") is what takes it out. This
# test prints the files that still include it.
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
[ -z "$left" ] || echo "cli_core_pure: still including <jansson.h> (records as JSON; issue 19): $left"
