#!/bin/sh
# cli_docs: the docs name what the code does (issue 19 part 9). Every
# journal record type that apply knows (src/core/state/apply.c: the typed
# records' names, rec_names, and the types still applied from JSON; and
# service.c for the service.* records it hands on) has a row
# in docs/design/controller.md's journal table, and every row names a type
# apply knows.
# usage: cli_docs.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
SRC=$3
fails=0
code=$(cat "$SRC/src/core/state/apply.c" "$SRC/src/core/state/service.c" | grep -oE '!strcmp\(type, "[a-z._]*"\)|\[XP_REC_[A-Z_]*\] = "[a-z._]*"' | sed 's/.*"\(.*\)".*/\1/' | sort -u)
doc=$(sed -n '/^## The journal/,/^## /p' "$SRC/docs/design/controller.md" | sed -n 's/^| `\([a-z._]*\)` |.*/\1/p' | sort -u)
[ -n "$code" ] || { echo "FAIL: no record types found in apply.c"; exit 1; }
for t in $code; do
	echo "$doc" | grep -qx "$t" || { echo "FAIL: record type $t has no row in controller.md's journal table"; fails=$((fails + 1)); }
done
for t in $doc; do
	echo "$code" | grep -qx "$t" || { echo "FAIL: controller.md's journal table names $t, which apply does not know"; fails=$((fails + 1)); }
done
[ "$fails" -eq 0 ] || exit 1
echo "cli_docs: $(echo "$code" | wc -l) record types, each in the journal table"
