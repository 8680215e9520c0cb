#!/bin/sh
# Search speed of sente against Leela Zero on the same weights and machine.
#
# usage: scripts/bench_vs_lz.sh [SHAPES] [VISITS]
#   SHAPES  blocks x channels list (default "6x64 10x128")
#   VISITS  per search (default 3200)
#
# Makes a random Leela Zero v1 network of each shape (scripts/
# lz_random_weights.py: the arithmetic, not the strength, decides the
# speed), then runs, one after the other on 2 threads from the empty 19x19
# board: `leelaz --cpu-only --benchmark -t 2 -v VISITS` and `sente bench
# search -w FILE -v VISITS -t 2` in fp32 and int8. Prints one JSON line
# per shape with both playouts/s and their ratios. Run it on a quiet
# machine: the figures are only comparable when nothing else runs.
set -eu
BIN=${BIN:-bin/sente}
SHAPES=${1:-"6x64 10x128"}
VISITS=${2:-3200}
LZ=$(command -v leelaz 2>/dev/null || echo /usr/games/leelaz)
[ -x "$LZ" ] || { echo "bench_vs_lz: leelaz not found (apt-get install leela-zero)" >&2; exit 2; }
[ -x "$BIN" ] || { echo "bench_vs_lz: $BIN not built (make)" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for shape in $SHAPES; do
	b=${shape%x*}
	c=${shape#*x}
	w=$dir/lz-$shape.txt.gz
	python3 scripts/lz_random_weights.py "$b" "$c" 1 "$w"
	lz=$("$LZ" --cpu-only -w "$w" --benchmark -t 2 -v "$VISITS" 2>&1 |
		sed -n 's/.* \([0-9][0-9]*\) n\/s$/\1/p' | tail -n 1)
	s32=$("$BIN" bench search -w "$w" -v "$VISITS" -t 2 --repeat 2 |
		sed -n 's/.*"playouts_per_s":\([0-9.]*\).*/\1/p' | tail -n 1)
	s8=$("$BIN" bench search -w "$w" -v "$VISITS" -t 2 --repeat 2 --precision int8 |
		sed -n 's/.*"playouts_per_s":\([0-9.]*\).*/\1/p' | tail -n 1)
	awk -v s="$shape" -v v="$VISITS" -v lz="${lz:-0}" -v a="${s32:-0}" -v i="${s8:-0}" 'BEGIN {
		printf "{\"bench\":\"vs_leelaz\",\"net\":\"%s\",\"visits\":%d,\"leelaz_playouts_per_s\":%s,", s, v, lz
		printf "\"sente_fp32_playouts_per_s\":%s,\"sente_int8_playouts_per_s\":%s,", a, i
		printf "\"ratio_fp32\":%.2f,\"ratio_int8\":%.2f}\n", (lz > 0 ? a / lz : 0), (lz > 0 ? i / lz : 0)
	}'
done
