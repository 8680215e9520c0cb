#!/bin/sh
# check_layers.sh: fails when a module includes one it must not know. The
# layers, bottom to top (docs/ARCHITECTURE.md):
#
#   engine -> nn -> search, data -> selfplay, gtp, train -> match, serve -> loop -> cli
#
# A module may include itself and the modules its line below names; nn/cpu
# and nn/cuda are nn, train/cuda is train. tests/ and fuzz/ may include
# anything. Every `#include "x/..."` of every .c, .h and .cu file is
# checked, and each one that breaks the layering is printed as
# file:line: what.
#
#   sh scripts/check_layers.sh [ROOT]    ROOT: the repository (default)
set -eu
cd "${1:-$(dirname "$0")/..}"

allowed() {
	case "$1" in
	engine)   echo "engine" ;;
	nn)       echo "engine nn" ;;
	search)   echo "engine nn search" ;;
	data)     echo "engine nn data" ;;
	selfplay) echo "engine nn search data selfplay" ;;
	gtp)      echo "engine nn search data gtp" ;;
	train)    echo "engine nn data train" ;;
	match)    echo "engine nn search data selfplay gtp match" ;;
	serve)    echo "engine nn data serve" ;;
	loop)     echo "engine nn search data selfplay gtp train match serve loop" ;;
	cli)      echo "engine nn search data selfplay gtp train match serve loop cli" ;;
	esac
}

files=0
report=""
for m in engine nn search data selfplay gtp train match serve loop cli; do
	[ -d "$m" ] || continue
	ok=" $(allowed "$m") "
	for f in $(find "$m" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) | sort); do
		files=$((files + 1))
		# "line module" for every project include of the file
		incs=$(awk 'match($0, /^[ \t]*#[ \t]*include[ \t]*"[a-z_]+\//) {
			m = substr($0, RSTART, RLENGTH); sub(/.*"/, "", m); sub(/\/$/, "", m)
			print FNR, m }' "$f")
		[ -n "$incs" ] || continue
		while read -r line inc; do
			case "$ok" in
			*" $inc "*) ;;
			*) report="$report$f:$line: $m/ may not include $inc/
" ;;
			esac
		done <<-EOT
		$incs
		EOT
	done
done
if [ -n "$report" ]; then
	printf '%s' "$report"
	echo "check_layers: $(printf '%s' "$report" | wc -l) include(s) break the layering (see docs/ARCHITECTURE.md)" >&2
	exit 1
fi
echo "check_layers: $files files, every include within its layer"
