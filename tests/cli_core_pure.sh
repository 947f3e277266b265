#!/bin/sh
# cli_core_pure: ARCHITECTURE.md contract 1 - the core does no I/O, reads
# no clock, starts no thread and allocates through the util layer - and
# issue 19's pure state layer: src/core holds plain C structs and neither
# parses nor writes documents, so it includes no JSON (jansson), no YAML,
# no document tree and no descriptor code (src/descriptor). Journal
# records, snapshots, the canonical specs and the usage report are encoded
# and decoded at the edge (src/edge: codec.c, records.c, snapshot.c,
# canon.c, meter_report.c; docs/design/controller.md, "The pure state and
# the record codec"). Fails naming the file and line of any forbidden call
# or include under src/core.
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
inc='^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^>"]*/)?(jansson\.h|yaml\.h|descriptor/[^>"]*|descriptor\.h|tree\.h|json_tree\.h|yaml_tree\.h)[>"]'
hits=$(grep -rnE "$inc" "$SRC" --include='*.c' --include='*.h')
if [ -n "$hits" ]; then
	echo "forbidden includes in the pure core (src/core: no JSON, YAML, document tree or"
	echo "descriptor; documents are parsed and written at the edge, src/edge):"
	echo "$hits"
	exit 1
fi
echo "cli_core_pure: src/core makes no I/O, clock, thread or raw allocation calls, and includes no JSON, YAML, document tree or descriptor"
