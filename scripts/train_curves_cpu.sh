#!/bin/sh
# The CPU learner's loss curve in fp32 and in bf16 on the same games: does
# bf16 training (sente train --precision bf16) track fp32?
#
# usage: scripts/train_curves_cpu.sh DB [STEPS] [-- sente train options]
#   DB     a run's sente.db (copied: the run is not touched)
#   STEPS  learner steps in each precision (default 1000)
#   the options after -- go to both `sente train` runs (default
#   "--game go --size 9 --blocks 4 --channels 48 --own-weight 1.5": the
#   network of a 9x9 `sente run`)
#
# Each precision trains a new network (seed 1) from the same games for
# STEPS steps, one JSON line per step, in a folder of its own. Prints one
# line per precision with its samples/s (median over the steps) and its mean
# loss over the last 100 steps, then the largest gap between the two curves'
# means over each 100 steps, and where it was. Run it on a quiet machine
# for the speeds; the losses do not depend on the load. With KEEP=DIR the
# curves' JSON lines are kept as DIR/fp32.jsonl and DIR/bf16.jsonl.
set -eu
BIN=${BIN:-bin/sente}
[ $# -ge 1 ] || { sed -n 4,10p "$0" >&2; exit 2; }
DB=$1
shift
STEPS=1000
if [ $# -ge 1 ] && [ "$1" != -- ]; then
	STEPS=$1
	shift
fi
[ $# -ge 1 ] && [ "$1" = -- ] && shift
[ $# -ge 1 ] || set -- --game go --size 9 --blocks 4 --channels 48 --own-weight 1.5
[ -x "$BIN" ] || { echo "train_curves_cpu: $BIN not built (make)" >&2; exit 2; }
[ -f "$DB" ] || { echo "train_curves_cpu: no database $DB" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for p in fp32 bf16; do
	mkdir -p "$dir/$p"
	cp "$DB" "$dir/$p/sente.db"
	if ! "$BIN" train --dir "$dir/$p" "$@" --precision "$p" --steps "$STEPS" \
		--export-steps "$STEPS" --seed 1 --json >"$dir/$p.jsonl" 2>"$dir/$p.err"; then
		echo "train_curves_cpu: $p failed:" >&2
		tail -n 3 "$dir/$p.err" >&2
		exit 1
	fi
	# Mean loss over each 100 steps, and the median samples/s.
	awk -F'"loss":' '/"step"/ { split($2, a, ","); w = int((NR - 1) / 100); m[w] += a[1]; c[w]++ }
		END { for (i = 0; i in m; i++) printf "%.5f\n", m[i] / c[i] }' "$dir/$p.jsonl" >"$dir/$p.win"
	sps=$(sed -n 's/.*"samples_per_s":\([0-9.]*\).*/\1/p' "$dir/$p.jsonl" | sort -n |
		awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : 0 }')
	echo "$p: $(grep -c '"step"' "$dir/$p.jsonl") steps, $sps samples/s (median), loss $(tail -n 1 "$dir/$p.win") over the last 100 ($(head -n 1 "$dir/$p.err"))"
done
if [ -n "${KEEP:-}" ]; then
	mkdir -p "$KEEP"
	cp "$dir/fp32.jsonl" "$dir/bf16.jsonl" "$KEEP/"
fi
paste "$dir/fp32.win" "$dir/bf16.win" | awk '{ d = $2 - $1; if (d < 0) d = -d; if (d > g) { g = d; at = NR } }
	END { printf "largest gap between the curves over 100 steps: %.4f (steps %d-%d)\n", g, 100 * (at - 1) + 1, 100 * at }'
