#!/bin/sh
# cli_maps: every folder of src/ has a map that names each of its files
# (ARCHITECTURE.md: "a folder per layer ... each with a map of its files
# kept true"). The map is the folder's README.md or its headers (for
# src/core/*, also src/core/README.md): every .c file of the folder must be
# named there, and every `name.c` a README.md names must exist.
# usage: cli_maps.sh XPOOL SHARED_DIR SOURCE_DIR
set -u
SRC=$3
fails=0
for dir in $(find "$SRC/src" -name '*.c' -printf '%h\n' | sort -u); do
	maps="$dir/README.md $(ls "$dir"/*.h 2>/dev/null)"
	case "$dir" in */src/core/*) maps="$maps $SRC/src/core/README.md" ;; esac
	for f in "$dir"/*.c; do
		b=$(basename "$f")
		# shellcheck disable=SC2086
		if ! cat $maps 2>/dev/null | grep -q -F "$b"; then
			echo "FAIL: ${dir#$SRC/}/$b is named in no map of its folder (README.md or a header)"
			fails=$((fails + 1))
		fi
	done
done
for readme in $(find "$SRC/src" -name README.md); do
	dir=$(dirname "$readme")
	for name in $(grep -o '`[a-z_0-9][a-z_0-9]*\.c' "$readme" | tr -d '`' | sort -u); do
		if [ ! -f "$dir/$name" ] && ! find "$dir" -name "$name" | grep -q .; then
			echo "FAIL: ${readme#$SRC/} names $name, which does not exist"
			fails=$((fails + 1))
		fi
	done
done
[ "$fails" -eq 0 ] || exit 1
echo "cli_maps: every file of src/ is named in its folder's map"
